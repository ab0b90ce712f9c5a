"""Compressed responses are stored decoded; anything that cannot be decoded is left as it was."""

from __future__ import annotations

import base64
import gzip
import importlib
import json
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.cassette import compression
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.errors import CassetteFormatError, ConfigError

SETTINGS = settings(max_examples=100, derandomize=True, deadline=None, database=None)

PAYLOAD = json.dumps(
    {"id": "x", "choices": [{"text": "héllo " * 20}]}, separators=(",", ":"), ensure_ascii=False
).encode()


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


HAS_BROTLI = _importable("brotli") or _importable("brotlicffi")
HAS_ZSTD = any(map(_importable, ["zstandard", "compression.zstd", "backports.zstd"]))


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _headers(encoding: str | list[str], length: int, **extra: str) -> dict[str, list[str]]:
    headers = {
        "Content-Type": ["application/json"],
        "Content-Encoding": encoding if isinstance(encoding, list) else [encoding],
        "Content-Length": [str(length)],
    }
    headers.update({k: [v] for k, v in extra.items()})
    return headers


def _store(
    body: bytes, headers: dict[str, list[str]]
) -> tuple[list[dict[str, object]], Interaction]:
    item = Interaction("GET", "http://h/", {}, None, 200, "OK", headers, body)
    text = cassette_file.write(Cassette(cassette_file.new_header("t"), [item]))
    records = [json.loads(line) for line in text.splitlines()]
    return records, cassette_file.read(text.encode(), "c.jsonl").interactions[0]


@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [
        ("gzip", gzip.compress(PAYLOAD, mtime=0)),
        ("x-gzip", gzip.compress(PAYLOAD, mtime=0)),
        ("GZIP", gzip.compress(PAYLOAD, mtime=0)),
        ("deflate", zlib.compress(PAYLOAD)),
        ("deflate", _raw_deflate(PAYLOAD)),
        (
            "gzip",
            gzip.compress(PAYLOAD[:10], mtime=0) + gzip.compress(PAYLOAD[10:], mtime=0),
        ),  # two members
        ("gzip, deflate", zlib.compress(gzip.compress(PAYLOAD, mtime=0))),  # deflate applied last
        (
            ["gzip", "deflate"],
            zlib.compress(gzip.compress(PAYLOAD, mtime=0)),
        ),  # same, as two headers
        ("identity, gzip", gzip.compress(PAYLOAD, mtime=0)),
    ],
)
def test_decoded_and_stored_readable(encoding: str | list[str], encoded: bytes) -> None:
    headers = _headers(encoding, len(encoded), **{"X-Other": "1"})
    records, back = _store(encoded, headers)
    response = records[2]
    assert response["body"] == {"json": json.loads(PAYLOAD)}
    assert response["headers"] == {
        "Content-Length": str(len(PAYLOAD)),
        "Content-Type": "application/json",
        "X-Other": "1",
    }
    assert back.response_body == PAYLOAD
    assert back.response_headers == {
        "Content-Length": [str(len(PAYLOAD))],
        "Content-Type": ["application/json"],
        "X-Other": ["1"],
    }


def test_no_content_length_is_not_invented() -> None:
    encoded = gzip.compress(PAYLOAD, mtime=0)
    body, headers = compression.decode_content(encoded, {"content-encoding": ["gzip"]})
    assert body == PAYLOAD
    assert headers == {}


def test_compressed_stream_is_split_into_events() -> None:
    stream = b'data: {"a":1}\n\ndata: [DONE]\n\n'
    headers = {"content-type": ["text/event-stream"], "content-encoding": ["gzip"]}
    records, back = _store(gzip.compress(stream, mtime=0), headers)
    assert records[2]["headers"] == {"content-type": "text/event-stream"}
    assert records[3:5] == [
        {"type": "event", "data": {"a": 1}},
        {"type": "event", "text": "[DONE]"},
    ]
    assert back.response_body == stream


def _untouched(body: bytes, headers: dict[str, list[str]]) -> None:
    out_body, out_headers = compression.decode_content(body, headers)
    assert out_body == body
    assert out_headers == headers
    records, back = _store(body, headers)
    assert back.response_body == body
    assert back.response_headers == headers
    assert {k.lower() for k in records[2]["headers"]} >= {"content-encoding"}


def test_br_chain_without_brotli_is_left_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    # As without the optional brotli package: gzip was applied first, then br; neither is undone.
    monkeypatch.delitem(compression.DECODERS, "br", raising=False)
    body = b"\x1b\x03\x00\xf8\xa5@" + gzip.compress(PAYLOAD, mtime=0)  # opaque bytes
    _untouched(body, _headers("gzip, br", len(body)))


