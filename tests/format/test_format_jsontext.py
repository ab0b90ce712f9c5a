"""``jsontext.parse_exact`` / ``render``: JSON is structured only when the exact text comes back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.cassette import jsontext

SETTINGS = settings(max_examples=200, derandomize=True, deadline=None, database=None)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
json_containers = st.lists(json_values, max_size=4) | st.dictionaries(
    st.text(), json_values, max_size=4
)

# Every way a JSON body commonly looks on the wire, as json.dumps keyword arguments + suffix.
DUMPS_LAYOUTS: list[tuple[dict[str, Any], str]] = [
    ({"separators": (",", ":")}, ""),
    ({"separators": (",", ":"), "ensure_ascii": False}, ""),
    ({}, ""),
    ({"ensure_ascii": False}, ""),
    ({"indent": 2}, ""),
    ({"indent": 2, "ensure_ascii": False}, ""),
    ({"indent": 2}, "\n"),
    ({"indent": 2, "ensure_ascii": False}, "\n"),
    ({"indent": 4}, ""),
    ({"indent": 4, "ensure_ascii": False}, "\n"),
    ({"indent": 1}, ""),
    ({"indent": 8}, "\n"),
    ({"separators": (",", ":"), "ensure_ascii": False}, "\n"),
    ({}, "\n"),
    ({"ensure_ascii": False}, "\n"),
]


@SETTINGS
@given(value=json_containers, layout=st.sampled_from(DUMPS_LAYOUTS))
def test_common_layouts_are_structured_and_render_back(
    value: Any, layout: tuple[dict[str, Any], str]
) -> None:
    kwargs, suffix = layout
    text = json.dumps(value, **kwargs) + suffix
    parsed = jsontext.parse_exact(text)
    assert parsed is not None, text
    stored, name = parsed
    assert stored == value
    assert jsontext.render(stored, name) == text


@SETTINGS
@given(value=json_containers, layout=st.sampled_from(DUMPS_LAYOUTS))
def test_the_layout_named_is_compact_whenever_compact_rebuilds_the_text(
    value: Any, layout: tuple[dict[str, Any], str]
) -> None:
    # parse_exact renders only the layouts the text's shape allows (a spaced object is not
    # rendered compact first): it names the layout it named when it tried compact first.
    kwargs, suffix = layout
    text = json.dumps(value, **kwargs) + suffix
    parsed = jsontext.parse_exact(text)
    assert parsed is not None
    if jsontext.render(value) == text:
        assert parsed[1] == jsontext.DEFAULT_LAYOUT
    else:
        assert parsed[1] == next(
            n for n in jsontext._candidates(text) if jsontext.render(value, n) == text
        )


@SETTINGS
@given(text=st.text())
def test_parse_exact_never_lies(text: str) -> None:
    parsed = jsontext.parse_exact(text)
    if parsed is not None:
        assert jsontext.render(*parsed) == text


@SETTINGS
@given(
    value=json_containers,
    kwargs=st.fixed_dictionaries(
        {},
        optional={
            "indent": st.sampled_from([None, 0, 1, 2, 4, "\t"]),
            "sort_keys": st.booleans(),
            "ensure_ascii": st.booleans(),
            "separators": st.sampled_from([(",", ":"), (", ", ": "), (",", ": "), (" , ", " : ")]),
        },
    ),
    prefix=st.sampled_from(["", " ", "\n", "\ufeff"]),
    suffix=st.sampled_from(["", "\n", "\r\n", " ", "\n\n"]),
)
def test_any_dumps_output_is_either_exact_or_refused(
    value: Any, kwargs: dict[str, Any], prefix: str, suffix: str
) -> None:
    text = prefix + json.dumps(value, **kwargs) + suffix
    parsed = jsontext.parse_exact(text)
    if parsed is not None:
        assert jsontext.render(*parsed) == text


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1.0e5}',  # exponent spelled differently from repr(float)
        '{"a":1E5}',
        '{"a":1.50}',
        '{"a":-0}',  # parses to 0
        '{"a":1,"a":2}',  # duplicate keys
        '{"a": 1,"b":2}',  # mixed separators
        '{ "a":1}',
        ' {"a":1}',  # leading whitespace
        '{"a":1} ',  # trailing whitespace
        '{"a":1}\r\n',  # CRLF ending
        '{"a":1}\n\n',
        '{"a":"\\u00e9"}\n ',
        '{"a":"\\/"}',  # escaped slash
        '{"a":"\\u0041"}',  # needless escape
        '{"a":"\\ud83d\\ude00"}',  # escaped pair, mixed with raw text below
        '{"a":"é\\u00e9"}',
        '{"a":1e400}',  # overflows to inf
        "[1,2,\n3]",
        '{\n\t"a": 1\n}',  # tab indent is not a known layout
        '{\n          "a": 1\n}',  # nor is an indent of 10
        '{\n  "a": 1\n  }',  # uneven indent
    ],
)
def test_non_round_trippable_json_is_refused_or_exact(text: str) -> None:
    parsed = jsontext.parse_exact(text)
    if parsed is not None:
        assert jsontext.render(*parsed) == text
    # These specific texts cannot be rebuilt by any known layout.
    if text not in ('{"a":"\\ud83d\\ude00"}',):
        assert parsed is None


def test_escaped_surrogate_pair_uses_ascii_layout() -> None:
    parsed = jsontext.parse_exact('{"a":"\\ud83d\\ude00"}')
    assert parsed == ({"a": "\U0001f600"}, "compact+ascii")


@pytest.mark.parametrize("text", ["NaN", "[NaN]", '{"a":Infinity}', "[-Infinity]", '{"a":[1,NaN]}'])
def test_nan_and_infinity_are_never_structured(text: str) -> None:
    assert jsontext.parse_exact(text) is None
    with pytest.raises(ValueError, match=r"Infinity|NaN"):
        jsontext.loads_strict(text)


@pytest.mark.parametrize("text", ["1", "1e5", "true", "null", "-3", "", "   ", "{", "[1,", "a"])
def test_scalars_and_non_json_are_not_structured(text: str) -> None:
    assert jsontext.parse_exact(text) is None


def test_top_level_string_is_structured() -> None:
    assert jsontext.parse_exact('"hi"') == ("hi", "compact")
    assert jsontext.parse_exact('"\\ud800"') == ("\ud800", "compact+ascii")


@pytest.mark.parametrize(
    ("value", "layout", "expected"),
    [
        ({"a": [1, "é"]}, "compact", '{"a":[1,"é"]}'),
        ({"a": [1, "é"]}, "compact+ascii", '{"a":[1,"\\u00e9"]}'),
        ({"a": [1, "é"]}, "spaced", '{"a": [1, "é"]}'),
        ({"a": [1, "é"]}, "spaced+ascii+nl", '{"a": [1, "\\u00e9"]}\n'),
        ({"a": 1}, "indent2", '{\n  "a": 1\n}'),
        ({"a": 1}, "indent2+nl", '{\n  "a": 1\n}\n'),
        ({"a": 1}, "compact+nl", '{"a":1}\n'),
        ({"a": [1]}, "indent4", '{\n    "a": [\n        1\n    ]\n}'),
        ({"a": "é"}, "indent3+ascii+nl", '{\n   "a": "\\u00e9"\n}\n'),
    ],
)
def test_render_layouts(value: Any, layout: str, expected: str) -> None:
    assert jsontext.render(value, layout) == expected
    assert jsontext.parse_exact(expected) == (value, layout)


def test_render_defaults_to_compact() -> None:
    assert jsontext.render({"a": [1, 2]}) == '{"a":[1,2]}'


@pytest.mark.parametrize(
    "layout", ["pretty", "compact+bogus", "indent0", "indent9", "indentx", "indent", "", "+ascii"]
)
def test_unknown_layout_is_an_error(layout: str) -> None:
    with pytest.raises(ValueError, match="unknown JSON layout"):
        jsontext.render({}, layout)


def test_empty_containers() -> None:
    for text in ("{}", "[]", "{}\n", "[]\n"):
        parsed = jsontext.parse_exact(text)
        assert parsed is not None
        assert jsontext.render(*parsed) == text


def test_first_matching_layout_is_the_simplest() -> None:
    # ASCII-only compact text matches both "compact" and "compact+ascii": compact is stored.
    assert jsontext.parse_exact('{"a":1}') == ({"a": 1}, "compact")
    assert jsontext.parse_exact('{"a": 1}') == ({"a": 1}, "spaced")


@SETTINGS
@given(
    value=json_values,
    separators=st.sampled_from([(",", ":"), (", ", ": ")]),
    ensure_ascii=st.booleans(),
)
def test_reusable_encoder_writes_what_json_dumps_writes(
    value: Any, separators: tuple[str, str], ensure_ascii: bool
) -> None:
    encode = jsontext.encoder(*separators, ensure_ascii=ensure_ascii, allow_nan=False)
    expected = json.dumps(value, separators=separators, ensure_ascii=ensure_ascii)
    assert encode(value) == expected
    assert encode(value) == expected  # the encoder keeps no state between values


def test_reusable_encoder_refuses_nan_when_asked() -> None:
    encode = jsontext.encoder(", ", ": ", ensure_ascii=False, allow_nan=False)
    with pytest.raises(ValueError, match="not JSON compliant"):
        encode({"a": float("nan")})
