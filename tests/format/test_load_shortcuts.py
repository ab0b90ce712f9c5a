"""The faster paths that loading a cassette takes give what the plain ones give."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from llmcassette.cassette import jsonl as cassette_file

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
