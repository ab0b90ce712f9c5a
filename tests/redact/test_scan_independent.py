"""The fail-closed scan is a second look of its own: with a redactor that redacts nothing,
a cassette that holds a key is refused and nothing is written, wherever the key is.

The scan reads the final text of every line through ``llmcassette.redact.rules``; it takes
no verdict, cache or "already checked" set from the redactor or the writer. These tests
prove it by breaking redaction completely and saving anyway, through the real save path.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vcr.cassette import Cassette
from vcr.request import Request

import llmcassette
from llmcassette import _eventstream as wire
from llmcassette._vcr import serializer as jsonl
from llmcassette._vcr.persister import Persister
from llmcassette.errors import SecretLeakError
from llmcassette.redact import RedactionConfig, Redactor
from llmcassette.testing import LocalProvider, StreamBehaviour

from .test_rules import ANTHROPIC, OPENAI, OPENAI_2

GOOGLE = "AIza" + "Sy" + "Q" * 33


class NothingRedacted(Redactor):
    """A redactor with every redaction method returning its input unchanged."""

    def text(self, value: str) -> str:
        return value

    def secret(self, value: str, kind: str) -> str:
        return value

    def header_value(self, name: str, value: str, action: str | None = None) -> str:
        return value

    def headers(self, headers: Any) -> dict[str, Any]:
        return dict(headers)

    def params(self, query: str) -> str:
        return query

    def uri(self, uri: str) -> str:
        return uri

    def json(self, value: Any, path: tuple[str, ...] = ()) -> Any:
        return value

    def body_text(self, text: str, content_type: str) -> str:
        return text

    def body_bytes(self, body: bytes, content_type: str) -> bytes:
        return body

    def body_record(self, body: dict[str, Any] | None, content_type: str) -> Any:
        return body

    def events(self, records: list[dict[str, Any]]) -> None:
        return None

    def records(
        self, request: Any, response: Any, events: Any, *, request_redacted: bool = False
    ) -> bool:
        return False

    def vcr_request(self, request: Any) -> Any:
        return request

    def vcr_response(self, response: dict[str, Any], uri: str | None = None) -> dict[str, Any]:
        return response

    def known(self, text: str) -> str:
        return text


JSON = {"content-type": ["application/json"]}
SSE = {"content-type": ["text/event-stream"]}


def _exchange(
    uri: str = "https://api.example.test/v1/chat",
    request_headers: dict[str, str] | None = None,
    request_body: bytes = b'{"q": "hello"}',
    response_headers: dict[str, list[str]] | None = None,
    response_body: bytes = b'{"a": "fine"}',
) -> dict[str, Any]:
    """vcrpy's cassette dict (as the persister gets it) with one interaction."""
    headers = {"content-type": "application/json", **(request_headers or {})}
    request = Request("POST", uri, request_body, headers)
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": response_headers or JSON,
        "body": {"string": response_body},
    }
    return {"requests": [request], "responses": [response]}


