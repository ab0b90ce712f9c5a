"""A key in UTF-16 or UTF-32 text is redacted, and refused by the scan, as in UTF-8 text.

Found by a red-team pass: a ``text/plain; charset=utf-16`` response holding a GitHub token
was written to the cassette whole, in JSONL (its bytes as base64) and YAML (``!!binary``)
alike. A body that is not UTF-8 was read as Latin-1, where ASCII text stays readable, but
UTF-16 and UTF-32 put NULs between its characters, and no rule matched them.

The scan's side (a redactor that redacts nothing, the key refused) is in
``test_scan_independent`` (its ``LOCATIONS``).
"""

from __future__ import annotations

import base64
import json
import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import llmcassette

from ._server import serving
from .test_rules import ANTHROPIC, OPENAI

ENCODINGS = ["utf-16", "utf-16-le", "utf-16-be", "utf-32"]  # utf-16/-32 write a BOM first


class WideServer(BaseHTTPRequestHandler):
    """Answers ``/<encoding>`` with text in that encoding holding ``OPENAI``, and
    ``/echo-<encoding>`` with text holding the request's ``x-api-key``."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        encoding = self.path.strip("/").removeprefix("echo-")
        said = self.headers["x-api-key"] if self.path.startswith("/echo-") else OPENAI
        body = f"your key is {said}, keep it safe".encode(encoding)
        self.send_response(200)
        self.send_header("content-type", f"text/plain; charset={encoding}")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _stored_bodies(path: Path) -> list[bytes]:
    """Every body the cassette file holds, as bytes."""
    text = path.read_text(encoding="utf-8")
    bodies: list[bytes] = []
    if path.suffix == ".jsonl":
        for line in text.splitlines():
            body = json.loads(line).get("body") or {}
            if "base64" in body:
                bodies.append(base64.b64decode(body["base64"]))
            elif "text" in body:
                bodies.append(body["text"].encode("utf-8"))
            elif "json" in body:
                bodies.append(json.dumps(body["json"]).encode("utf-8"))
        return bodies
    for interaction in yaml.safe_load(text)["interactions"]:
        for body in (interaction["request"]["body"], interaction["response"]["body"]["string"]):
            bodies.append(body.encode("utf-8") if isinstance(body, str) else body or b"")
    return bodies


def _spellings(secret: str) -> list[bytes]:
    return [secret.encode(encoding) for encoding in ("utf-8", *ENCODINGS)] + [
        secret.encode("utf-32-le"),
        secret.encode("utf-32-be"),
    ]


_BOMS = (b"\xff\xfe\x00\x00", b"\xff\xfe", b"\xfe\xff")


def _holds(data: bytes, secret: str) -> bool:
    # A BOM is written before the text only: the secret's own spelling has none.
    return any(spelled.removeprefix(bom) in data for spelled in _spellings(secret) for bom in _BOMS)


@pytest.mark.parametrize("serializer", ["jsonl", "yaml"])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_key_in_wide_text_is_redacted_in_either_serializer(
    tmp_path: Path, serializer: str, encoding: str
) -> None:
    path = tmp_path / f"wide.{serializer}"
    # The client sends the key in the same encoding: the request is redacted alike.
    sent = f"check {ANTHROPIC} please".encode(encoding)
    with (
        serving(WideServer) as base,
        llmcassette.use_cassette(str(path), record_mode="all", serializer=serializer),
        httpx.Client() as client,
    ):
        live = client.post(f"{base}/{encoding}", content=sent).content
    assert live.decode(encoding).startswith(f"your key is {OPENAI}")  # the caller's is whole

    assert path.exists()
    raw = path.read_bytes()
    for body in [raw, *_stored_bodies(path)]:
        assert not _holds(body, OPENAI)
        assert not _holds(body, ANTHROPIC)
    request_body, response_body = _stored_bodies(path)[:2]
    assert request_body.decode(encoding) == "check <REDACTED:anthropic-api-key> please"
    assert response_body.decode(encoding) == ("your key is <REDACTED:openai-api-key>, keep it safe")

    # Replayed offline, the same request (key and all) matches the recorded one.
    with (
        llmcassette.use_cassette(str(path), record_mode="none", serializer=serializer),
        httpx.Client() as client,
    ):
        replayed = client.post(f"{base}/{encoding}", content=sent)  # the server is gone
    assert replayed.content == response_body


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32-be"])
def test_a_key_the_client_sent_is_taken_out_of_wide_text_that_echoes_it(
    tmp_path: Path, encoding: str
) -> None:
    """A key of no known shape is a secret by the header it was sent in; once replaced
    there, it is a known value, replaced wherever it is written: in wide text too."""
    key = "plain7Unshaped4Key9Value2"
    path = tmp_path / "echo.jsonl"
    with (
        serving(WideServer) as base,
        llmcassette.use_cassette(str(path), record_mode="all"),
        httpx.Client() as client,
    ):
        client.post(f"{base}/echo-{encoding}", content=b"{}", headers={"x-api-key": key})
    assert not _holds(path.read_bytes(), key)
    response_body = _stored_bodies(path)[1]
    assert not _holds(response_body, key)
    assert response_body.decode(encoding).startswith("your key is <REDACTED:")


def test_binary_data_with_nuls_is_left_as_it_is(tmp_path: Path) -> None:
    """Taking the NULs out of binary data must not glue its bytes into a secret's shape:
    audio and images are full of NULs and short runs of letters."""
    noise = os.urandom(1 << 16) + bytes(range(256)) * 64
    wide_words = "".join(f"AKIA{n:04d} key-{n} " for n in range(200)).encode("utf-16-le")
    body = noise + wide_words

    class Binary(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/octet-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    path = tmp_path / "binary.jsonl"
    with (
        serving(Binary) as base,
        llmcassette.use_cassette(str(path), record_mode="all"),
        httpx.Client() as client,
    ):
        client.post(f"{base}/audio", content=b"{}")
    assert _stored_bodies(path)[1] == body
