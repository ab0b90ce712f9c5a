"""Undo the content-encodings a server applied, so cassettes store readable bodies.

gzip and deflate always work; brotli and zstd work when their optional packages
(``llmcassette[brotli]``, ``llmcassette[zstd]``, or brotlicffi, or Python 3.14's zstd, or
backports.zstd) are installed. An encoding that cannot be undone leaves the body and its headers untouched
(and the fail-closed scan refuses the cassette: ``allow_unscanned_bodies``).

A body never decodes to more than ``max_decoded_bytes()``: a few hundred bytes of gzip,
brotli or zstd in a cassette from a stranger can stand for gigabytes (a "decompression
bomb"), so every decoder stops at the limit (within a few MiB), and the body is left as it
was.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import zlib
from collections.abc import Callable
from typing import Any

from llmcassette.errors import ConfigError

Decoder = Callable[[bytes], bytes]

#: The environment variable that raises (or lowers) ``max_decoded_bytes()``.
MAX_DECODED_BYTES_ENV = "LLMCASSETTE_MAX_DECODED_BYTES"
#: Far more than any LLM answer; a body decoding to more is read as it is stored.
DEFAULT_MAX_DECODED_BYTES = 256 * 1024 * 1024


def max_decoded_bytes() -> int:
    """The most bytes one body or one gzip-compressed cassette file may decompress to:
    ``LLMCASSETTE_MAX_DECODED_BYTES`` when set, else 256 MiB."""
    value = os.environ.get(MAX_DECODED_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_DECODED_BYTES
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(
            f"{MAX_DECODED_BYTES_ENV}={value[:40]!r} is not a whole number of bytes above 0"
        )
    return int(value)


class DecodedTooLarge(ValueError):
    """A body that decompresses to more than ``limit`` bytes; decoding stopped there."""

    def __init__(self, coding: str, limit: int) -> None:
        self.coding = coding
        self.limit = limit
        self.problem = f"decompresses ({coding}) to more than {limit} bytes"
        self.hint = (
            f"if that much is expected, set {MAX_DECODED_BYTES_ENV} to a larger number of "
            f"bytes (the limit is {limit})"
        )
        super().__init__(f"{self.problem}; {self.hint}")


def _add_within(out: bytearray, piece: bytes, coding: str, limit: int) -> None:
    out += piece
    if len(out) > limit:
        raise DecodedTooLarge(coding, limit)


def gunzip(data: bytes, limit: int | None = None) -> bytes:
    """``data`` gzip-decompressed, at most ``limit`` bytes (``max_decoded_bytes()``), or
    ``DecodedTooLarge``; ``zlib.error`` for data that is no gzip or is cut off."""
    limit = max_decoded_bytes() if limit is None else limit
    # Members may be concatenated (gzip allows it), so loop like `gzip.decompress` does.
    out = bytearray()
    while data:
        decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
        # One byte past the limit: enough to know it is exceeded, and no more is made.
        _add_within(out, decompressor.decompress(data, limit + 1 - len(out)), "gzip", limit)
        _add_within(out, decompressor.flush(), "gzip", limit)
        data = decompressor.unused_data
        if not decompressor.eof:
            raise zlib.error("truncated gzip stream")
    return bytes(out)


def _gunzip(data: bytes) -> bytes:
    return gunzip(data)


def _inflate_as(data: bytes, wbits: int, limit: int) -> bytes:
    decompressor = zlib.decompressobj(wbits)
    out = bytearray()
    _add_within(out, decompressor.decompress(data, limit + 1), "deflate", limit)
    _add_within(out, decompressor.flush(), "deflate", limit)
    if not decompressor.eof:
        raise zlib.error("truncated deflate stream")
    return bytes(out)


def _inflate(data: bytes) -> bytes:
    # "deflate" is zlib-wrapped per RFC 9110, but some servers send raw deflate.
    limit = max_decoded_bytes()
    try:
        return _inflate_as(data, zlib.MAX_WBITS, limit)
    except zlib.error:
        return _inflate_as(data, -zlib.MAX_WBITS, limit)


def _unbrotli(module: Any) -> Decoder:
    """brotli's (or brotlicffi's) decoder within the limit."""
    make = module.Decompressor
    if hasattr(make(), "can_accept_more_data"):  # brotli 1.2, brotlicffi 1.2: a stop built in

        def decode(data: bytes) -> bytes:
            limit = max_decoded_bytes()
            decompressor = make()
            out = bytearray()
            step = limit + 1
            _add_within(out, decompressor.process(data, output_buffer_limit=step), "br", limit)
            while not decompressor.is_finished():
                if decompressor.can_accept_more_data():
                    raise ValueError("truncated brotli stream")
                _add_within(out, decompressor.process(b"", output_buffer_limit=step), "br", limit)
            return bytes(out)

        return decode

    def decode_bytewise(data: bytes) -> bytes:
        # Older versions decode all they are given at once. One byte of brotli completes at
        # most one meta-block (16 MiB at most): fed byte by byte, decoding stops within that
        # of the limit, at a cost only for bodies near it.
        limit = max_decoded_bytes()
        decompressor = make()
        out = bytearray()
        for position in range(len(data)):
            _add_within(out, decompressor.process(data[position : position + 1]), "br", limit)
        if not decompressor.is_finished():
            raise ValueError("truncated brotli stream")
        return bytes(out)

    return decode_bytewise


#: Compressed bytes given to a zstandard decompressor at a time. A zstd block (a 3-byte
#: header at least) stands for 128 KiB at most, so one piece decodes to 11 MiB at most.
_ZSTD_PIECE = 256


def _unzstd_with(zstandard: Any) -> Decoder:
    """The ``zstandard`` package's decoder within the limit (it has no output limit of its
    own: the input is given in small pieces)."""

    def decode(data: bytes) -> bytes:
        # A stream reader returns what it got so far from a cut-off frame without an error;
        # decode frame by frame and insist that each one ends, as `_gunzip` does.
        limit = max_decoded_bytes()
        out = bytearray()
        while data:
            decompressor = zstandard.ZstdDecompressor().decompressobj()
            position = 0
            while not decompressor.eof and position < len(data):
                piece = data[position : position + _ZSTD_PIECE]
                position += len(piece)
                _add_within(out, decompressor.decompress(piece), "zstd", limit)
            if not decompressor.eof:
                raise ValueError("truncated zstd stream")
            data = decompressor.unused_data + data[position:]
        return bytes(out)

    return decode


def _unzstd_stdlib(zstd: Any) -> Decoder:
    """``compression.zstd``'s (Python 3.14) or ``backports.zstd``'s decoder within the limit."""

    def decode(data: bytes) -> bytes:
        limit = max_decoded_bytes()
        out = bytearray()
        while data:  # one decompressor per frame, as gzip members
            decompressor = zstd.ZstdDecompressor()
            _add_within(out, decompressor.decompress(data, limit + 1 - len(out)), "zstd", limit)
            while not decompressor.eof and not decompressor.needs_input:
                more = decompressor.decompress(b"", limit + 1 - len(out))
                _add_within(out, more, "zstd", limit)
            if not decompressor.eof:
                raise ValueError("truncated zstd stream")
            data = decompressor.unused_data
        return bytes(out)

    return decode


def _decoders() -> dict[str, Decoder]:
    decoders: dict[str, Decoder] = {"gzip": _gunzip, "x-gzip": _gunzip, "deflate": _inflate}
    # Each decoder a client may have asked for: httpx, urllib3 and aiohttp offer br when
    # brotli or brotlicffi is importable, zstd when zstandard is (httpx) or compression.zstd
    # (Python 3.14) or backports.zstd (urllib3).
    for name in ("brotli", "brotlicffi"):
        with contextlib.suppress(ImportError):
            decoders.setdefault("br", _unbrotli(importlib.import_module(name)))
    with contextlib.suppress(ImportError):
        decoders["zstd"] = _unzstd_with(importlib.import_module("zstandard"))
    for name in ("compression.zstd", "backports.zstd"):
        with contextlib.suppress(ImportError):
            decoders.setdefault("zstd", _unzstd_stdlib(importlib.import_module(name)))
    return decoders


DECODERS = _decoders()


def content_codings(headers: dict[str, list[str]]) -> list[str]:
    """The content-encodings ``headers`` say were applied, in order, ``identity`` left out."""
    name = _find(headers, "content-encoding")
    listed = [c.strip().lower() for v in headers[name] for c in str(v).split(",")] if name else []
    return [c for c in listed if c and c != "identity"]


def decode_content(
    body: bytes, headers: dict[str, list[str]]
) -> tuple[bytes, dict[str, list[str]]]:
    """Return the body with its content-encodings undone and headers adjusted to match.

    ``content-encoding`` is removed and ``content-length`` set to the decoded size.
    When any encoding is unknown or the data does not decode (or decodes to more than
    ``max_decoded_bytes()``: ``too_large`` says so), nothing changes.
    """
    name = _find(headers, "content-encoding")
    if name is None:
        return body, headers
    codings = content_codings(headers)
    if not body or not codings:
        # Nothing to undo (an empty HEAD/304 body, or only "identity"): keep the headers as sent.
        return body, headers
    if not all(c in DECODERS for c in codings):
        return body, headers
    max_decoded_bytes()  # a wrong setting is an error of its own, not a body left as it is
    try:
        decoded = _undo(body, codings)
    except Exception:  # a lying header, a corrupt body, a bomb: keep the bytes as received
        return body, headers
    new_headers = {k: v for k, v in headers.items() if k != name}
    length = _find(new_headers, "content-length")
    if length is not None:
        new_headers[length] = [str(len(decoded))]
    return decoded, new_headers


def _undo(body: bytes, codings: list[str]) -> bytes:
    for coding in reversed(codings):  # the last one listed was applied last
        body = DECODERS[coding](body)
    return body


def too_large(body: bytes, headers: dict[str, list[str]]) -> DecodedTooLarge | None:
    """Why ``decode_content`` would leave ``body`` as it is because it decompresses to more
    than ``max_decoded_bytes()``, if it would; None otherwise (a body that decodes, or that
    does not for any other reason)."""
    codings = content_codings(headers)
    if not body or not codings or not all(c in DECODERS for c in codings):
        return None
    max_decoded_bytes()  # a wrong setting is an error of its own
    try:
        _undo(body, codings)
    except DecodedTooLarge as error:
        return error
    except Exception:  # not decodable: decode_content keeps it, and says nothing either
        return None
    return None


def _find(headers: dict[str, list[str]], wanted: str) -> str | None:
    for key in headers:
        if key.lower() == wanted:
            return key
    return None