# Each location a key can sit in, one key each, and where the scan must find it.
LOCATIONS = {
    "request JSON body": (
        _exchange(request_body=json.dumps({"q": "hi", "api_key": "plain-key-0123"}).encode()),
        (2, "body.json.api_key"),
    ),
    "request JSON body, by shape": (
        _exchange(request_body=json.dumps({"messages": [{"content": OPENAI}]}).encode()),
        (2, "body.json.messages[0].content"),
    ),
    "response JSON body": (
        _exchange(response_body=json.dumps({"token_info": GOOGLE}).encode()),
        (3, "body.json.token_info"),
    ),
    "request header": (
        _exchange(request_headers={"authorization": f"Bearer {OPENAI}"}),
        (2, "headers.authorization"),
    ),
    "response header": (
        _exchange(response_headers={**JSON, "openai-organization": ["org-Planted42"]}),
        (3, "headers.openai-organization"),
    ),
    "URL query parameter": (
        _exchange(uri="https://api.example.test/v1/chat?key=not-shaped-123"),
        (2, "uri"),
    ),
    "request body that is not UTF-8 (a multipart upload with a file), stored as base64": (
        _exchange(
            request_headers={"content-type": "multipart/form-data; boundary=b"},
            request_body=(
                b'--b\r\nContent-Disposition: form-data; name="file"\r\n\r\n\xff\xd8\xff\xe0'
                b'\r\n--b\r\nContent-Disposition: form-data; name="note"\r\n\r\n'
                + OPENAI.encode()
                + b"\r\n--b--\r\n"
            ),
        ),
        (2, "body"),
    ),
    "a response body in UTF-16 (its byte order mark is no UTF-8), stored as base64": (
        _exchange(
            response_headers={"content-type": ["text/plain; charset=utf-16"]},
            response_body=f"key {OPENAI}".encode("utf-16"),
        ),
        (3, "body"),
    ),
    "a response body in UTF-16 without a byte order mark (UTF-8 too, NULs in its text)": (
        _exchange(
            response_headers={"content-type": ["text/plain; charset=utf-16-le"]},
            response_body=f"key {OPENAI}".encode("utf-16-le"),
        ),
        (3, "body.text"),
    ),
    "AWS event-stream frame cut short, kept as its bytes": (
        _exchange(
            response_headers={"content-type": ["application/vnd.amazon.eventstream"]},
            response_body=wire.encode_frame(
                wire.string_headers([(":event-type", "contentBlockDelta")]),
                json.dumps({"delta": {"text": f"my key is {ANTHROPIC}"}}).encode(),
            )[:-4],  # the CRC of the message is missing: the frame cannot be read
        ),
        (4, "base64"),
    ),
    "Bedrock InvokeModel chunk, its text in base64": (
        _exchange(
            response_headers={"content-type": ["application/vnd.amazon.eventstream"]},
            response_body=wire.encode_frame(
                wire.string_headers([(":event-type", "chunk"), (":message-type", "event")]),
                json.dumps(
                    {
                        "bytes": base64.b64encode(
                            json.dumps({"delta": {"text": f"my key is {ANTHROPIC}"}}).encode()
                        ).decode()
                    }
                ).encode(),
            ),
        ),
        (4, "data.bytes.delta.text"),
    ),
    "base64 text in a request JSON body": (
        _exchange(
            request_body=json.dumps(
                {"file": {"data": base64.b64encode(f"key={OPENAI}".encode()).decode()}}
            ).encode()
        ),
        (2, "body.json.file.data"),
    ),
    "the cassette's metadata (cassette.get_metadata)": (
        {**_exchange(), "metadata": {"token": GOOGLE}},
        (1, "metadata.token"),
    ),
    "a key of a request JSON object": (
        _exchange(request_body=json.dumps({"q": "hi", "metadata": {OPENAI: "primary"}}).encode()),
        (2, "body.json.metadata.<a key: REDACTED:openai-api-key>"),
    ),
    "a key of JSON text held in a string": (
        _exchange(request_body=json.dumps({"arguments": json.dumps({GOOGLE: 1})}).encode()),
        (2, "body.json.arguments<json>.<a key: REDACTED:google-api-key>"),
    ),
    "a response header's name": (
        _exchange(response_headers={**JSON, ANTHROPIC: ["1"]}),
        (3, "headers.<a key: REDACTED:anthropic-api-key>"),
    ),
    "a key of a streamed event": (
        _exchange(
            response_headers=SSE,
            response_body=(
                "data: " + json.dumps({"choices": [], "usage": {ANTHROPIC: 1}}) + "\n\n"
                "data: [DONE]\n\n"
            ).encode(),
        ),
        (4, "data.usage.<a key: REDACTED:anthropic-api-key>"),
    ),
    "a header that redaction drops (cf-ray), written anyway": (
        _exchange(response_headers={**JSON, "cf-ray": [OPENAI]}),
        (3, "headers.cf-ray"),
    ),
    "a header value sent as bytes (vcrpy writes it as !!binary)": (
        _exchange(request_headers={"x-trace": f"Bearer {OPENAI}".encode()}),  # type: ignore[dict-item]
        (2, "headers.x-trace"),
    ),
    'a "headers" object in a body: a header that redaction drops': (
        _exchange(request_body=json.dumps({"headers": {"cf-ray": OPENAI}}).encode()),
        (2, "body.json.headers.cf-ray"),
    ),
    'a "headers" object in a body: a value that is an object': (
        _exchange(
            request_body=json.dumps({"headers": {"x-meta": {"api_key": "plain-key-0123"}}}).encode()
        ),
        (2, "body.json.headers.x-meta.api_key"),
    ),
    'a "headers" object in a body: a list of objects': (
        _exchange(request_body=json.dumps({"headers": {"x-meta": [{"k": GOOGLE}]}}).encode()),
        (2, "body.json.headers.x-meta[0].k"),
    ),
    "a URL-encoded form body, the key its first field": (
        _exchange(
            request_headers={"content-type": "application/x-www-form-urlencoded"},
            request_body=b"api_key=plain-key-0123&q=hi",
        ),
        (2, "body.text"),
    ),
    "a multipart form field, the body all text": (
        _exchange(
            request_headers={"content-type": "multipart/form-data; boundary=b"},
            request_body=b'--b\r\nContent-Disposition: form-data; name="api_key"\r\n\r\n'
            b"plain-key-0123\r\n--b--\r\n",
        ),
        (2, "body.text"),
    ),
    'JSON text held by a "uri" key': (
        _exchange(
            request_body=json.dumps({"uri": json.dumps({"api_key": "plain-key-0123"})}).encode()
        ),
        (2, "body.json.uri<json>.api_key"),
    ),
    "a secret key's value in a streamed SSE event": (
        _exchange(
            response_headers=SSE,
            response_body=b'data: {"access_token": "plain-key-0123"}\n\ndata: [DONE]\n\n',
        ),
        (4, "data.access_token"),
    ),
    "a secret key's value in a streamed NDJSON event": (
        _exchange(
            response_headers={"content-type": ["application/x-ndjson"]},
            response_body=b'{"n": 1}\n{"password": "x9Y8w7V6u5T4s3R2q1P0"}\n',
        ),
        (5, "data.password"),
    ),
    "an AWS event-stream frame's header of type bytes": (
        _exchange(
            response_headers={"content-type": ["application/vnd.amazon.eventstream"]},
            response_body=wire.encode_frame(
                (
                    *wire.string_headers([(":event-type", "contentBlockDelta")]),
                    wire.Header("trace", wire.BYTES, f"key={OPENAI}".encode()),
                ),
                json.dumps({"delta": {"text": "hi"}}).encode(),
            ),
        ),
        (4, "headers.trace.bytes"),
    ),
    "an AWS event-stream frame's payload that is not UTF-8, longer than base64 text is read": (
        _exchange(
            response_headers={"content-type": ["application/vnd.amazon.eventstream"]},
            response_body=wire.encode_frame(
                wire.string_headers([(":event-type", "audio")]),
                b"\xff\xfe" * 40_000 + f" key={ANTHROPIC}".encode(),
            ),
        ),
        (4, "payload_base64"),
    ),
    "a key written with HTML character references (sk&#x2d;proj&#x2d;...)": (
        _exchange(
            response_headers={"content-type": ["text/html"]},
            response_body=f"<p>{OPENAI.replace('-', '&#x2d;')}</p>".encode(),
        ),
        (3, "body.text"),
    ),
    "a key given twice in a JSON body, a placeholder last": (
        _exchange(request_body=b'{"api_key": "plain-key-0123", "api_key": "<REDACTED:api_key>"}'),
        (2, "body.text<json>.api_key"),
    ),
    "a key given twice in a streamed event's JSON": (
        _exchange(
            response_headers=SSE,
            response_body=b'data: {"access_token": "plain-key-0123", "access_token": ""}\n\n',
        ),
        (4, "text<json>.access_token"),
    ),
    "streamed SSE event": (
        _exchange(
            response_headers=SSE,
            response_body=(
                "data: " + json.dumps({"choices": [{"delta": {"content": ANTHROPIC}}]}) + "\n\n"
                "data: [DONE]\n\n"
            ).encode(),
        ),
        (4, "data.choices[0].delta.content"),
    ),
}


