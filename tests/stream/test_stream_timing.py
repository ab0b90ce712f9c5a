"""``event_times``: each event gets the arrival time of the chunk that completed it."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.transport.timing import event_times

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, database=None)


def reference(pieces: list[str], chunks: list[tuple[float, int]]) -> list[float]:
    """The definition, spelled out: the first chunk whose end reaches the event's end."""
    out, offset = [], 0
    for piece in pieces:
        offset += len(piece.encode("utf-8"))
        received, index = 0, 0
        for index, (_, size) in enumerate(chunks):  # noqa: B007 (index used after the loop)
            received += size
            if received >= offset:
                break
        out.append(round(chunks[index][0] * 10000) / 10000)
    return out


@SETTINGS
@given(
    pieces=st.lists(st.text(st.sampled_from("ab\né😀"), min_size=1, max_size=6), max_size=8),
    cuts=st.lists(st.integers(0, 60), max_size=10),
    aligned=st.booleans(),
)
def test_event_times_follow_the_chunks(pieces: list[str], cuts: list[int], aligned: bool) -> None:
    body = "".join(pieces).encode("utf-8")
    if aligned:  # one chunk per event, the usual way streams arrive
        sizes = [len(piece.encode("utf-8")) for piece in pieces]
    else:
        edges = sorted({0, len(body), *(cut % (len(body) + 1) for cut in cuts)})
        sizes = [end - start for start, end in itertools.pairwise(edges)]
    chunks = [(0.001 * (i + 1) + 0.00004, size) for i, size in enumerate(sizes)]
    if not chunks:
        assert event_times(pieces, chunks) == [0.0] * len(pieces)
        return
    assert event_times(pieces, chunks) == reference(pieces, chunks)
