"""Turn the arrival times of network chunks into the time each stream event was complete."""

from __future__ import annotations

from bisect import bisect_left

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
    ends: list[int] = []
    total = 0
    for _, size in chunks:
        total += size
        ends.append(total)
    times: list[float] = []
    offset = 0
    ascii_only = text.isascii()  # then characters are bytes: no need to encode each piece
    for piece in events.split_events(kind, text):
        offset += len(piece) if ascii_only else len(piece.encode("utf-8"))
        index = min(bisect_left(ends, offset), len(chunks) - 1)
        times.append(round(chunks[index][0], decimals) if chunks else 0.0)
    return times
