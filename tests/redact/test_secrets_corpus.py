"""The secrets corpus: credentials of every kind, echoed by a server into every part of a
response, recorded through httpx and httpx2 into JSONL and YAML cassettes.

Each credential is sent the way such a credential travels (a bearer header, an ``api-key``
header, a JSON field, the value of an environment variable in a prompt); the server then
echoes it, exactly as received, in a response header, a ``Location`` query, a 401 error
body, a tool call's ``{"key": ...}`` argument, a stream split across two events, a gzip
body, a ``\\u``-escaped and a URL-encoded JSON string, a cookie and plain text. Unshaped values
(a Mistral-style bearer key, an Azure ``api-key``, an AWS secret key, an environment value)
are found only because they were redacted where they were sent: a value redacted anywhere
is redacted everywhere. The bar is 0 bytes of any of them in the written file, in any form
(as written, URL-encoded, JSON-escaped, either half of it, inside the decoded bodies);
base64 of an unshaped value is out of reach and never planted.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import httpx2
import pytest
import yaml

import llmcassette
from llmcassette.cassette import compression

from ._server import serving
from .test_rules import ANTHROPIC, OPENAI


@dataclass(frozen=True)
class Credential:
    name: str
    value: str
    sent_in: str  # "bearer", "api-key", "json" (a secret JSON key) or "env" (a prompt)
    shaped: bool = True


ENV_NAME = "CORPUS_SERVICE_TOKEN"  # a credential-looking variable name: its value is redacted
AWS_ID = "AKIA" + "IOSFODNN7CORPUSZ"
CREDENTIALS = [
    Credential("openai", OPENAI, "bearer"),
    Credential("anthropic", ANTHROPIC, "bearer"),
    Credential("google", "AIza" + "Sy" + "C0rpus-_9" * 3 + "abcdefgh", "bearer"),
    Credential("groq", "gsk_" + "Gr0qC0rpus" * 5 + "xy", "bearer"),
    Credential("github", "ghp_" + "G1tHubC0rpus" * 3, "bearer"),
    Credential("huggingface", "hf_" + "HuggingCorpus" * 2 + "abcdefgh", "bearer"),
    Credential("xai", "xai-" + "X41C0rpus" * 8 + "abcdefgh", "bearer"),
    Credential(
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjb3JwdXMifQ.c29tZS1zaWduYXR1cmUtZm9yLXRoZS1jb3JwdXM",
        "bearer",
    ),
    Credential("unshaped-bearer", "Zq7Xw2Lm9Rt4Yp6Kd3Hs8Vb1Nc5Fg0Jq", "bearer", shaped=False),
    Credential("azure-api-key", "9f3c2a7d" * 4, "api-key", shaped=False),
    Credential("aws-key-id", AWS_ID, "json"),
    Credential("aws-secret", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYC0rpus9KEY", "json", shaped=False),
    Credential("unshaped-env", "EnvC0rpusValue7x9q2w", "env", shaped=False),
]

# Where the server puts the credential it received: one request per location.
LOCATIONS = [
    "header",
    "location",
    "error-401",
    "tool-key",
    "stream-split",
    "gzip",
    "escaped",
    "url-encoded",
    "cookie",
    "text",
]


def _received(handler: BaseHTTPRequestHandler, body: bytes) -> str:
    """The credential the client sent, wherever it sent it."""
    authorization = handler.headers.get("authorization") or ""
    if authorization.startswith("Bearer "):
        return authorization[len("Bearer ") :]
    if handler.headers.get("api-key"):
        return str(handler.headers["api-key"])
    sent = json.loads(body or b"{}")
    return str(sent.get("aws_secret_access_key") or sent.get("aws_access_key_id") or sent["q"])


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        value = _received(self, body)
        where = self.path.rsplit("/", 1)[-1]
        status, headers, out = 200, {"content-type": "application/json"}, b""
        if where == "header":
            headers["x-echoed"] = value
            out = b"{}"
        elif where == "location":
            status = 302
            headers["location"] = f"/next?token={quote(value, safe='')}&page=2"
        elif where == "error-401":
            status = 401
            message = f"Invalid API key: {value}. Check your key."
            out = json.dumps({"error": {"message": message, "type": "auth"}}).encode()
        elif where == "tool-key":
            arguments = json.dumps({"key": value, "city": "Paris"})
            call = {"type": "function", "function": {"name": "login", "arguments": arguments}}
            out = json.dumps({"choices": [{"message": {"tool_calls": [call]}}]}).encode()
        elif where == "stream-split":
            headers["content-type"] = "text/event-stream"
            half = len(value) // 2
            parts = ["Your key is ", value[:half], value[half:], ", keep it."]
            out = "".join(
                "data: " + json.dumps({"choices": [{"delta": {"content": p}}]}) + "\n\n"
                for p in parts
            ).encode()
            out += b"data: [DONE]\n\n"
        elif where == "gzip":
            headers["content-encoding"] = "gzip"
            out = gzip.compress(json.dumps({"echo": f"key={value}"}).encode())
        elif where == "escaped":
            escaped = f"\\u{ord(value[0]):04x}" + value[1:]
            out = ('{"echo": "' + escaped + '"}').encode()
        elif where == "url-encoded":
            out = json.dumps({"next": "/v1?auth=" + quote(value, safe="")}).encode()
        elif where == "cookie":
            headers["set-cookie"] = f"session={value}; Path=/; HttpOnly"
            out = b"{}"
        else:
            headers["content-type"] = "text/plain"
            out = f"the key you sent is {value}\n".encode()
        self.send_response(status)
        for name, header in headers.items():
            self.send_header(name, header)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    with serving(_Echo) as url:
        yield url


CLIENTS = {"httpx": httpx.Client, "httpx2": httpx2.Client}
SERIALIZERS = {"jsonl": ".jsonl", "yaml": ".yaml"}


def _send(client: Any, base: str, credential: Credential) -> list[tuple[int, bytes]]:
    """One request per location, the credential sent its own way; (status, body) of each."""
    seen = []
    for where in LOCATIONS:
        headers: dict[str, str] = {}
        payload: dict[str, Any] = {"model": "m", "where": where}
        if credential.sent_in == "bearer":
            headers["authorization"] = f"Bearer {credential.value}"
        elif credential.sent_in == "api-key":
            headers["api-key"] = credential.value
        elif credential.sent_in == "json":
            if credential.value == AWS_ID:
                payload["aws_access_key_id"] = credential.value
            else:
                payload["aws_secret_access_key"] = credential.value
        else:
            payload["q"] = credential.value
        response = client.post(f"{base}/echo/{where}", json=payload, headers=headers)
        seen.append((response.status_code, response.content))
    return seen


def _forms(value: str, shaped: bool) -> list[str]:
    """The ways ``value`` could be written: as is, URL-encoded, JSON-escaped, each half."""
    half = len(value) // 2
    forms = {value, quote(value, safe=""), json.dumps(value)[1:-1], value[:half], value[half:]}
    if shaped:
        forms.add(base64.b64encode(value.encode()).decode())
    return sorted(forms)


def _leaves(value: Any) -> Iterator[str]:
    """Every string in a parsed cassette, bodies decoded (base64, YAML binary, gzip)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, bytes):
        value, _ = compression.decode_content(value, {"content-encoding": ["gzip"]})
        yield value.decode("latin-1")
    elif isinstance(value, str):
        yield value
        yield unquote(value)


