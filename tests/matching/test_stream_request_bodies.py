"""NDJSON and SSE request bodies are compared event by event, each event as JSON; multipart
bodies (uploads) part by part."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

import llmcassette
from llmcassette.matching.canonical import body_value


class _Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        size = len(self.rfile.read(int(self.headers.get("content-length", 0))))
        body = json.dumps({"received": size}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def sink_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/batch"
    server.shutdown()
    server.server_close()


def ndjson(*records: dict[str, object], spaced: bool = False) -> bytes:
    separators = (", ", ": ") if spaced else (",", ":")
    return "".join(json.dumps(r, separators=separators) + "\n" for r in records).encode()


def test_body_values() -> None:
    assert body_value(ndjson({"a": 1}, {"b": [2]}), "application/x-ndjson") == [
        {"a": 1},
        {"b": [2]},
    ]
    assert body_value(ndjson({"a": 1}, {"b": 2}), None) == [{"a": 1}, {"b": 2}]  # no content-type
    sse = b'event: chunk\ndata: {"n": 1}\n\ndata: [DONE]\n\n'
    assert body_value(sse, "text/event-stream") == [
        {"event": "chunk", "data": {"n": 1}},
        {"data": "[DONE]"},
    ]


def test_ndjson_lines_match_by_value_and_report_the_event(tmp_path: Path, sink_url: str) -> None:
    path = tmp_path / "batch.jsonl"
    headers = {"content-type": "application/x-ndjson"}
    first = ndjson({"custom_id": "a", "prompt": "hi"}, {"custom_id": "b", "prompt": "yo"})
    with llmcassette.use_cassette(path):
        httpx2.post(sink_url, content=first, headers=headers)
    # key order and spacing inside a line do not count
    same = ndjson(
        {"prompt": "hi", "custom_id": "a"}, {"prompt": "yo", "custom_id": "b"}, spaced=True
    )
    with llmcassette.use_cassette(path, record_mode="none"):
        assert httpx2.post(sink_url, content=same, headers=headers).json() == {
            "received": len(first)
        }
    changed = ndjson({"custom_id": "a", "prompt": "hi"}, {"custom_id": "b", "prompt": "bye"})
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as raised,
    ):
        httpx2.post(sink_url, content=changed, headers=headers)
    assert str(raised.value).startswith("body[1].prompt: recorded 'yo', incoming 'bye'")


def test_sse_request_bodies_match_event_by_event(tmp_path: Path, sink_url: str) -> None:
    path = tmp_path / "sse.jsonl"
    headers = {"content-type": "text/event-stream"}
    with llmcassette.use_cassette(path):
        httpx2.post(sink_url, content=b'event: a\ndata: {"x": 1, "y": 2}\n\n', headers=headers)
    with llmcassette.use_cassette(path, record_mode="none"):
        httpx2.post(sink_url, content=b'event: a\ndata: {"y":2,"x":1}\n\n', headers=headers)
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as raised,
    ):
        httpx2.post(sink_url, content=b'event: a\ndata: {"x": 1, "y": 3}\n\n', headers=headers)
    assert str(raised.value).startswith("body[0].data.y: recorded 2, incoming 3")


def test_stream_false_is_the_same_as_no_stream_by_default(tmp_path: Path, sink_url: str) -> None:
    path = tmp_path / "plain.jsonl"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with llmcassette.use_cassette(path):
        httpx2.post(sink_url, json=body)
    with llmcassette.use_cassette(path, record_mode="none"):
        httpx2.post(sink_url, json={**body, "stream": False})
    with (
        llmcassette.use_cassette(path, record_mode="none", match={"sdk_defaults": False}),
        pytest.raises(
            llmcassette.CassetteMismatch, match=r"body\.stream: recorded \(absent\), incoming False"
        ),
    ):
        httpx2.post(sink_url, json={**body, "stream": False})
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(
            llmcassette.CassetteMismatch, match=r"body\.stream: recorded \(absent\), incoming True"
        ),
    ):
        httpx2.post(sink_url, json={**body, "stream": True})


def test_an_empty_value_is_the_same_as_no_field_by_default(tmp_path: Path, sink_url: str) -> None:
    """ollama's client sent ``format``, ``options`` and ``keep_alive`` empty and left out
    ``tools``; a later release does the reverse (OpenLLMetry's Ollama cassettes)."""
    path = tmp_path / "empty.jsonl"
    call = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}
    recorded = {
        "model": "m",
        "messages": [{**call, "content": ""}],
        "format": "",
        "options": {},
        "keep_alive": None,
    }
    with llmcassette.use_cassette(path):
        httpx2.post(sink_url, json=recorded)
    sent_now = {"model": "m", "messages": [call], "tools": [], "options": {"seed": None}}
    with llmcassette.use_cassette(path, record_mode="none"):
        httpx2.post(sink_url, json=sent_now)
    with (
        llmcassette.use_cassette(path, record_mode="none", match={"sdk_defaults": False}),
        pytest.raises(llmcassette.CassetteMismatch, match=r"body\.format: recorded '', incoming"),
    ):
        httpx2.post(sink_url, json=sent_now)
    for changed in ({"format": "json"}, {"options": {"temperature": 0}}, {"stream": True}):
        with (
            llmcassette.use_cassette(path, record_mode="none"),
            pytest.raises(llmcassette.CassetteMismatch),
        ):
            httpx2.post(sink_url, json={**sent_now, **changed})


