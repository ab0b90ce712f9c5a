"""A request body the client compressed (``content-encoding: gzip``) is decoded, redacted
and stored decoded, as a response body is; it replays against the same request sent
compressed again.

Found by a red-team pass: such a body holding a key was refused by the fail-closed scan
(``SecretLeakError``) although the redactor could read it.
"""

from __future__ import annotations

import gzip
import json
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

import llmcassette
from llmcassette import CassetteMismatch
from llmcassette.cassette.compression import MAX_DECODED_BYTES_ENV
from llmcassette.errors import UNSCANNABLE_BODY, SecretLeakError

from ._server import serving

KEY = "sk-proj-" + "Zq8Rt3Lm7Xv2Nc5Hb9Wd4Kf6Jp1Gs0Ty3Ue8Io2Pa7Sd5Fg"
COMPRESS = {"gzip": gzip.compress, "deflate": zlib.compress}


class _Received(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        _Received.bodies.append(body)
        answer = json.dumps({"id": "chatcmpl-1", "received": len(body)}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def _send(url: str, coding: str, content: str = "hello", mtime: int = 1) -> Any:
    payload = json.dumps({"model": "m", "api_key": KEY, "content": content}).encode()
    body = gzip.compress(payload, mtime=mtime) if coding == "gzip" else COMPRESS[coding](payload)
    headers = {"content-type": "application/json", "content-encoding": coding}
    return httpx.post(url, content=body, headers=headers, timeout=5).json()


@pytest.mark.parametrize("serializer", ["jsonl", "yaml"])
@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compressed_request_body_is_redacted_and_replays(
    tmp_path: Path, coding: str, serializer: str
) -> None:
    path = tmp_path / f"c.{serializer}"
    _Received.bodies = []
    with serving(_Received) as base:
        url = f"{base}/v1/chat/completions"
        with llmcassette.use_cassette(path, serializer=serializer, record_mode="once"):
            live = _send(url, coding)
    assert zlib.decompress(_Received.bodies[0], zlib.MAX_WBITS | 32)  # sent compressed
    text = path.read_text()
    assert KEY not in text
    assert "<REDACTED:" in text
    # Stored decoded: readable, without the content-encoding it no longer has.
    assert "hello" in text
    assert "content-encoding" not in text.lower()

    # The server is gone; gzip stamps another time in its header: other bytes, same JSON.
    with llmcassette.use_cassette(path, serializer=serializer, record_mode="none"):
        assert _send(url, coding, mtime=2) == live
    with (
        llmcassette.use_cassette(path, serializer=serializer, record_mode="none"),
        pytest.raises(CassetteMismatch, match=r"content"),
    ):
        _send(url, coding, content="goodbye")


def test_a_request_body_over_the_decompression_limit_is_not_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_DECODED_BYTES_ENV, "64")  # the JSON sent is longer
    path = tmp_path / "c.jsonl"
    with (
        serving(_Received) as base,
        pytest.raises(SecretLeakError) as refused,
        llmcassette.use_cassette(path, record_mode="once"),
    ):
        _send(f"{base}/v1/chat/completions", "gzip")
    # Left compressed, it could hold anything: refused, as a body no rule could read.
    assert refused.value.rule == UNSCANNABLE_BODY
    assert MAX_DECODED_BYTES_ENV in refused.value.hint  # the way out for a large body
    assert not path.exists()
