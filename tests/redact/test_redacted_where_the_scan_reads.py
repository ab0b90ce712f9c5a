"""What the fail-closed scan reads, redaction redacts: traffic with a secret in such a
place records (nothing refused) and replays with the placeholder, in JSONL and YAML.

Each of these places was once read by the scan only, so recording such traffic stopped
with ``SecretLeakError``: an AWS event-stream frame's headers and a payload that is not
UTF-8, a vcrpy response's reason phrase, the secret parameters of a URL under a "uri" key
in a JSON body.
"""

from __future__ import annotations

import base64
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette import _eventstream as wire
from llmcassette.redact.rules import char_refs_decoded

from ._server import serving
from .test_rules import ANTHROPIC, OPENAI

SERIALIZERS = ["jsonl", "yaml"]


def _record_and_replay(
    tmp_path: Path,
    serializer: str,
    body: bytes,
    headers: dict[str, str],
    reason: str = "OK",
) -> tuple[httpx.Response, str]:
    """Serve one answer on 127.0.0.1, record it, replay it with the server gone: the
    response as replayed, and the cassette's text."""

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200, reason)
            for name, value in {**headers, "content-length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    path = tmp_path / f"c.{serializer}"
    options = {} if serializer == "jsonl" else {"serializer": "yaml"}
    with serving(Answer) as url:
        with llmcassette.use_cassette(path, record_mode="once", **options):
            recorded = httpx.post(f"{url}/v1/answer", json={"q": "hi"})
        with llmcassette.use_cassette(path, record_mode="none", **options):
            replayed = httpx.post(f"{url}/v1/answer", json={"q": "hi"})
    assert recorded.status_code == replayed.status_code == 200
    return replayed, path.read_text()


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_an_event_stream_frame_header_is_redacted(tmp_path: Path, serializer: str) -> None:
    frames = wire.encode_frame(
        (
            *wire.string_headers([(":event-type", "contentBlockDelta"), ("note", OPENAI)]),
            wire.Header("trace", wire.BYTES, f"key={ANTHROPIC}".encode()),
        ),
        json.dumps({"delta": {"text": "hi"}}).encode(),
    ) + wire.encode_frame(
        wire.string_headers([(":event-type", "audio")]),
        b"\xff\xfe" + f" key={OPENAI}".encode(),  # not UTF-8: kept as payload_base64
    )

    replayed, text = _record_and_replay(
        tmp_path, serializer, frames, {"content-type": wire.CONTENT_TYPE}
    )
    for secret in (OPENAI, ANTHROPIC):
        assert secret not in text
        assert base64.b64encode(secret.encode()).decode()[:40] not in text
    first, second = wire.decode_frames(
        replayed.content
    )  # lengths and CRCs computed again: they read
    assert first.header("note") == "<REDACTED:openai-api-key>"
    assert first.header("trace") == b"key=<REDACTED:anthropic-api-key>"
    assert second.payload == b"\xff\xfe key=<REDACTED:openai-api-key>"


def test_a_reason_phrase_is_redacted_in_a_yaml_cassette(tmp_path: Path) -> None:
    replayed, text = _record_and_replay(
        tmp_path, "yaml", b'{"a": "fine"}', {"content-type": "application/json"}, f"OK {OPENAI}"
    )
    assert OPENAI not in text
    assert replayed.reason_phrase == "OK <REDACTED:openai-api-key>"


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_a_secret_parameter_under_a_uri_key_is_redacted(tmp_path: Path, serializer: str) -> None:
    # An MCP resource, a file a tool reads: the scan reads a "uri" key as a URL at any depth.
    body = {"contents": [{"uri": "https://files.test/a.txt?token=plainvalue123&v=2"}]}
    replayed, text = _record_and_replay(
        tmp_path, serializer, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    assert "plainvalue123" not in text
    uri = replayed.json()["contents"][0]["uri"]
    assert uri == "https://files.test/a.txt?token=<REDACTED:token>&v=2"


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_a_key_written_with_character_references_is_redacted(
    tmp_path: Path, serializer: str
) -> None:
    # An encoder that writes every character but letters and digits as a reference (OWASP's).
    page = f"<p>your key: {OPENAI.replace('-', '&#x2d;')}</p>".encode()
    replayed, text = _record_and_replay(tmp_path, serializer, page, {"content-type": "text/html"})
    assert OPENAI not in char_refs_decoded(text)
    assert replayed.text == "<p>your key: <REDACTED:openai-api-key></p>"


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_what_json_text_held_in_a_string_holds_is_redacted(tmp_path: Path, serializer: str) -> None:
    # An MCP resource a tool returned, as the tool message's JSON text; a tool's result that
    # quotes a request body as a string. The scan parses such text; redaction searched it.
    resource = {"uri": "https://files.test/a.txt?token=plainvalue123&v=2"}
    quoted = {"request": json.dumps({"api_key": "plainvalue456"})}
    body = {"content": json.dumps(resource), "result": json.dumps(quoted)}
    replayed, text = _record_and_replay(
        tmp_path, serializer, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    assert "plainvalue123" not in text
    assert "plainvalue456" not in text
    answer = replayed.json()
    uri = json.loads(answer["content"])["uri"]
    assert uri == "https://files.test/a.txt?token=<REDACTED:token>&v=2"
    request = json.loads(json.loads(answer["result"])["request"])
    assert request == {"api_key": "<REDACTED:api_key>"}


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_a_headers_object_in_a_body_is_redacted_by_header_name(
    tmp_path: Path, serializer: str
) -> None:
    # A webhook or echo service answers with the headers it was sent (httpbin's /anything).
    # The scan reads a "headers" object by header name, as a request's headers.
    echo = {
        "headers": {
            "Authorization": "Bearer plainvalue123",
            "Cookie": "sid=plainvalue456; theme=dark",
            "X-Goog-Api-Key": "plainvalue789",
            "Accept": "application/json",
        }
    }
    replayed, text = _record_and_replay(
        tmp_path, serializer, json.dumps(echo).encode(), {"content-type": "application/json"}
    )
    for value in ("plainvalue123", "plainvalue456", "plainvalue789"):
        assert value not in text
    assert replayed.json()["headers"] == {
        "Authorization": "<REDACTED:authorization>",  # a secret JSON key first, as before
        "Cookie": "sid=<REDACTED:cookie>; theme=<REDACTED:cookie:2>",
        "X-Goog-Api-Key": "<REDACTED:x-goog-api-key>",
        "Accept": "application/json",
    }


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_an_event_stream_header_named_as_a_credential_is_redacted(
    tmp_path: Path, serializer: str
) -> None:
    frame = wire.encode_frame(
        wire.string_headers([(":event-type", "chunk"), ("x-amz-security-token", "plainvalue123")]),
        b"{}",
    )
    replayed, text = _record_and_replay(
        tmp_path, serializer, frame, {"content-type": wire.CONTENT_TYPE}
    )
    assert "plainvalue123" not in text
    (read,) = wire.decode_frames(replayed.content)
    assert read.header("x-amz-security-token") == "<REDACTED:x-amz-security-token>"