def test_zstd_without_zstandard_is_left_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(compression.DECODERS, "zstd", raising=False)
    body = b"(\xb5/\xfd" + b"\x00" * 8
    _untouched(body, _headers("zstd", len(body)))


def test_optional_decoders_follow_installed_packages() -> None:
    assert ("br" in compression.DECODERS) == HAS_BROTLI
    assert ("zstd" in compression.DECODERS) == HAS_ZSTD
    assert {"gzip", "x-gzip", "deflate"} <= set(compression.DECODERS)


@pytest.mark.parametrize(
    "body",
    [
        gzip.compress(PAYLOAD, mtime=0)[:-9],  # truncated: header fine, stream cut
        gzip.compress(PAYLOAD, mtime=0)[:10],  # only the gzip header
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage!",  # gzip header, corrupt data
        gzip.compress(PAYLOAD, mtime=0) + b"trailing junk",  # junk after the member
        gzip.compress(PAYLOAD, mtime=0)[:-8] + b"\x00\x00\x00\x00\x00\x00\x00\x00",  # bad CRC
        PAYLOAD,  # claims gzip but is plain
    ],
)
def test_corrupt_gzip_is_left_untouched(body: bytes) -> None:
    _untouched(body, _headers("gzip", len(body)))


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "gzip, br"])
def test_empty_body_keeps_its_headers(encoding: str) -> None:
    # A HEAD or 304 response announces the encoding and length of a body it does not send.
    headers = _headers(encoding, 1234, ETag='"abc"')
    _untouched(b"", headers)


@pytest.mark.parametrize("body", [b"not deflate at all", zlib.compress(PAYLOAD)[:-6]])
def test_corrupt_deflate_is_left_untouched(body: bytes) -> None:
    _untouched(body, _headers("deflate", len(body)))


@pytest.mark.parametrize("encoding", ["compress", "bogus", "gzip, bogus", "x-custom"])
def test_unknown_encoding_is_left_untouched(encoding: str) -> None:
    body = gzip.compress(PAYLOAD, mtime=0)
    _untouched(body, _headers(encoding, len(body)))


@pytest.mark.parametrize("encoding", ["identity", "", " , "])
def test_nothing_to_undo_leaves_headers_alone(encoding: str) -> None:
    # No coding is undone, so the recorded headers must stay exactly as received.
    _untouched(PAYLOAD, _headers(encoding, len(PAYLOAD)))


def test_undecodable_binary_is_base64_with_encoding_kept() -> None:
    body = b"\x1f\x8b\x08\x00\xff\xfe\xfd"
    records, back = _store(body, _headers("gzip", len(body)))
    assert "base64" in records[2]["body"]
    assert back.response_body == body


def test_request_bodies_are_stored_decoded_as_responses_are() -> None:
    encoded = gzip.compress(PAYLOAD, mtime=0)
    request_headers = {"Content-Encoding": ["gzip"], "Content-Type": ["application/json"]}
    item = Interaction("POST", "http://h/", request_headers, encoded, 200, "OK", {}, b"")
    text = cassette_file.write(Cassette(cassette_file.new_header("t"), [item]))
    back = cassette_file.read(text.encode(), "c.jsonl").interactions[0]
    assert back.request_body == PAYLOAD
    assert back.request_headers == {"Content-Type": ["application/json"]}


def test_a_request_body_that_does_not_decode_is_stored_as_sent() -> None:
    not_gzip = b"\x1f\x8b not really gzip"
    request_headers = {"Content-Encoding": ["gzip"], "Content-Type": ["application/json"]}
    item = Interaction("POST", "http://h/", request_headers, not_gzip, 200, "OK", {}, b"")
    text = cassette_file.write(Cassette(cassette_file.new_header("t"), [item]))
    back = cassette_file.read(text.encode(), "c.jsonl").interactions[0]
    assert back.request_body == not_gzip
    assert back.request_headers == request_headers


@SETTINGS
@given(
    data=st.binary(max_size=300) | st.text(max_size=200).map(str.encode),
    coding=st.sampled_from(["gzip", "deflate", "deflate-raw", "gzip-members"]),
)
def test_any_payload_decodes_exactly(data: bytes, coding: str) -> None:
    if coding == "gzip":
        encoded, name = gzip.compress(data, mtime=0), "gzip"
    elif coding == "gzip-members":
        encoded, name = gzip.compress(data[:7], mtime=0) + gzip.compress(data[7:], mtime=0), "gzip"
    elif coding == "deflate":
        encoded, name = zlib.compress(data), "deflate"
    else:
        encoded, name = _raw_deflate(data), "deflate"
    body, headers = compression.decode_content(encoded, {"content-encoding": [name]})
    assert body == data
    assert headers == {}


