"""Choose how a request or response body is stored, and turn it back into bytes.

A stored body is one of:

* ``null``: there was no body (a request without one);
* ``{"json": value}`` (plus ``"layout"`` when not compact, ``"pad"`` when padded): JSON text
  that rebuilds exactly;
* ``{"text": "..."}``: any other UTF-8 text;
* ``{"base64": "..."}``: bytes that are not UTF-8;
* ``{"stream": "sse" | "ndjson"}``: a streamed response whose events follow on their own lines.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from llmcassette.cassette import events, jsontext

Body = dict[str, Any] | None


def _is_json_type(content_type: str | None) -> bool:
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media.endswith("/json") or media.endswith("+json")


def encode(raw: bytes | str | None, content_type: str | None) -> Body:
    """Store a body that is not streamed."""
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(raw).decode("ascii")}
    if _is_json_type(content_type) or (not content_type and text[:1] in ("{", "[")):
        parsed = jsontext.parse_exact(text)
        if parsed is not None:
            value, layout = parsed
            return {"json": value, **jsontext.stored_layout(layout)}
    return {"text": text}


def decode(body: Body) -> bytes | None:
    """The exact bytes of a stored, non-streamed body."""
    if body is None:
        return None
    if "json" in body:
        return jsontext.render(body["json"], jsontext.layout_of(body)).encode()
    if "text" in body:
        if not isinstance(body["text"], str):
            raise TypeError(f"'text' must be a string, not {type(body['text']).__name__}")
        return str(body["text"]).encode()
    if "base64" in body:
        return base64.b64decode(body["base64"], validate=True)
    raise ValueError("a body needs one of the keys 'json', 'text', 'base64' or 'stream'")


def decode_event(kind: str, record: dict[str, Any]) -> bytes:
    """The exact bytes of one stored stream event."""
    return events.render_event(kind, record).encode()


DecodeErrors = (ValueError, TypeError, binascii.Error)
