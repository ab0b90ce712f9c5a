"""vcrpy's serializers (yaml, json) and a user's own keep the JSONL promise: no secret written.

Found by a red-team pass: a token a response hands out and a later request sends back was
left in the requests (they were redacted as sent, before the response taught it); a gzip
request body was not read by the scan; and the text of a serializer that does not read back
as a vcrpy cassette was not scanned at all.
"""

from __future__ import annotations

import gzip
import json
import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
import vcr
import yaml

import llmcassette
from llmcassette.errors import SecretLeakError

from ._server import serving
from .test_rules import OPENAI

TOKEN = "tok_9fK2mQ7xLp4Rv8Zs1Wd6Hy3Nc5Bj0Tg"  # no known shape: a secret by its key name only


class TokenServer(BaseHTTPRequestHandler):
    """``POST /oauth/token`` hands out ``TOKEN``; every other call answers ``{"ok": true}``."""

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        token = self.path.startswith("/oauth/token")
        body = json.dumps({"access_token": TOKEN, "token_type": "bearer"} if token else {"ok": 1})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    do_GET = do_POST = _answer


@pytest.mark.parametrize("serializer", ["jsonl", "yaml", "json"])
def test_a_token_a_response_handed_out_is_taken_out_of_later_requests(
    tmp_path: Path, serializer: str
) -> None:
    path = tmp_path / f"learnt.{serializer}"
    with (
        serving(TokenServer) as base,
        llmcassette.use_cassette(str(path), record_mode="all", serializer=serializer),
        httpx.Client() as client,
    ):
        token = client.post(base + "/oauth/token", data={"grant_type": "x"}).json()
        client.get(f"{base}/v1/sessions/{token['access_token']}/messages")
        client.post(base + "/v1/chat", json={"session": token["access_token"], "q": "hi"})
    text = path.read_text()
    assert TOKEN not in text
    assert text.count("<REDACTED:") >= 3


def test_a_key_in_a_gzip_request_body_is_redacted(tmp_path: Path) -> None:
    path = tmp_path / "gzip.yaml"
    body = gzip.compress(json.dumps({"note": f"my key is {OPENAI}"}).encode())
    with (
        serving(TokenServer) as base,
        llmcassette.use_cassette(str(path), record_mode="all", serializer="yaml"),
    ):
        httpx.post(
            base + "/v1/chat",
            content=body,
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )
    request = yaml.safe_load(path.read_text())["interactions"][0]["request"]
    assert json.loads(request["body"]) == {"note": "my key is <REDACTED:openai-api-key>"}
    assert "content-encoding" not in request["headers"]  # stored decoded


class OwnFormat:
    """A serializer of the user's own, whose text does not read back as a vcrpy cassette:
    request bodies written decoded, under ``episodes``, from a content-encoding of its own
    that llmcassette cannot undo (``x-reversed``: the bytes backwards)."""

    @staticmethod
    def serialize(data: dict[str, Any]) -> str:
        episodes = []
        for entry in data["interactions"]:
            body = entry["request"]["body"] or b""
            body = body.encode() if isinstance(body, str) else body  # vcrpy's text as str
            if entry["request"]["headers"].get("content-encoding") == ["x-reversed"]:
                body = body[::-1]
            episodes.append({"uri": entry["request"]["uri"], "sent": body.decode()})
        return json.dumps({"episodes": episodes})

    @staticmethod
    def deserialize(text: str) -> dict[str, Any]:
        raise NotImplementedError


@pytest.mark.parametrize("planted", [True, False])
def test_text_of_a_serializer_of_ones_own_is_scanned(tmp_path: Path, planted: bool) -> None:
    my_vcr = vcr.VCR()
    my_vcr.register_serializer("own", OwnFormat)
    # The body is stored as it is (no rule reads it): only the serializer's text shows it.
    llmcassette.configure(my_vcr, redaction={"allow_unscanned_bodies": True})
    path = tmp_path / "own.txt"
    note = f"my key is {OPENAI}" if planted else "nothing secret"
    with serving(TokenServer) as base:

        def call() -> None:
            with my_vcr.use_cassette(str(path), serializer="own", record_mode="all"):
                httpx.post(
                    base + "/v1/chat",
                    content=json.dumps({"note": note}).encode()[::-1],
                    headers={"content-type": "application/json", "content-encoding": "x-reversed"},
                )

        if planted:
            with pytest.raises(SecretLeakError, match="openai-api-key"):
                call()
            assert not os.path.exists(path)
        else:
            call()
            assert "nothing secret" in path.read_text()