def _parsed(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".yaml":
        return yaml.load(text, Loader=yaml.Loader)  # vcrpy writes !!binary for bytes
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    for record in records:
        body = record.get("body") if isinstance(record, dict) else None
        if isinstance(body, dict) and "base64" in body:
            body["base64"] = base64.b64decode(body["base64"])
    return records


def _leaks(path: Path, credential: Credential) -> list[str]:
    text = path.read_text(encoding="utf-8")
    strings = [text, *_leaves(_parsed(path))]
    return [
        form
        for form in _forms(credential.value, credential.shaped)
        if any(form in string for string in strings)
    ]


@pytest.mark.parametrize("serializer", SERIALIZERS)
@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("credential", CREDENTIALS, ids=[c.name for c in CREDENTIALS])
def test_no_byte_of_a_credential_reaches_the_cassette(
    echo_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    credential: Credential,
    client: str,
    serializer: str,
) -> None:
    monkeypatch.setenv(ENV_NAME, CREDENTIALS[-1].value)
    path = tmp_path / f"corpus{SERIALIZERS[serializer]}"
    options: dict[str, Any] = {"record_errors": True}  # the 401 that echoes the key
    if serializer == "yaml":
        options["serializer"] = "yaml"
    with llmcassette.use_cassette(path, **options), CLIENTS[client]() as live:
        recorded = _send(live, echo_server, credential)
    assert [status for status, _ in recorded] == [200, 302, 401] + [200] * 7
    assert credential.value.encode() in recorded[2][1]  # the server did echo it
    assert _leaks(path, credential) == []
    assert "<REDACTED:" in path.read_text(encoding="utf-8")
    # The cassette replays: the redacted requests match the live ones.
    with llmcassette.use_cassette(path, record_mode="none", **options), CLIENTS[client]() as live:
        replayed = _send(live, echo_server, credential)
    assert [status for status, _ in replayed] == [status for status, _ in recorded]
    assert all(credential.value.encode() not in body for _, body in replayed)


def test_the_corpus_is_as_wide_as_the_bar() -> None:
    kinds = {c.name for c in CREDENTIALS}
    assert len(kinds) >= 11
    assert {"unshaped-bearer", "unshaped-env", "aws-key-id", "aws-secret", "jwt"} <= kinds
    assert {"error-401", "header", "location", "tool-key"} <= set(LOCATIONS)
