"""Recognising a JSON text by its skeleton never accepts a text the parser would store otherwise."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from llmcassette.format import jsontext
from llmcassette.format.skeleton import Skeletons

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, database=None)

CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1764547200,
    "choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}],
}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def spaced(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def with_content(content: str) -> dict[str, Any]:
    return {**CHUNK, "choices": [{**CHUNK["choices"][0], "delta": {"content": content}}]}


def learnt(text: str, layout: str = "compact") -> Skeletons:
    skeletons = Skeletons(root=("data",))
    assert skeletons.learn(text, json.loads(text), layout) is not None
    return skeletons


def test_a_text_of_a_learnt_shape_gives_its_strings_and_their_paths() -> None:
    skeletons = learnt(compact(CHUNK))
    match = skeletons.match(compact(with_content(" world")))
    assert match is not None
    skeleton, values = match
    assert list(values) == ["chatcmpl-1", "chat.completion.chunk", " world"]
    assert skeleton.paths == (
        ("data", "id"),
        ("data", "object"),
        ("data", "choices", 0, "delta", "content"),
    )
    assert skeleton.layout == "compact"
    assert skeleton.outline == compact(
        {"id": "", "object": "", "created": 1764547200, "choices": [with_content("")["choices"][0]]}
    )


def test_escaped_strings_are_decoded_when_spelled_as_the_encoder_spells_them() -> None:
    skeletons = learnt(compact(CHUNK))
    for content in ['say "hi"', "a\\b", "line\nbreak", "tab\t\x01", "end\\", '"', "é😀"]:
        match = skeletons.match(compact(with_content(content)))
        assert match is not None, content
        assert match[1][-1] == content


def test_other_spellings_are_not_recognised() -> None:
    skeletons = learnt(compact(CHUNK))
    base = compact(with_content("X"))
    for spelling in ["\\u0041", "\\/", "\\u00e9", "\\ud83d\\ude00"]:  # valid JSON, other bytes
        assert skeletons.match(base.replace("X", spelling)) is None, spelling
    for raw in ["\x00", "\x1f", "\u2028", "\x85"]:  # not JSON, or escaped in a cassette line
        assert skeletons.match(base.replace("X", raw)) is None, repr(raw)


def test_other_keys_numbers_or_spacing_are_other_shapes() -> None:
    skeletons = learnt(compact(CHUNK))
    assert skeletons.match(compact({**CHUNK, "created": 1764547201})) is None
    assert skeletons.match(compact(CHUNK).replace('"content"', '"refusal"')) is None
    assert skeletons.match(spaced(CHUNK)) is None
    assert skeletons.match(compact(CHUNK) + " ") is None
    assert skeletons.match('"a string"') is None


def test_a_value_that_is_not_the_text_is_not_learnt() -> None:
    skeletons = Skeletons()
    assert skeletons.learn(compact(CHUNK), with_content("other"), "compact") is None
    assert skeletons.learn(compact(CHUNK), {"id": "chatcmpl-1"}, "compact") is None
    assert skeletons.match(compact(CHUNK)) is None


def test_a_spaced_skeleton_recognises_spaced_kin() -> None:
    skeletons = learnt(spaced(CHUNK), "spaced")
    match = skeletons.match(spaced(with_content("next")))
    assert match is not None
    assert match[0].layout == "spaced"
    assert match[1][-1] == "next"


# ------------------------------------------------------------------ property

strings = st.lists(
    st.sampled_from(["a", " ", "é", "😀", '"', "\\", "/", "\n", "\t", "\x01", "\x7f", ":", ","])
    | st.sampled_from(["{", "}", "[", "]", "\u2028", "\x85", "\ufeff", "\\u0041", '\\"', "sk-"]),
    max_size=6,
).map("".join)
scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(0, 2) | strings
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=8,
)
containers = st.lists(values, max_size=3) | st.dictionaries(strings, values, max_size=3)


def respell(value: Any, replacements: list[str]) -> Any:
    """``value`` with its string values (not keys) replaced, in order, by ``replacements``."""
    if isinstance(value, str):
        return replacements.pop() if replacements else value
    if isinstance(value, list):
        return [respell(item, replacements) for item in value]
    if isinstance(value, dict):
        return {key: respell(item, replacements) for key, item in value.items()}
    return value


def leaves(value: Any, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in leaves(item, (*path, i))]
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in leaves(item, (*path, key))]
    return []


@SETTINGS
@given(
    template=containers,
    replacements=st.lists(strings, max_size=8),
    layout=st.sampled_from(["compact", "spaced"]),
    edit=st.none() | st.tuples(st.integers(0, 400), st.sampled_from(["", " ", '"', "\\", "1"])),
)
def test_a_recognised_text_is_what_the_parser_stores_it_as(
    template: Any, replacements: list[str], layout: str, edit: tuple[int, str] | None
) -> None:
    render = compact if layout == "compact" else spaced
    first = render(template)
    skeletons = Skeletons()
    exact = jsontext.parse_exact(first)
    if exact is None or exact[1] != layout:
        return  # the writer only learns from texts the parser stores in this layout
    skeletons.learn(first, exact[0], layout)
    text = render(respell(template, list(replacements)))
    if edit is not None:  # a damaged or re-spelled text: recognised only if still exact
        at, insert = edit
        at %= len(text) + 1
        text = text[:at] + insert + text[at + 1 :]
    match = skeletons.match(text)
    event("recognised" if match is not None else "not recognised")
    if match is None:
        return
    skeleton, values = match
    assert jsontext.parse_exact(text) == (json.loads(text), skeleton.layout)
    found = leaves(json.loads(text), ())
    assert list(values) == [string for _, string in found]
    assert list(skeleton.paths) == [path for path, _ in found]
