"""Turn the arrival times of network chunks into the time each stream event was complete."""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate

from ..format import events


def event_times(
    kind: str, body: bytes, chunks: list[tuple[float, int]], *, decimals: int = 4
) -> list[float] | None:
    """Seconds from the request to the arrival of each event's last byte.

    ``chunks`` are ``(seconds, size)`` pairs in arrival order. Returns None when the body
    is not UTF-8 text (it will be stored as base64 without events).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    pieces = events.split_events(kind, text)
    if not chunks:
        return [0.0] * len(pieces)
    ends = list(accumulate(size for _, size in chunks))  # byte offset where each chunk ends
    arrived = [round(seconds, decimals) for seconds, _ in chunks]
    last = len(chunks) - 1
    # Characters are bytes in an ASCII stream: no need to encode each event to count them.
    sizes = map(len, pieces) if text.isascii() else (len(p.encode("utf-8")) for p in pieces)
    return [arrived[min(bisect_left(ends, offset), last)] for offset in accumulate(sizes)]
