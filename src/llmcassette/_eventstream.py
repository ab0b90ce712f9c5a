"""AWS event-stream framing (``application/vnd.amazon.eventstream``): encode and decode.

Bedrock Runtime streams (ConverseStream, InvokeModelWithResponseStream) are a sequence of
binary frames::

    total length (uint32) | headers length (uint32) | CRC32 of the 8 bytes before
    headers: name length (uint8), name, value type (uint8), value ...
    payload
    CRC32 of every byte before it

All integers are big-endian. This module imports nothing else of llmcassette: the cassette
format and the local provider (which uses nothing else of the package) share it.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CONTENT_TYPE = "application/vnd.amazon.eventstream"

_PRELUDE = struct.Struct("!III")
_CRC = struct.Struct("!I")
# The smallest frame: prelude and message CRC, no headers, no payload.
_MIN_FRAME = _PRELUDE.size + _CRC.size
# botocore refuses bigger frames and headers; so does the decoder.
MAX_FRAME = 16 * 1024**2
MAX_HEADERS = 128 * 1024

# Value types of a header, by their code on the wire.
BOOL_TRUE, BOOL_FALSE, BYTE, SHORT, INTEGER, LONG, BYTES, STRING, TIMESTAMP, UUID = range(10)
_FIXED = {BYTE: struct.Struct("!b"), SHORT: struct.Struct("!h"), INTEGER: struct.Struct("!i")}
_FIXED[LONG] = _FIXED[TIMESTAMP] = struct.Struct("!q")
_LENGTH16 = struct.Struct("!H")
#: The name of each value type as a cassette stores it (a string header is a plain string).
TYPE_NAMES = {
    BYTE: "byte",
    SHORT: "short",
    INTEGER: "integer",
    LONG: "long",
    BYTES: "bytes",
    TIMESTAMP: "timestamp",
    UUID: "uuid",
}
_TYPE_CODES = {name: code for code, name in TYPE_NAMES.items()}

HeaderValue = bool | int | str | bytes


class EventStreamError(ValueError):
    """Bytes that are not a well-formed event-stream frame."""


@dataclass(frozen=True)
class Header:
    """One frame header: its name, its wire type code and its value."""

    name: str
    type: int
    value: HeaderValue


@dataclass(frozen=True)
class Frame:
    """One decoded frame."""

    headers: tuple[Header, ...]
    payload: bytes

    def header(self, name: str) -> HeaderValue | None:
        """The value of the first header called ``name``, or None."""
        return next((h.value for h in self.headers if h.name == name), None)


def is_eventstream(content_type: str | None) -> bool:
    """Whether a ``content-type`` announces an AWS event stream."""
    if not content_type:
        return False
    return content_type.split(";", 1)[0].strip().lower() == CONTENT_TYPE


def string_headers(pairs: Iterable[tuple[str, str]]) -> tuple[Header, ...]:
    """Headers of string values, the kind Bedrock sends (``:event-type`` and friends)."""
    return tuple(Header(name, STRING, value) for name, value in pairs)


def _encode_value(header: Header) -> bytes:
    kind, value = header.type, header.value
    if kind in (BOOL_TRUE, BOOL_FALSE):
        if value is not (kind == BOOL_TRUE):
            raise EventStreamError(f"header {header.name!r}: type {kind} holds {value!r}")
        return b""
    if kind in _FIXED:
        if not isinstance(value, int) or isinstance(value, bool):
            raise EventStreamError(f"header {header.name!r}: an integer is needed")
        try:
            return _FIXED[kind].pack(value)
        except struct.error as error:
            raise EventStreamError(f"header {header.name!r}: {error}") from None
    if kind == UUID:
        if not isinstance(value, bytes) or len(value) != 16:
            raise EventStreamError(f"header {header.name!r}: a UUID is 16 bytes")
        return value
    if kind in (BYTES, STRING):
        raw = value.encode("utf-8") if kind == STRING and isinstance(value, str) else value
        if not isinstance(raw, bytes) or len(raw) > 0xFFFF:
            raise EventStreamError(f"header {header.name!r}: a value of up to 65535 bytes")
        return _LENGTH16.pack(len(raw)) + raw
    raise EventStreamError(f"header {header.name!r}: unknown value type {kind}")


def encode_headers(headers: Sequence[Header]) -> bytes:
    """The headers section of a frame."""
    out = bytearray()
    for header in headers:
        name = header.name.encode("utf-8")
        if not 0 < len(name) < 256:
            raise EventStreamError(f"header name {header.name!r}: 1 to 255 bytes")
        out += bytes([len(name)]) + name + bytes([header.type]) + _encode_value(header)
    return bytes(out)


def encode_frame(headers: Sequence[Header], payload: bytes) -> bytes:
    """One whole frame, both CRCs computed."""
    head = encode_headers(headers)
    total = _PRELUDE.size + len(head) + len(payload) + _CRC.size
    prelude = struct.pack("!II", total, len(head))
    prelude += _CRC.pack(zlib.crc32(prelude))
    message = prelude + head + payload
    return message + _CRC.pack(zlib.crc32(message))


def _decode_headers(data: bytes) -> tuple[Header, ...]:
    headers: list[Header] = []
    at = 0
    try:
        while at < len(data):
            size = data[at]
            name = data[at + 1 : at + 1 + size].decode("utf-8")
            at += 1 + size
            kind = data[at]
            at += 1
            value: HeaderValue
            if kind in (BOOL_TRUE, BOOL_FALSE):
                value = kind == BOOL_TRUE
            elif kind in _FIXED:
                value = _FIXED[kind].unpack_from(data, at)[0]
                at += _FIXED[kind].size
            elif kind == UUID:
                value = data[at : at + 16]
                if len(value) != 16:
                    raise EventStreamError("a UUID header is cut short")
                at += 16
            elif kind in (BYTES, STRING):
                (length,) = _LENGTH16.unpack_from(data, at)
                raw = data[at + 2 : at + 2 + length]
                if len(raw) != length:
                    raise EventStreamError("a header value is cut short")
                value = raw.decode("utf-8") if kind == STRING else raw
                at += 2 + length
            else:
                raise EventStreamError(f"unknown header value type {kind}")
            if not name:
                raise EventStreamError("a header without a name")
            headers.append(Header(name, kind, value))
    except (IndexError, struct.error, UnicodeDecodeError) as error:
        raise EventStreamError(f"malformed headers: {error}") from None
    return tuple(headers)


def frame_length(data: bytes, at: int = 0) -> int | None:
    """The total length of the frame starting at ``at``, None when the prelude is incomplete.

    Raises ``EventStreamError`` when the prelude is wrong (its CRC, or impossible lengths).
    """
    if len(data) - at < _PRELUDE.size:
        return None
    total, headers_length, crc = _PRELUDE.unpack_from(data, at)
    if zlib.crc32(data[at : at + 8]) != crc:
        raise EventStreamError("prelude CRC mismatch")
    if not _MIN_FRAME + headers_length <= total <= MAX_FRAME or headers_length > MAX_HEADERS:
        raise EventStreamError(f"impossible frame lengths ({total}, {headers_length})")
    return int(total)


def decode_frame(raw: bytes) -> Frame:
    """One whole frame; ``EventStreamError`` unless it is exactly one frame with good CRCs."""
    total = frame_length(raw)
    if total is None or total != len(raw):
        raise EventStreamError(f"a frame of {len(raw)} bytes does not hold exactly one frame")
    (message_crc,) = _CRC.unpack_from(raw, total - _CRC.size)
    if zlib.crc32(raw[: total - _CRC.size]) != message_crc:
        raise EventStreamError("message CRC mismatch")
    (headers_length,) = struct.unpack_from("!I", raw, 4)
    end = _PRELUDE.size + headers_length
    return Frame(_decode_headers(raw[_PRELUDE.size : end]), raw[end : total - _CRC.size])


def split_frames(data: bytes) -> list[bytes]:
    """Cut a stream into its frames; whatever follows the last whole frame (a frame cut off,
    or bytes that are no frame) is one last piece. The pieces join to ``data``."""
    pieces: list[bytes] = []
    at = 0
    while at < len(data):
        try:
            total = frame_length(data, at)
        except EventStreamError:
            total = None
        if total is None or at + total > len(data):
            pieces.append(data[at:])
            break
        pieces.append(data[at : at + total])
        at += total
    return pieces


def decode_frames(data: bytes) -> list[Frame]:
    """Every frame of a whole stream; ``EventStreamError`` if any piece is not one."""
    return [decode_frame(piece) for piece in split_frames(data)]


# ------------------------------------------------------------ InvokeModel's chunk payload


def decode_chunk_bytes(value: str) -> bytes | None:
    """The bytes of an InvokeModel ``{"bytes": base64}`` chunk, when encoding them again
    gives back exactly ``value`` (standard base64 with padding), else None."""
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode("ascii") == value else None


def encode_chunk_bytes(raw: bytes) -> str:
    """The ``bytes`` value of an InvokeModel chunk."""
    return base64.b64encode(raw).decode("ascii")
