"""The recorded response the transport replays: vcrpy's response dict plus llmcassette's part.

vcrpy hands around ``{"status": {"code", "message"}, "headers": {name: [values]},
"body": {"string": bytes}}``. What vcrpy has no field for (the stream kind, each event's
arrival time, how the stream ended) rides along under ``META_KEY``, which vcrpy carries
untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

META_KEY = "llmcassette"


def event_times_of(meta: Mapping[str, Any]) -> list[float] | None:
    """The event times kept in a response's llmcassette metadata (built on first use)."""
    times = meta.get("event_times")
    return times() if callable(times) else times


def session_of(response: Mapping[str, Any]) -> str | None:
    """The ``llmcassette.session`` label a recorded response's request was made in."""
    meta = response.get(META_KEY)
    return meta.get("session") if meta else None


def client_of(response: Mapping[str, Any]) -> int | None:
    """The number of the client that made a recorded response's request (first-call order
    within its cassette), None when not known."""
    meta = response.get(META_KEY)
    return meta.get("client") if meta else None
