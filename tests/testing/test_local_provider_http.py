"""Wire-level checks of the local provider with raw httpx / httpx2 clients."""

from __future__ import annotations

import gzip
import json
import socket
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest

from llmcassette.testing import LocalProvider

OPENAI_AUTH = {"Authorization": "Bearer sk-test"}
ANTHROPIC_AUTH = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}


def chat(prompt: str = "hello there, world!", **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}], **extra}


@pytest.fixture(scope="module", params=[httpx, httpx2], ids=["httpx", "httpx2"])
def http(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A sync client from each HTTP library the SDKs may sit on (shared: creating one is slow)."""
    module: ModuleType = request.param
    with module.Client(timeout=5) as client:
        yield client


def raw_chunks(client: Any, url: str, body: object, headers: dict[str, str]) -> list[bytes]:
    with client.stream("POST", url, json=body, headers=headers) as response:
        assert response.status_code == 200
        return list(response.iter_raw())


def wire_chunks(
    provider: LocalProvider, path: str, body: object, headers: dict[str, str]
) -> list[bytes]:
    """The HTTP chunks exactly as framed on the wire (client read sizes can split them)."""
    data = json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(data)}"]
    lines += ["Content-Type: application/json", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + data
    with socket.create_connection(("127.0.0.1", provider.port), timeout=5) as sock:
        sock.sendall(request)
        with sock.makefile("rb") as stream:
            assert stream.readline().startswith(b"HTTP/1.1 200")
            while stream.readline() != b"\r\n":
                pass
            chunks = []
            while size := int(stream.readline().strip(), 16):
                chunks.append(stream.read(size))
                assert stream.read(2) == b"\r\n"
            assert stream.read() == b"\r\n"
    return chunks


def test_every_event_is_its_own_http_chunk(provider: LocalProvider) -> None:
    body = chat(stream=True, stream_options={"include_usage": True})
    chunks = wire_chunks(provider, "/v1/chat/completions", body, OPENAI_AUTH)
    assert len(chunks) == 1 + 8 + 1 + 1 + 1
    assert all(c.startswith(b"data: ") and c.endswith(b"\n\n") for c in chunks)
    assert all(c.count(b"\n\n") == 1 for c in chunks)


def test_chat_stream_is_one_sse_event_per_chunk(http: Any, provider: LocalProvider) -> None:
    url = provider.openai_base_url + "/chat/completions"
    with http.stream("POST", url, json=chat(stream=True), headers=OPENAI_AUTH) as response:
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert response.headers["transfer-encoding"] == "chunked"
        chunks = list(response.iter_raw())

    # role + 8 tokens ("You", " said", ":", " hello", " there", ",", " world", "!") + finish
    assert len(chunks) == 1 + 8 + 1 + 1
    for chunk in chunks:
        assert chunk.startswith(b"data: ")
        assert chunk.endswith(b"\n\n")
        assert chunk.count(b"\n\n") == 1
    assert chunks[-1] == b"data: [DONE]\n\n"
    events = [json.loads(c[6:]) for c in chunks[:-1]]
    assert b'"object":"chat.completion.chunk"' in chunks[0]  # compact separators
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events)
    assert text == "You said: hello there, world!"
    assert events[-1]["choices"][0]["finish_reason"] == "stop"
    assert "usage" not in events[0]


def test_chat_stream_include_usage(http: Any, provider: LocalProvider) -> None:
    body = chat(stream=True, stream_options={"include_usage": True})
    chunks = raw_chunks(http, provider.openai_base_url + "/chat/completions", body, OPENAI_AUTH)
    events = [json.loads(c[6:]) for c in chunks[:-1]]
    assert all(e["usage"] is None for e in events[:-1])
    assert events[-1]["choices"] == []
    assert events[-1]["usage"]["completion_tokens"] == 8


def test_event_delay_paces_the_chunks(provider: LocalProvider) -> None:
    provider.behaviour.event_delay = 0.05
    provider.behaviour.events = 3
    url = provider.openai_base_url + "/chat/completions"
    arrivals = []
    started = time.monotonic()
    with (
        httpx2.Client() as client,
        client.stream("POST", url, json=chat(stream=True), headers=OPENAI_AUTH) as response,
    ):
        for _ in response.iter_raw():
            arrivals.append(time.monotonic())
    assert len(arrivals) == 1 + 3 + 1 + 1
    # Five delays follow the first event. A lower bound only: a busy client may read
    # events late and several at once, never early.
    assert arrivals[-1] - started >= 5 * 0.05 - 0.005


def test_first_event_delay_comes_after_the_headers(provider: LocalProvider) -> None:
    provider.behaviour.first_event_delay = 3600
    url = provider.openai_base_url + "/chat/completions"
    # The headers arrive within the read timeout, long before the hour the first event
    # waits: had they waited too, the request would time out.
    with (
        httpx2.Client(timeout=60) as client,
        client.stream("POST", url, json=chat(stream=True), headers=OPENAI_AUTH) as response,
    ):
        assert response.status_code == 200


def test_first_event_delay_holds_back_the_first_event(provider: LocalProvider) -> None:
    provider.behaviour.first_event_delay = 0.4
    url = provider.openai_base_url + "/chat/completions"
    started = time.monotonic()
    with (
        httpx2.Client() as client,
        client.stream("POST", url, json=chat(stream=True), headers=OPENAI_AUTH) as response,
    ):
        next(response.iter_raw())
        first_at = time.monotonic() - started
    assert first_at >= 0.38  # a lower bound only: late is possible, early is not


def test_latency_holds_back_every_answer_streamed_or_not(provider: LocalProvider) -> None:
    provider.behaviour.latency = 0.3
    url = provider.openai_base_url + "/chat/completions"
    with httpx2.Client() as client:
        started = time.monotonic()
        answered = client.post(url, json=chat(), headers=OPENAI_AUTH)
        plain_at = time.monotonic() - started
        started = time.monotonic()
        with client.stream("POST", url, json=chat(stream=True), headers=OPENAI_AUTH) as streamed:
            headers_at = time.monotonic() - started
            streamed.read()
    assert (answered.status_code, streamed.status_code) == (200, 200)
    assert plain_at >= 0.28
    assert headers_at >= 0.28


@pytest.mark.parametrize("count", [1, 20, 1000])
def test_events_override(provider: LocalProvider, count: int) -> None:
    provider.behaviour.events = count
    chunks = wire_chunks(provider, "/v1/chat/completions", chat(stream=True), OPENAI_AUTH)
    assert len(chunks) == count + 3
    events = [json.loads(c[6:]) for c in chunks[1 : count + 1]]
    text = "".join(e["choices"][0]["delta"]["content"] for e in events)
    # Fewer events merge tokens, more events pad the answer.
    assert text.startswith("You said: hello there, world!")


def test_responses_stream_named_events(http: Any, provider: LocalProvider) -> None:
    body = {"model": "gpt-4o-mini", "input": "tell me", "stream": True}
    chunks = raw_chunks(http, provider.openai_base_url + "/responses", body, OPENAI_AUTH)
    names = []
    for number, chunk in enumerate(chunks):
        head, data = chunk.decode().removesuffix("\n\n").split("\n")
        name = head.removeprefix("event: ")
        event = json.loads(data.removeprefix("data: "))
        assert event["type"] == name
        assert event["sequence_number"] == number
        names.append(name)
    deltas = ["response.output_text.delta"] * 5  # You, said, :, tell, me
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    done = json.loads(chunks[-1].split(b"data: ", 1)[1])
    assert done["response"]["output"][0]["content"][0]["text"] == "You said: tell me"


def test_anthropic_stream_framing(http: Any, provider: LocalProvider) -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    chunks = raw_chunks(http, provider.anthropic_base_url + "/v1/messages", body, ANTHROPIC_AUTH)
    names = [c.split(b"\n", 1)[0].decode().removeprefix("event: ") for c in chunks]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 4,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert chunks[2] == b'event: ping\ndata: {"type": "ping"}\n\n'
    for chunk in chunks:
        name, data = chunk.decode().removesuffix("\n\n").split("\n")
        assert json.loads(data.removeprefix("data: "))["type"] == name.removeprefix("event: ")


def test_non_stream_chat_is_gzip_when_accepted(provider: LocalProvider) -> None:
    url = provider.openai_base_url + "/chat/completions"
    with httpx2.Client() as client:
        plain = client.post(
            url, json=chat(), headers={**OPENAI_AUTH, "accept-encoding": "identity"}
        )
        with client.stream(
            "POST", url, json=chat(), headers={**OPENAI_AUTH, "accept-encoding": "gzip"}
        ) as zipped:
            raw = b"".join(zipped.iter_raw())
            assert zipped.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    assert raw[:2] == b"\x1f\x8b"
    assert gzip.decompress(raw) == plain.content
    assert plain.text.startswith('{\n  "id": "chatcmpl-')  # 2-space indent like OpenAI
    assert plain.json()["choices"][0]["message"]["content"] == "You said: hello there, world!"


def test_models_list(http: Any, provider: LocalProvider) -> None:
    response = http.get(provider.openai_base_url + "/models", headers=OPENAI_AUTH)
    assert response.headers["content-encoding"] == "gzip"
    assert response.json()["object"] == "list"
    assert "gpt-4o-mini" in [m["id"] for m in response.json()["data"]]


def test_openai_headers(provider: LocalProvider) -> None:
    response = httpx2.post(
        provider.openai_base_url + "/chat/completions", json=chat(), headers=OPENAI_AUTH
    )
    assert response.headers["x-request-id"].startswith("req_")
    assert response.headers["openai-organization"] == "org-local"
    assert int(response.headers["openai-processing-ms"]) > 0
    assert response.headers["set-cookie"].startswith("__cf_bm=")
    assert response.headers["set-cookie"].endswith("; path=/; HttpOnly")


@pytest.mark.parametrize("path", ["/api/chat", "/api/generate"])
def test_ollama_ndjson_stream(http: Any, provider: LocalProvider, path: str) -> None:
    body: dict[str, Any] = {"model": "llama3.2"}
    if path == "/api/chat":
        body["messages"] = [{"role": "user", "content": "hi"}]
    else:
        body["prompt"] = "hi"
    with http.stream("POST", provider.url + path, json=body) as response:
        assert response.headers["content-type"] == "application/x-ndjson"
        chunks = list(response.iter_raw())
    lines = [json.loads(c) for c in chunks]
    assert all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in chunks)
    assert [line["done"] for line in lines] == [False] * 4 + [True]
    assert lines[-1]["done_reason"] == "stop"
    assert lines[-1]["eval_count"] == 4
    key = "message" if path == "/api/chat" else "response"
    pieces = [line[key]["content"] if key == "message" else line[key] for line in lines]
    assert "".join(pieces) == "You said: hi"


def test_ollama_non_stream(http: Any, provider: LocalProvider) -> None:
    body = {"model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": "hi"}]}
    answer = http.post(provider.url + "/api/chat", json=body).json()
    assert answer["done"] is True
    assert answer["message"] == {"role": "assistant", "content": "You said: hi"}


def test_openai_missing_auth_is_401(http: Any, provider: LocalProvider) -> None:
    response = http.post(provider.openai_base_url + "/chat/completions", json=chat())
    assert response.status_code == 401
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"


def test_anthropic_missing_auth_is_401(http: Any, provider: LocalProvider) -> None:
    body = {"model": "claude-x", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    response = http.post(provider.anthropic_base_url + "/v1/messages", json=body)
    assert response.status_code == 401
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "authentication_error"


def test_model_error_429_has_retry_after(http: Any, provider: LocalProvider) -> None:
    openai_reply = http.post(
        provider.openai_base_url + "/chat/completions",
        json={**chat(), "model": "error-429"},
        headers=OPENAI_AUTH,
    )
    assert openai_reply.status_code == 429
    assert openai_reply.headers["retry-after"] == "0"
    assert openai_reply.json()["error"]["code"] == "rate_limit_exceeded"

    body = {"model": "error-429", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    anthropic_reply = http.post(
        provider.anthropic_base_url + "/v1/messages", json=body, headers=ANTHROPIC_AUTH
    )
    assert anthropic_reply.status_code == 429
    assert anthropic_reply.headers["retry-after"] == "0"
    assert anthropic_reply.json()["error"]["type"] == "rate_limit_error"


def test_model_error_500_on_ollama(http: Any, provider: LocalProvider) -> None:
    response = http.post(provider.url + "/api/generate", json={"model": "error-500", "prompt": "x"})
    assert response.status_code == 500
    assert isinstance(response.json()["error"], str)


def test_queue_error(http: Any, provider: LocalProvider) -> None:
    provider.queue_error(429, retry_after=2.5, count=2)
    provider.queue_error(503, body={"custom": True})
    url = provider.openai_base_url + "/chat/completions"
    first = http.post(url, json=chat(), headers=OPENAI_AUTH)
    second = http.post(url, json=chat(stream=True), headers=OPENAI_AUTH)
    third = http.post(url, json=chat(), headers=OPENAI_AUTH)
    fourth = http.post(url, json=chat(), headers=OPENAI_AUTH)
    assert (first.status_code, second.status_code) == (429, 429)
    assert first.headers["retry-after"] == "2.5"
    assert second.headers["content-type"] == "application/json"
    assert third.status_code == 503
    assert third.json() == {"custom": True}
    assert fourth.status_code == 200


def test_unknown_route_is_404_json(http: Any, provider: LocalProvider) -> None:
    response = http.post(provider.openai_base_url + "/nope", json={}, headers=OPENAI_AUTH)
    assert response.status_code == 404
    assert "Invalid URL (POST /v1/nope)" in response.json()["error"]["message"]


def test_tool_call_stream_arguments(http: Any, provider: LocalProvider) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                },
            },
        }
    ]
    body = chat("find cats", stream=True, tools=tools)
    chunks = raw_chunks(http, provider.openai_base_url + "/chat/completions", body, OPENAI_AUTH)
    events = [json.loads(c[6:]) for c in chunks[:-1]]
    calls = [e["choices"][0]["delta"].get("tool_calls") for e in events]
    assert calls[0][0]["function"] == {"name": "lookup", "arguments": ""}
    pieces = [c[0]["function"]["arguments"] for c in calls[1:-1]]
    assert len(pieces) > 3
    assert json.loads("".join(pieces)) == {"query": "find cats", "limit": 1}
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_answers_are_deterministic(provider: LocalProvider) -> None:
    url = provider.openai_base_url + "/chat/completions"
    with httpx2.Client() as client:
        one = client.post(url, json=chat(stream=True), headers=OPENAI_AUTH)
        two = client.post(url, json=chat(stream=True), headers=OPENAI_AUTH)
        other = client.post(url, json=chat("something else", stream=True), headers=OPENAI_AUTH)
    assert one.content == two.content
    assert list(one.headers.multi_items()) == list(two.headers.multi_items())
    assert one.headers["x-request-id"] != other.headers["x-request-id"]


def test_requests_are_recorded(provider: LocalProvider) -> None:
    httpx2.post(
        provider.openai_base_url + "/chat/completions?trace=1",
        json=chat(),
        headers={**OPENAI_AUTH, "X-Custom": "yes"},
    )
    (request,) = provider.requests
    assert (request.method, request.path, request.query) == (
        "POST",
        "/v1/chat/completions",
        "trace=1",
    )
    assert request.headers["x-custom"] == "yes"
    assert request.json() == chat()