@pytest.mark.skipif(
    not HAS_BROTLI, reason="brotli is not installed (pip install llmcassette[brotli])"
)
def test_brotli() -> None:
    import brotli  # type: ignore[import-not-found,unused-ignore]

    encoded = brotli.compress(PAYLOAD)
    records, back = _store(encoded, _headers("br", len(encoded)))
    assert records[2]["body"] == {"json": json.loads(PAYLOAD)}
    assert back.response_body == PAYLOAD
    chained = brotli.compress(gzip.compress(PAYLOAD, mtime=0))
    body, headers = compression.decode_content(chained, _headers("gzip, br", len(chained)))
    assert body == PAYLOAD
    assert "Content-Encoding" not in headers


@pytest.mark.skipif(
    not HAS_ZSTD, reason="zstandard is not installed (pip install llmcassette[zstd])"
)
def test_zstd() -> None:
    import zstandard  # type: ignore[import-not-found,unused-ignore]

    encoded = zstandard.ZstdCompressor().compress(PAYLOAD)
    records, back = _store(encoded, _headers("zstd", len(encoded)))
    assert records[2]["body"] == {"json": json.loads(PAYLOAD)}
    assert back.response_body == PAYLOAD
    # streamed frames (no content size) and several frames one after the other
    streaming = zstandard.ZstdCompressor().compressobj()
    unsized = streaming.compress(PAYLOAD) + streaming.flush()
    two_frames = zstandard.ZstdCompressor().compress(PAYLOAD[:5]) + unsized
    for body, expected in ((unsized, PAYLOAD), (two_frames, PAYLOAD[:5] + PAYLOAD)):
        decoded, headers = compression.decode_content(body, _headers("zstd", len(body)))
        assert decoded == expected
        assert headers["Content-Length"] == [str(len(expected))]


@pytest.mark.skipif(
    not HAS_ZSTD, reason="zstandard is not installed (pip install llmcassette[zstd])"
)
@pytest.mark.parametrize("cut", [1, 3, 20])
def test_truncated_zstd_is_left_untouched(cut: int) -> None:
    import zstandard  # type: ignore[import-not-found,unused-ignore]

    encoded = zstandard.ZstdCompressor().compress(PAYLOAD)
    _untouched(encoded[:-cut], _headers("zstd", len(encoded) - cut))
    _untouched(encoded + b"junk", _headers("zstd", len(encoded) + 4))


@pytest.mark.skipif(
    not HAS_BROTLI, reason="brotli is not installed (pip install llmcassette[brotli])"
)
@pytest.mark.parametrize("cut", [1, 5])
def test_truncated_brotli_is_left_untouched(cut: int) -> None:
    import brotli  # type: ignore[import-not-found,unused-ignore]

    encoded = brotli.compress(PAYLOAD)
    _untouched(encoded[:-cut], _headers("br", len(encoded) - cut))


# ---------------------------------------------------------------- decompression bombs

BOMB_SIZE = 64 * 1024  # what the bomb stands for; the tests set the limit below it
SMALL_LIMIT = 4096


def _bombs() -> list[object]:
    zeros = b"\0" * BOMB_SIZE
    found = [
        pytest.param("gzip", gzip.compress(zeros, mtime=0), id="gzip"),
        pytest.param("deflate", zlib.compress(zeros), id="deflate"),
        pytest.param("deflate", _raw_deflate(zeros), id="raw-deflate"),
    ]
    for coding, compress in _optional_compressors().items():
        found.append(pytest.param(coding, compress(zeros), id=coding))
    return found


def _optional_compressors() -> dict[str, Callable[[bytes], bytes]]:
    found: dict[str, Callable[[bytes], bytes]] = {}
    for name in ("brotli", "brotlicffi"):
        if "br" in compression.DECODERS and _importable(name):
            found.setdefault("br", importlib.import_module(name).compress)
    for name in ("zstandard", "compression.zstd", "backports.zstd"):
        if "zstd" in compression.DECODERS and _importable(name):
            found.setdefault("zstd", importlib.import_module(name).compress)
    return found


