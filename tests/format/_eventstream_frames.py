"""Bedrock event-stream frames the format tests build: a ConverseStream event's headers and
an InvokeModel chunk (its Anthropic event base64-encoded in ``bytes``)."""

from __future__ import annotations

import base64
import json

from llmcassette import _eventstream as wire

EVENT = wire.string_headers(
    [(":event-type", "contentBlockDelta"), (":content-type", "application/json"),
     (":message-type", "event")]
)  # fmt: skip
CHUNK = wire.string_headers(
    [(":event-type", "chunk"), (":content-type", "application/json"), (":message-type", "event")]
)


def chunk(inner: bytes, spaced: bool = False) -> bytes:
    """An InvokeModel chunk frame holding ``inner`` (JSON spaced as json.dumps does, or not)."""
    value = base64.b64encode(inner).decode()
    payload = json.dumps({"bytes": value, "p": "abc"}, separators=None if spaced else (",", ":"))
    return wire.encode_frame(CHUNK, payload.encode())
