"""vcrpy matchers that compare requests by meaning and say where they differ.

vcrpy calls a matcher as ``matcher(incoming, recorded)``; raising ``AssertionError`` with a
message puts that message in vcrpy's "no match" error.
"""

from __future__ import annotations

from typing import Any

from .canonical import body_value
from .diff import differences

MAX_SHOWN = 5


def content_type(request: Any) -> str | None:
    """The request's ``content-type`` header, if any."""
    headers = getattr(request, "headers", None) or {}
    for name, value in headers.items():
        if name.lower() == "content-type":
            return str(value[0] if isinstance(value, list) else value)
    return None


def llm_body(incoming: Any, recorded: Any) -> None:
    """Match request bodies semantically: JSON key order and number spelling do not count."""
    incoming_raw = getattr(incoming, "body_bytes", incoming.body)
    recorded_raw = getattr(recorded, "body_bytes", recorded.body)
    if incoming_raw == recorded_raw:
        return
    found = differences(
        body_value(recorded_raw, content_type(recorded)),
        body_value(incoming_raw, content_type(incoming)),
        "body",
    )
    if not found:
        return
    lines = [d.describe() for d in found[:MAX_SHOWN]]
    if len(found) > MAX_SHOWN:
        more = len(found) - MAX_SHOWN
        lines.append(f"… and {more} more difference{'s' if more > 1 else ''}")
    raise AssertionError("\n".join(lines))