@pytest.mark.parametrize(("coding", "bomb"), _bombs())
def test_a_body_past_the_limit_is_left_as_it_is(
    coding: str, bomb: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decoder stops one byte past the limit: a bomb never reaches memory whole."""
    monkeypatch.setenv(compression.MAX_DECODED_BYTES_ENV, str(SMALL_LIMIT))
    with pytest.raises(compression.DecodedTooLarge) as raised:
        compression.DECODERS[coding](bomb)
    assert raised.value.limit == SMALL_LIMIT
    headers = _headers(coding, len(bomb))
    assert compression.decode_content(bomb, headers) == (bomb, headers)
    assert compression.too_large(bomb, headers) is not None
    monkeypatch.setenv(compression.MAX_DECODED_BYTES_ENV, str(BOMB_SIZE))
    assert compression.decode_content(bomb, headers)[0] == b"\0" * BOMB_SIZE


def test_a_cassette_with_a_bomb_is_refused_at_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = gzip.compress(b"\0" * BOMB_SIZE, mtime=0)
    records = [
        {"format": "llmcassette", "format_version": 2},
        {"type": "request", "method": "GET", "uri": "http://h/"},
        {
            "type": "response",
            "status": 200,
            "headers": {"content-encoding": "gzip"},
            "body": {"base64": base64.b64encode(bomb).decode()},
        },
        {"type": "end", "events": 0},
    ]
    data = "".join(json.dumps(record) + "\n" for record in records).encode()
    monkeypatch.setenv(compression.MAX_DECODED_BYTES_ENV, str(SMALL_LIMIT))
    with pytest.raises(CassetteFormatError) as raised:
        cassette_file.read(data, "c.jsonl")
    assert raised.value.line == 3
    assert f"decompresses (gzip) to more than {SMALL_LIMIT} bytes" in raised.value.problem
    assert compression.MAX_DECODED_BYTES_ENV in (raised.value.hint or "")
    monkeypatch.setenv(compression.MAX_DECODED_BYTES_ENV, str(BOMB_SIZE))
    assert cassette_file.read(data, "c.jsonl").interactions[0].response_body == bomb


@pytest.mark.parametrize("value", ["x", "0", "-5", "1e9"])
def test_a_wrong_limit_is_a_config_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compression.MAX_DECODED_BYTES_ENV, value)
    body = gzip.compress(PAYLOAD, mtime=0)
    with pytest.raises(ConfigError, match=compression.MAX_DECODED_BYTES_ENV):
        compression.decode_content(body, _headers("gzip", len(body)))


class _BrotliBefore12:
    """brotli as versions before 1.2 are: a Decompressor that decodes all it is given,
    with no output limit (real brotli underneath)."""

    def __init__(self) -> None:
        self.compress = pytest.importorskip("brotli").compress

    class Decompressor:
        def __init__(self) -> None:
            self._real = pytest.importorskip("brotli").Decompressor()

        def process(self, data: bytes) -> bytes:
            return bytes(self._real.process(data))

        def is_finished(self) -> bool:
            return bool(self._real.is_finished())


def _real_bomb(kind: str) -> tuple[Callable[[bytes], bytes], bytes]:
    """A decoder of llmcassette's and 32 MiB of zeros in a few KiB that it must refuse."""
    zeros = b"\0" * (32 * 1024 * 1024)
    if kind == "br<1.2":
        old = _BrotliBefore12()
        return compression._unbrotli(old), old.compress(zeros)
    if kind == "zstandard":  # the zstandard decoder even where the stdlib's is preferred
        zstandard: Any = pytest.importorskip("zstandard")
        return compression._unzstd_with(zstandard), zstandard.compress(zeros)
    compressors = {"gzip": gzip.compress, "deflate": zlib.compress, **_optional_compressors()}
    if kind not in compressors:
        pytest.skip(f"no {kind} decoder installed")
    return compression.DECODERS[kind], compressors[kind](zeros)


@pytest.mark.parametrize("kind", ["gzip", "deflate", "br", "zstd", "br<1.2", "zstandard"])
def test_a_real_bomb_never_reaches_memory_whole(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """32 MiB of zeros in a few KiB: every decoder stops near a 1 MiB limit, and no more
    than a few MiB is ever held (brotli before 1.2 and zstandard have no output limit of
    their own: they are fed the body in small pieces)."""
    decoder, bomb = _real_bomb(kind)
    limit = 1024 * 1024
    monkeypatch.setenv(compression.MAX_DECODED_BYTES_ENV, str(limit))
    tracemalloc.start()
    try:
        with pytest.raises(compression.DecodedTooLarge):
            decoder(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(bomb) < 100_000
    assert peak < 20 * limit