def test_the_prompt_cache_key_is_left_out_by_default(tmp_path: Path, sink_url: str) -> None:
    """The OpenAI Agents SDK makes up a new ``prompt_cache_key`` for every run."""
    path = tmp_path / "agents.jsonl"
    body = {"model": "gpt-4o", "input": "hi", "prompt_cache_key": "agents-sdk:run:5d1e"}
    with llmcassette.use_cassette(path):
        httpx2.post(sink_url, json=body)
    with llmcassette.use_cassette(path, record_mode="none"):
        httpx2.post(sink_url, json={**body, "prompt_cache_key": "agents-sdk:run:77aa"})
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch, match=r"body\.input: recorded 'hi'"),
    ):
        httpx2.post(sink_url, json={**body, "input": "bye"})


def test_the_hint_names_the_ignore_option_for_the_differing_path(
    tmp_path: Path, sink_url: str
) -> None:
    path = tmp_path / "hint.jsonl"
    with llmcassette.use_cassette(path):
        httpx2.post(sink_url, json={"metadata": {"request_id": "a"}})
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as raised,
    ):
        httpx2.post(sink_url, json={"metadata": {"request_id": "b"}})
    assert "if body.metadata.request_id changes on every run, leave it out: " in str(raised.value)
    assert "match={'ignore': ['$.metadata.request_id']}" in str(raised.value)


def upload(url: str, content: bytes, purpose: str = "batch") -> httpx2.Response:
    # httpx2 makes up a new multipart boundary for every request, as every client does
    files = {"file": ("batch.jsonl", content, "application/jsonl")}
    return httpx2.post(url, data={"purpose": purpose}, files=files)


def test_uploads_match_part_by_part_whatever_their_boundary(tmp_path: Path, sink_url: str) -> None:
    # chatlas's file tests: a recorded upload never matched again, its boundary was new.
    path = tmp_path / "upload.jsonl"
    batch = ndjson({"custom_id": "a", "prompt": "hi"})
    with llmcassette.use_cassette(path):
        recorded = upload(sink_url, batch).json()
    with llmcassette.use_cassette(path, record_mode="none"):
        assert upload(sink_url, batch).json() == recorded
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        upload(sink_url, batch, purpose="fine-tune")
    assert [d.path for d in caught.value.differences] == ["body[0].content"]


def test_multipart_body_values() -> None:
    body = (
        b"--xyz\r\n"
        b'Content-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
        b"--xyz\r\n"
        b'Content-Disposition: form-data; name="file"; filename="a.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n\xff\x00\r\n"
        b"--xyz--\r\n"
    )
    assert body_value(body, 'multipart/form-data; boundary="xyz"') == [
        {"headers": {"content-disposition": 'form-data; name="purpose"'}, "content": "batch"},
        {
            "headers": {
                "content-disposition": 'form-data; name="file"; filename="a.bin"',
                "content-type": "application/octet-stream",
            },
            "content": b"\xff\x00",
        },
    ]
    # a body its boundary does not split stays as it is
    assert body_value(b"not multipart", "multipart/form-data; boundary=xyz") == "not multipart"
