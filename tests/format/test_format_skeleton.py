"""Recognising a JSON text by its skeleton never accepts a text the parser would store otherwise."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from llmcassette.cassette import jsontext
from llmcassette.cassette.skeleton import OneValueApart, Skeletons, safe_text

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


def test_events_one_value_apart_are_recognised_from_the_last_one() -> None:
    skeletons = learnt(compact(CHUNK))
    first, second = compact(with_content("Hel")), compact(with_content("lo"))
    before, now = skeletons.match(first), skeletons.match(second)
    assert before is not None
    assert now is not None
    template = OneValueApart.of(second, now, before[1])
    assert template is not None
    for content in (" world", "", "é 😀 {}[]:,", "sk-"):
        found, reference = (t.match(compact(with_content(content))) for t in (template, skeletons))
        assert found is not None
        assert reference is not None
        assert found[0] is reference[0]
        assert list(found[1]) == list(reference[1])


def test_a_text_one_value_apart_but_escaped_or_otherwise_changed_is_left_to_the_cut() -> None:
    skeletons = learnt(compact(CHUNK))
    second = compact(with_content("lo"))
    now = skeletons.match(second)
    assert now is not None
    template = OneValueApart.of(second, now, ["chatcmpl-1", "chat.completion.chunk", "Hel"])
    assert template is not None
    assert template.match(compact(with_content('say "hi"'))) is None  # an escaped quote
    assert template.match(compact(with_content("a\\b"))) is None  # an escaped backslash
    assert template.match(compact({**with_content("x"), "id": "chatcmpl-2"})) is None
    assert template.match(compact(with_content("x")).replace(":0,", ":1,")) is None
    # Shorter than what comes before and after the value: the two would overlap.
    prefix = second[: second.index('"lo"') + 1]
    assert template.match(prefix + second[len(prefix) + 2 :][1:]) is None


def test_no_template_when_no_value_or_several_values_changed() -> None:
    skeletons = learnt(compact(CHUNK))
    text = compact(with_content("lo"))
    match = skeletons.match(text)
    assert match is not None
    assert OneValueApart.of(text, match, match[1]) is None
    assert OneValueApart.of(text, match, ["chatcmpl-0", "chat.completion.chunk", "Hel"]) is None


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


plain = st.lists(
    st.sampled_from(["a", " ", "é", "😀", "/", "\x7f", ":", ",", "{", "sk-"]), max_size=4
)
# Mostly strings spelled as they are, some escaped (a quote, a backslash, "\n").
mostly_plain = plain.map("".join) | st.sampled_from(['say "hi"', "a\\b", "x\ny"])
shapes = st.recursive(
    st.none() | st.integers(-5, 5) | mostly_plain,
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(mostly_plain, inner, min_size=1, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=1000, derandomize=True, deadline=None, database=None)
@given(
    template=shapes,
    changed=st.integers(0, 7),
    before=plain.map("".join),
    now=plain.map("".join),
    later=strings,
    edit=st.none() | st.tuples(st.integers(0, 400), st.sampled_from(["", " ", '"', "\\", "1"])),
)
def test_a_text_recognised_one_value_apart_is_what_the_cut_recognises(
    template: Any, changed: int, before: str, now: str, later: str, edit: tuple[int, str] | None
) -> None:
    """Whatever the template recognises, ``Skeletons.match`` recognises alike (and that is
    exact, by the property above)."""
    text = compact(template)
    exact = jsontext.parse_exact(text)
    count = len(leaves(template, ()))
    if exact is None or exact[1] != "compact" or count == 0:
        return
    skeletons = Skeletons()
    skeletons.learn(text, exact[0], "compact")
    originals = [string for _, string in leaves(template, ())]

    def with_value(value: str) -> str:
        replacements = list(originals)
        replacements[changed % count] = value
        return compact(respell(template, list(reversed(replacements))))

    before_match, now_match = skeletons.match(with_value(before)), skeletons.match(with_value(now))
    if before_match is None or now_match is None:
        return  # a text the writer would not match (an unsafe or re-spelled string)
    found = OneValueApart.of(with_value(now), now_match, before_match[1])
    assert (found is None) == (before == now)
    if found is None:
        return
    text = with_value(later)
    if edit is not None:
        at, insert = edit
        at %= len(text) + 1
        text = text[:at] + insert + text[at + 1 :]
    if not safe_text(text):
        return  # the writer asks only about texts it checked for these characters
    match = found.match(text)
    event("recognised" if match is not None else "not recognised")
    if match is not None:
        reference = skeletons.match(text)
        assert reference is not None
        assert match[0] is reference[0]
        assert list(match[1]) == list(reference[1])
    elif edit is None and compact(later) == f'"{later}"':  # spelled as it is
        raise AssertionError("a text one plain value apart was not recognised")
