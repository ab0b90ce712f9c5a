"""AWS event-stream bodies (Bedrock) as one readable record per frame, rebuilt byte for byte.

A frame is stored as its headers (``{":event-type": "contentBlockDelta", ...}``; a header
of a type other than string as ``{"integer": 5}``, ``{"bytes": base64}``...) and its
payload: ``data`` (with ``layout``) when it is JSON that rebuilds exactly, else ``text``,
else ``payload_base64``. An InvokeModelWithResponseStream chunk, ``{"bytes": base64}``,
has its ``bytes`` decoded too: ``"chunk": "json"`` says ``data.bytes`` holds the decoded
JSON value (``chunk_layout`` its layout when not compact), ``"chunk": "text"`` its text.
Both CRCs are computed again when the frame is rebuilt; a frame that would not rebuild to
the same bytes (a bad CRC, a cut-off last frame) is kept whole as ``base64``.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from llmcassette import _eventstream as wire
from llmcassette.cassette import jsontext

KIND = "eventstream"
is_eventstream = wire.is_eventstream


def _header_record(header: wire.Header) -> Any:
    if header.type == wire.STRING:
        return header.value
    if header.type in (wire.BOOL_TRUE, wire.BOOL_FALSE):
        return header.value
    if header.type == wire.BYTES:
        assert isinstance(header.value, bytes)
        return {"bytes": base64.b64encode(header.value).decode("ascii")}
    if header.type == wire.UUID:
        assert isinstance(header.value, bytes)
        return {"uuid": str(uuid.UUID(bytes=header.value))}
    return {wire.TYPE_NAMES[header.type]: header.value}


def _header_of(name: str, value: Any) -> wire.Header:
    if isinstance(value, str):
        return wire.Header(name, wire.STRING, value)
    if isinstance(value, bool):
        return wire.Header(name, wire.BOOL_TRUE if value else wire.BOOL_FALSE, value)
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(f"frame header {name!r}: a string, true/false or {{type: value}}")
    ((kind, raw),) = value.items()
    if kind == "bytes":
        return wire.Header(name, wire.BYTES, base64.b64decode(_str(name, raw), validate=True))
    if kind == "uuid":
        return wire.Header(name, wire.UUID, uuid.UUID(_str(name, raw)).bytes)
    codes = {type_name: code for code, type_name in wire.TYPE_NAMES.items()}
    if kind not in codes or not isinstance(raw, int) or isinstance(raw, bool):
        raise ValueError(f"frame header {name!r}: unknown type {kind!r} or not an integer")
    return wire.Header(name, codes[kind], raw)


def _str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"frame header {name!r}: the value must be a string")
    return value


def _payload_fields(payload: bytes) -> dict[str, Any]:
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return {"payload_base64": base64.b64encode(payload).decode("ascii")}
    parsed = jsontext.parse_exact(text) if text else None
    if parsed is None:
        return {"text": text} if text else {}
    value, layout = parsed
    fields: dict[str, Any] = {}
    if isinstance(value, dict) and isinstance(value.get("bytes"), str):
        inner = wire.decode_chunk_bytes(value["bytes"])
        inner_text = _utf8(inner) if inner is not None else None
        if inner_text is not None:
            exact = jsontext.parse_exact(inner_text)
            if exact is not None:
                fields["chunk"] = "json"
                value = {**value, "bytes": exact[0]}
                if exact[1] != jsontext.DEFAULT_LAYOUT:
                    fields["chunk_layout"] = exact[1]
            else:
                fields["chunk"] = "text"
                value = {**value, "bytes": inner_text}
    fields.update(jsontext.stored_layout(layout))
    fields["data"] = value  # last: the line writes it compact, as streamed
    return fields


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _payload_bytes(record: dict[str, Any]) -> bytes:
    if "payload_base64" in record:
        return base64.b64decode(_str("payload_base64", record["payload_base64"]), validate=True)
    if "text" in record:
        return _str("text", record["text"]).encode("utf-8")
    if "data" not in record:
        return b""
    value = record["data"]
    chunk = record.get("chunk")
    if chunk is not None:
        if chunk not in ("json", "text") or not isinstance(value, dict) or "bytes" not in value:
            raise ValueError("field 'chunk' is 'json' or 'text', with the decoded data.bytes")
        inner = value["bytes"]
        if chunk == "json":
            inner_text = jsontext.render(inner, record.get("chunk_layout", "compact"))
        else:
            inner_text = _str("data.bytes", inner)
        value = {**value, "bytes": wire.encode_chunk_bytes(inner_text.encode("utf-8"))}
    return jsontext.render(value, jsontext.layout_of(record)).encode("utf-8")


def encode_frame(piece: bytes) -> dict[str, Any]:
    """The record of one frame (without ``type`` and timing); ``base64`` unless it rebuilds."""
    try:
        frame = wire.decode_frame(piece)
        record: dict[str, Any] = {"headers": {}}
        for header in frame.headers:
            if header.name in record["headers"]:
                raise wire.EventStreamError("a header name repeated")
            record["headers"][header.name] = _header_record(header)
        record.update(_payload_fields(frame.payload))
        if render_frame(record) == piece:
            return record
    except (ValueError, TypeError):
        pass
    return {"base64": base64.b64encode(piece).decode("ascii")}


def encode_records(body: bytes) -> list[dict[str, Any]]:
    """One record per frame of a whole body (a cut-off last frame is kept as ``base64``)."""
    return [encode_frame(piece) for piece in wire.split_frames(body)]


def render_frame(record: dict[str, Any]) -> bytes:
    """The exact bytes of one stored frame; ``ValueError``/``TypeError`` for a bad record."""
    if "base64" in record:
        return base64.b64decode(_str("base64", record["base64"]), validate=True)
    headers = record.get("headers")
    if not isinstance(headers, dict):
        raise ValueError("an event-stream frame needs 'headers' (an object) or 'base64'")
    if "layout" in record or "pad" in record:
        jsontext.check_layout(jsontext.layout_of(record))
    frame_headers = [_header_of(name, value) for name, value in headers.items()]
    return wire.encode_frame(frame_headers, _payload_bytes(record))


def payload_of(record: dict[str, Any]) -> tuple[str | None, Any]:
    """A frame as ``(event name, parsed data)``, the way boto3 hands it to its caller.

    ConverseStream events come as ``{event type: payload}``; an InvokeModel chunk as its
    decoded inner JSON (an Anthropic event names itself in ``type``); an exception frame as
    ``{exception type: payload}``. A frame kept as ``base64`` gives ``(None, None)``.
    """
    headers = record.get("headers")
    if not isinstance(headers, dict):
        return None, None
    kind = headers.get(":message-type")
    name = headers.get(":exception-type" if kind == "exception" else ":event-type")
    if "data" in record:
        data = record["data"]
    elif "text" in record:
        data = _parse(str(record["text"]))
    else:
        data = None
    if record.get("chunk") and isinstance(data, dict):
        inner = data.get("bytes")
        inner = _parse(inner) if record["chunk"] == "text" and isinstance(inner, str) else inner
        inner_name = inner.get("type") if isinstance(inner, dict) else None
        return (inner_name if isinstance(inner_name, str) else None), inner
    if not isinstance(name, str):
        return None, data
    return name, {name: data}


def _parse(text: str) -> Any:
    try:
        return jsontext.loads_body(text)
    except ValueError:
        return text


def payloads(body: bytes) -> list[tuple[str | None, Any]]:
    """Each frame of a body as ``(event name, parsed data)`` (``payload_of``), for summaries."""
    out = [payload_of(encode_frame(piece)) for piece in wire.split_frames(body)]
    return [pair for pair in out if pair != (None, None)]