@pytest.mark.parametrize("location", list(LOCATIONS))
def test_a_key_is_refused_by_the_scan_when_redaction_does_nothing(
    location: str, tmp_path: Path, nothing_redacted: None
) -> None:
    cassette_dict, (line, json_path) = LOCATIONS[location]
    path = tmp_path / "leak.jsonl"
    persister = Persister(redactor=NothingRedacted(environ={}))
    with pytest.raises(SecretLeakError) as caught:
        persister.save_cassette(path, cassette_dict, serializer=jsonl)
    assert not path.exists()
    assert (line, json_path) in [(f[0], f[1]) for f in caught.value.findings]
    for secret in (OPENAI, ANTHROPIC, GOOGLE, "plain-key-0123", "org-Planted42"):
        assert secret not in str(caught.value)


@pytest.mark.parametrize("location", list(LOCATIONS))
def test_a_yaml_cassette_is_refused_by_the_same_scan(
    location: str, tmp_path: Path, nothing_redacted: None
) -> None:
    from vcr.serializers import yamlserializer

    cassette_dict, _ = LOCATIONS[location]
    if "metadata" in cassette_dict and not hasattr(Cassette, "get_metadata"):
        pytest.skip("this vcrpy writes no cassette metadata, so there is nothing to leak")
    path = tmp_path / "leak.yaml"
    persister = Persister(redactor=NothingRedacted(environ={}))
    with pytest.raises(SecretLeakError) as caught:
        persister.save_cassette(path, cassette_dict, serializer=yamlserializer)
    assert not path.exists()
    assert str(path) in str(caught.value)
    for secret in (OPENAI, ANTHROPIC, GOOGLE, "plain-key-0123", "org-Planted42"):
        assert secret not in str(caught.value)


