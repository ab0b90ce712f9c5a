"""Cohere v2 chat and Groq from the local provider, read over raw HTTP (no SDK needed)."""

from __future__ import annotations

import json

import httpx
import pytest

from llmcassette.testing import LocalProvider

AUTH = {"authorization": "Bearer local-key"}
MESSAGES = [{"role": "user", "content": "Hello there"}]


def _sse(text: str) -> list[tuple[str | None, object]]:
    events: list[tuple[str | None, object]] = []
    for block in filter(str.strip, text.split("\n\n")):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        data = fields["data"]
        events.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
    return events


def test_cohere_stream_is_typed_events(provider: LocalProvider) -> None:
    body = {"model": "command-r", "messages": MESSAGES, "stream": True}
    reply = httpx.post(f"{provider.url}/v2/chat", json=body, headers=AUTH)
    events = _sse(reply.text)
    kinds = [name for name, _ in events]
    assert kinds == [
        "message-start",
        "content-start",
        *["content-delta"] * 5,
        "content-end",
        "message-end",
    ]
    assert all(data["type"] == name for name, data in events)  # type: ignore[index]
    text = "".join(
        d["delta"]["message"]["content"]["text"] for n, d in events if n == "content-delta"
    )  # type: ignore[index]
    assert text == "You said: Hello there"
    assert events[-1][1]["delta"]["finish_reason"] == "COMPLETE"  # type: ignore[index]


def test_cohere_whole_answer_auth_and_errors(provider: LocalProvider) -> None:
    body = {"model": "command-r", "messages": MESSAGES}
    whole = httpx.post(f"{provider.url}/v2/chat", json=body, headers=AUTH).json()
    assert whole["message"]["content"] == [{"type": "text", "text": "You said: Hello there"}]
    assert httpx.post(f"{provider.url}/v2/chat", json=body).status_code == 401
    failing = httpx.post(
        f"{provider.url}/v2/chat", json={**body, "model": "error-429"}, headers=AUTH
    )
    assert failing.status_code == 429
    assert set(failing.json()) == {"id", "message"}


def test_cohere_cut_and_endless(provider: LocalProvider) -> None:
    body = {"model": "command-r", "messages": MESSAGES, "stream": True}
    provider.behaviour.cut_after = 3
    received: list[bytes] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", f"{provider.url}/v2/chat", json=body, headers=AUTH) as reply,
    ):
        received.extend(reply.iter_raw())
    assert [n for n, _ in _sse(b"".join(received).decode())] == [
        "message-start",
        "content-start",
        "content-delta",
    ]
    provider.behaviour.cut_after = None
    provider.behaviour.endless = True
    deltas = 0
    with httpx.stream("POST", f"{provider.url}/v2/chat", json=body, headers=AUTH) as reply:
        for line in reply.iter_lines():
            deltas += line == "event: content-delta"
            if deltas == 20:
                break
    assert deltas == 20


def test_groq_x_groq_fields(provider: LocalProvider) -> None:
    url = f"{provider.url}/openai/v1/chat/completions"
    body = {"model": "llama-3.1-8b-instant", "messages": MESSAGES}
    whole = httpx.post(url, json=body, headers=AUTH)
    assert whole.json()["x_groq"]["id"].startswith("req_01")
    assert "openai-organization" not in whole.headers
    streamed = httpx.post(url, json={**body, "stream": True}, headers=AUTH)
    events = _sse(streamed.text)
    chunks = [data for _, data in events if isinstance(data, dict)]
    assert events[-1][1] == "[DONE]"
    assert chunks[0]["x_groq"] == {"id": streamed.headers["x-request-id"]}
    finishing = next(c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"])
    assert finishing["x_groq"]["usage"]["completion_tokens"] == 5
    assert httpx.post(url, json=body).status_code == 401
    assert httpx.post(url, json={**body, "model": "error-500"}, headers=AUTH).status_code == 500
