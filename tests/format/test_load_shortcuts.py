"""The faster paths that loading a cassette takes give what the plain ones give."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette import jsontext
from llmcassette.cassette.jsontext import MAX_BODY_DEPTH

# Bytes made mostly of newlines and a few others, so that empty lines, runs of newlines
# and newlines at either end all come up.
_LINES_BYTES = st.lists(st.sampled_from([b"\n", b"\n\n", b"a", b"{}", b"\r", b"\xff", b" "])).map(
    b"".join
)


@given(data=_LINES_BYTES | st.binary())
def test_cut_at_newlines_is_split(data: bytes) -> None:
    assert cassette_file.cut_at_newlines(data) == data.split(b"\n")


def test_cut_at_newlines_edges() -> None:
    for data in (b"", b"\n", b"\n\n", b"a", b"a\n", b"\na", b"a\n\nb\n", b"a\r\nb"):
        assert cassette_file.cut_at_newlines(data) == data.split(b"\n"), data


def _depth(value: object) -> int:
    """How deep arrays and objects nest in ``value``, plainly (recursion: the values here
    are small)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3)
    ),
    max_leaves=40,
)


@given(
    value=_JSON,
    limit=st.integers(0, 8),
    padding=st.sampled_from([0, 1, 200, 5000]),
    as_bytes=st.booleans(),
)
def test_nests_too_deep_is_the_plain_depth(
    value: object, limit: int, padding: int, as_bytes: bool
) -> None:
    # The padding (a long string, as a prompt or an image is) decides whether the value
    # is walked or its openings counted first; either way the answer is the depth's.
    text = json.dumps([value, "x" * padding])
    assert jsontext.nests_too_deep(
        text.encode() if as_bytes else text, json.loads(text), limit + 1
    ) == (_depth(json.loads(text)) > limit + 1)


def test_nests_too_deep_at_the_body_limit() -> None:
    for depth, padding in itertools.product((99, 100, 101, 102), (0, 10_000, 1_000_000)):
        text = "[" * depth + json.dumps("x" * padding) + "]" * depth
        assert jsontext.nests_too_deep(text, json.loads(text)) == (depth > MAX_BODY_DEPTH)