@pytest.mark.parametrize("location", list(LOCATIONS))
def test_a_refused_save_keeps_the_old_file(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kept.jsonl"
    Persister(redactor=Redactor(environ={})).save_cassette(path, _exchange(), serializer=jsonl)
    before = path.read_bytes()
    _redact_nothing(monkeypatch)
    cassette_dict, _ = LOCATIONS[location]
    with pytest.raises(SecretLeakError):
        Persister(redactor=NothingRedacted(environ={})).save_cassette(
            path, cassette_dict, serializer=jsonl
        )
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    # (the seam writes no metadata: vcrpy hands it the interactions only)
    "location",
    [location for location, (data, _) in LOCATIONS.items() if "metadata" not in data],
)
def test_the_serializer_refuses_too(location: str, nothing_redacted: None) -> None:
    # vcrpy's serializer seam, used by any persister: it builds its redactor itself.
    cassette_dict, _ = LOCATIONS[location]
    interactions = [
        {"request": request._to_dict(), "response": response}
        for request, response in zip(
            cassette_dict["requests"], cassette_dict["responses"], strict=True
        )
    ]
    with pytest.raises(SecretLeakError):
        jsonl.serialize({"interactions": interactions})


def _redact_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Patched on the class itself: whatever redactor a save uses, and whatever a scan that
    # leaned on the redactor would call, redacts nothing.
    for name, method in vars(NothingRedacted).items():
        if callable(method) and not name.startswith("__"):
            monkeypatch.setattr(Redactor, name, method)


