"""Undo the content-encodings a server applied, so cassettes store readable bodies.

gzip and deflate always work; brotli and zstd work when their optional packages
(``llmcassette[brotli]``, ``llmcassette[zstd]``, or brotlicffi, or Python 3.14's zstd) are
installed. An encoding that cannot be undone leaves the body and its headers untouched
(and the fail-closed scan refuses the cassette: ``allow_unscanned_bodies``).
"""

from __future__ import annotations

import contextlib
import importlib
import zlib
from collections.abc import Callable

Decoder = Callable[[bytes], bytes]


def _gunzip(data: bytes) -> bytes:
    # Members may be concatenated (gzip allows it), so loop like `gzip.decompress` does.
    out = bytearray()
    while data:
        decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
        out += decompressor.decompress(data)
        out += decompressor.flush()
        data = decompressor.unused_data
        if not decompressor.eof:
            raise zlib.error("truncated gzip stream")
    return bytes(out)


def _inflate(data: bytes) -> bytes:
    # "deflate" is zlib-wrapped per RFC 9110, but some servers send raw deflate.
    try:
        return zlib.decompress(data)
    except zlib.error:
        return zlib.decompress(data, -zlib.MAX_WBITS)


def _decoders() -> dict[str, Decoder]:
    decoders: dict[str, Decoder] = {"gzip": _gunzip, "x-gzip": _gunzip, "deflate": _inflate}
    # Each decoder a client may have asked for: httpx, urllib3 and aiohttp offer br when
    # brotli or brotlicffi is importable, zstd when zstandard is (or Python 3.14's own).
    for module in ("brotli", "brotlicffi"):
        with contextlib.suppress(ImportError):
            decoders.setdefault("br", importlib.import_module(module).decompress)
    try:
        import zstandard

        def _unzstd(data: bytes) -> bytes:
            # A stream reader returns what it got so far from a cut-off frame without an error;
            # decode frame by frame and insist that each one ends, as `_gunzip` does.
            out = bytearray()
            while data:
                decompressor = zstandard.ZstdDecompressor().decompressobj()
                out += decompressor.decompress(data)
                if not decompressor.eof:
                    raise ValueError("truncated zstd stream")
                data = decompressor.unused_data
            return bytes(out)

        decoders["zstd"] = _unzstd
    except ImportError:
        with contextlib.suppress(ImportError):  # Python 3.14+: whole frames or an error
            decoders["zstd"] = importlib.import_module("compression.zstd").decompress
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
    When any encoding is unknown or the data does not decode, nothing changes.
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
    decoded = body
    try:
        for coding in reversed(codings):  # the last one listed was applied last
            decoded = DECODERS[coding](decoded)
    except Exception:  # a lying header or a corrupt body: keep the bytes as received
        return body, headers
    new_headers = {k: v for k, v in headers.items() if k != name}
    length = _find(new_headers, "content-length")
    if length is not None:
        new_headers[length] = [str(len(decoded))]
    return decoded, new_headers


def _find(headers: dict[str, list[str]], wanted: str) -> str | None:
    for key in headers:
        if key.lower() == wanted:
            return key
    return None
