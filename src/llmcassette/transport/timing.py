"""Turn the arrival times of network chunks into the time each stream event was complete."""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate


def event_times(
    pieces: list[str], chunks: list[tuple[float, int]], *, decimals: int = 4
) -> list[float]:
    """Seconds from the request to the arrival of each event's last byte.

    ``pieces`` are the event texts of the stream (``events.split_events``); ``chunks`` are
    ``(seconds, size in bytes)`` pairs in arrival order.
    """
    if not chunks:
        return [0.0] * len(pieces)
    # Characters are bytes in ASCII text: no need to encode each event to count them.
    ascii_only = all(map(str.isascii, pieces))
    sizes = list(map(len, pieces)) if ascii_only else list(_utf8_sizes(pieces))
    return times_of_sizes(sizes, chunks, decimals=decimals)


def times_of_sizes(
    sizes: list[int], chunks: list[tuple[float, int]], *, decimals: int = 4
) -> list[float]:
    """``event_times`` for events given by their sizes in bytes (binary frames)."""
    if not chunks:
        return [0.0] * len(sizes)
    # round(x, 4) goes through a decimal string; scaling to an integer is a tenth of the
    # cost, and a time to 0.1 ms needs no decimal tie-breaking.
    scale = 10.0**decimals
    arrived = [round(seconds * scale) / scale for seconds, _ in chunks]
    if len(chunks) == len(sizes) and all(map(operator.eq, sizes, (n for _, n in chunks))):
        return arrived  # one chunk per event, as servers that flush each event send them
    ends = list(accumulate(size for _, size in chunks))  # byte offset where each chunk ends
    last = len(chunks) - 1
    return [arrived[min(bisect_left(ends, offset), last)] for offset in accumulate(sizes)]


def _utf8_sizes(pieces: list[str]) -> Iterator[int]:
    return (len(piece.encode("utf-8")) for piece in pieces)