@pytest.fixture
def nothing_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``Redactor`` redacts nothing, however the save path gets its redactor."""
    _redact_nothing(monkeypatch)


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        # The whole answer in one event: the scan reads line by line, and a key streamed in
        # pieces over several events is only ever whole for redaction, which joins them.
        running.behaviour = StreamBehaviour(events=1)
        yield running


def _chat(
    provider: LocalProvider, client: httpx.Client, *, stream: bool, then_not_streamed: bool = False
) -> None:
    for streamed in (stream, False) if then_not_streamed else (stream,):
        body = {
            "model": "gpt-4o-mini",
            "stream": streamed,
            "messages": [{"role": "user", "content": f"my key is {OPENAI_2}"}],
        }
        url = f"{provider.openai_base_url}/chat/completions?api_key=plain-query-key"
        headers = {"authorization": f"Bearer {OPENAI}"}
        with client.stream("POST", url, json=body, headers=headers) as response:
            response.read()
        assert response.status_code == 200


def test_recording_with_a_redactor_that_does_nothing_writes_nothing(
    nothing_redacted: None, provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "recorded.jsonl"
    with (
        pytest.raises(SecretLeakError) as caught,
        llmcassette.use_cassette(path, record_mode="once"),
        httpx.Client() as client,
    ):
        _chat(provider, client, stream=True, then_not_streamed=True)
    assert not path.exists()
    found = {(json_path.split("[")[0], rule) for _, json_path, rule in caught.value.findings}
    assert ("uri", "api_key") in found  # URL query parameter
    assert ("headers.authorization", "openai-api-key") in found  # request header
    assert ("body.json.messages", "openai-api-key") in found  # request JSON body
    assert ("headers.openai-organization", "openai-organization") in found  # response header
    assert ("headers.set-cookie", "cookie") in found  # response header
    assert ("data.choices", "openai-api-key") in found  # streamed SSE event (the echo)
    assert ("body.json.choices", "openai-api-key") in found  # response JSON body (the echo)
    for secret in (OPENAI, OPENAI_2, "plain-query-key"):
        assert secret not in str(caught.value)


def test_re_recording_with_a_redactor_that_does_nothing_keeps_the_old_file(
    provider: LocalProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "recorded.jsonl"
    with llmcassette.use_cassette(path, record_mode="once"), httpx.Client() as client:
        _chat(provider, client, stream=True)
    before = path.read_bytes()
    assert OPENAI.encode() not in before
    _redact_nothing(monkeypatch)
    with (
        pytest.raises(SecretLeakError),
        llmcassette.use_cassette(path, record_mode="all"),
        httpx.Client() as client,
    ):
        _chat(provider, client, stream=True)
    assert path.read_bytes() == before


def test_the_scan_holds_no_reference_to_the_redactor() -> None:
    # What the scan reads is the rule set: no method or state of a redactor.
    from llmcassette.redact import scan

    assert "redactor" not in vars(scan)
    rules = Redactor(RedactionConfig(), environ={}).rules
    text = (
        '{"format": "llmcassette", "format_version": 1}\n'
        '{"type": "request", "method": "GET", "uri": "https://h/?token=abc", "headers": {}}\n'
    )
    findings = scan.find_in_jsonl(rules, text, "c.jsonl")
    assert [(f.line, f.json_path, f.rule) for f in findings] == [(2, "uri", "token")]


# Header names of every action, and values of every kind: plain, placeholders, keys and
# shapes, cookies, JSON text holding headers of its own.
_HEADER_NAMES = st.sampled_from(
    [
        "accept",
        "authorization",
        "x-api-key",
        "cookie",
        "set-cookie",
        "x-request-id",
        "openai-organization",
        "user-agent",
        "location",
        "www-authenticate",
        "x-amz-date",
        "cf-ray",
    ]
)
_VALUES = st.sampled_from(
    [
        "text/event-stream",
        "Bearer <REDACTED:bearer-token>",
        "Bearer abcdefgh12345678",
        "session=abc123def456",
        "org-1234567890abcdef",
        "https://h/cb?code=abc&state=x",
        "gzip",
        "",
        "<REDACTED:cookie>",
        "plain words here",
        f"Bearer {OPENAI}",
        "ya29.x",
        '{"headers": {"authorization": "letmein-123456"}}',
        '["a", {"headers": {"cookie": "a=b"}}]',
        "charset=utf-8",
        "a\\u0073k",
    ]
)
# A value that is no string: an event-stream frame's typed header, a body's object.
_OBJECTS = st.dictionaries(st.sampled_from(["bytes", "api_key", "headers"]), _VALUES, max_size=2)
_HEADERS = st.dictionaries(
    _HEADER_NAMES,
    _VALUES | _OBJECTS | st.lists(_VALUES | _OBJECTS, max_size=2),
    max_size=4,
)
_BODIES = st.recursive(
    _VALUES | st.integers(0, 3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["headers", "content", "args", "note"]), inner, max_size=3
        )
        | _HEADERS.map(lambda h: {"headers": h})
    ),
    max_leaves=8,
)


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(st.sampled_from(["request", "response"]), _HEADERS, _BODIES)
def test_a_line_with_headers_is_read_as_the_plain_walk_reads_it(
    kind: str, headers: dict[str, Any], body: Any
) -> None:
    # A headers line in which might_match finds nothing is read by header name only
    # (scan._by_header_name): it must find exactly what the plain walk of the record finds.
    from llmcassette.cassette import lines
    from llmcassette.redact import scan

    rules = Redactor(RedactionConfig(), environ={}).rules
    record = {"type": kind, "uri": "https://h/v1", "headers": headers, "body": {"json": body}}
    line = lines.dump(record)
    found = [(f.json_path, f.rule) for f in scan.find_in_jsonl(rules, "\n" + line, "c.jsonl")]
    parsed = json.loads(line)
    plain = list(scan.find_in_value(rules, parsed, response=kind == "response"))
    assert found == plain


def test_a_cut_event_stream_frame_is_redacted_in_its_bytes(tmp_path: Path) -> None:
    # The frame cannot be read, so it is stored as its bytes: redaction looks inside them
    # as in a body that is not UTF-8, and the save goes through without the key.
    cassette_dict, _ = LOCATIONS["AWS event-stream frame cut short, kept as its bytes"]
    path = tmp_path / "cut.jsonl"
    Persister(redactor=Redactor(environ={})).save_cassette(path, cassette_dict, serializer=jsonl)
    frame = json.loads(path.read_text().splitlines()[3])
    stored = base64.b64decode(frame["base64"])
    assert ANTHROPIC.encode() not in stored
    assert b"my key is <REDACTED:anthropic-api-key>" in stored


@pytest.mark.parametrize("location", [location for location in LOCATIONS if "twice" in location])
def test_a_key_given_twice_is_redacted_each_time(location: str, tmp_path: Path) -> None:
    # Redaction reads such JSON as it is written, so it replaces every value: the scan,
    # which reads every value too, lets the save through.
    cassette_dict, _ = LOCATIONS[location]
    path = tmp_path / "twice.jsonl"
    Persister(redactor=Redactor(environ={})).save_cassette(path, cassette_dict, serializer=jsonl)
    assert "plain-key-0123" not in path.read_text()
