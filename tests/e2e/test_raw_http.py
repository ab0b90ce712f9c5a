"""Raw httpx and httpx2 clients, sync and async: gzip JSON, SSE and NDJSON streams."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest

from ._support import (
    API_KEY,
    Recorder,
    assert_header_line,
    assert_stream_structure,
    header_value,
    stream_interactions,
)

MODEL = "gpt-4o-mini"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
PROMPT = "Say something streamed"


def _chat_body(*, stream: bool) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}], "stream": stream}


pytestmark = [
    pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"]),
    pytest.mark.parametrize("mode", ["sync", "async"]),
]


def _action(recorder: Recorder, module: ModuleType, mode: str, sync_fn: Any, async_fn: Any) -> Any:
    """A zero-argument callable running the sync or async variant with a fresh client."""
    base_url = recorder.provider.url
    if mode == "sync":

        def run_sync() -> Any:
            with module.Client(base_url=base_url, timeout=5) as client:
                return sync_fn(client)

        return run_sync

    async def run_async() -> Any:
        async with module.AsyncClient(base_url=base_url, timeout=5) as client:
            return await async_fn(client)

    return run_async


# ---------------------------------------------------------------- gzip-compressed JSON


def _json_summary(response: Any) -> dict[str, Any]:
    return {
        "status": response.status_code,
        "json": response.json(),
        "content_type": response.headers["content-type"],
        "request_id": response.headers["x-request-id"],
        "encoding": response.headers.get("content-encoding"),
    }


def _json_sync(client: Any) -> dict[str, Any]:
    response = client.post("/v1/chat/completions", json=_chat_body(stream=False), headers=AUTH)
    return _json_summary(response)


async def _json_async(client: Any) -> dict[str, Any]:
    response = await client.post(
        "/v1/chat/completions", json=_chat_body(stream=False), headers=AUTH
    )
    return _json_summary(response)


async def test_gzip_json(recorder: Recorder, module: ModuleType, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, module, mode, _json_sync, _json_async))

    # The provider really compressed the live answer...
    assert trip.recorded.pop("encoding") == "gzip"
    # ...and the cassette holds it decoded, so the replayed answer is plain JSON.
    assert trip.replayed.pop("encoding") is None
    assert trip.replayed == trip.recorded
    assert trip.recorded["status"] == 200
    assert trip.recorded["json"]["choices"][0]["message"]["content"] == f"You said: {PROMPT}"
    assert_header_line(trip.path)
    ((_, response, end),) = stream_interactions(trip.path)
    assert header_value(response["headers"], "content-encoding") is None
    assert response["body"]["json"] == trip.recorded["json"]
    stored_length = header_value(response["headers"], "content-length")
    assert stored_length is not None
    # The provider writes this body indented: the stored layout rebuilds it byte for byte.
    assert int(stored_length) == len(
        json.dumps(trip.recorded["json"], indent=2, ensure_ascii=False).encode()
    )
    assert end["events"] == 0


# ---------------------------------------------------------------- SSE via client.stream


def _sse_sync(client: Any) -> dict[str, Any]:
    with client.stream(
        "POST", "/v1/chat/completions", json=_chat_body(stream=True), headers=AUTH
    ) as response:
        return {
            "status": response.status_code,
            "content_type": response.headers["content-type"],
            "lines": list(response.iter_lines()),
        }


async def _sse_async(client: Any) -> dict[str, Any]:
    async with client.stream(
        "POST", "/v1/chat/completions", json=_chat_body(stream=True), headers=AUTH
    ) as response:
        return {
            "status": response.status_code,
            "content_type": response.headers["content-type"],
            "lines": [line async for line in response.aiter_lines()],
        }


async def test_sse_stream_lines(recorder: Recorder, module: ModuleType, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, module, mode, _sse_sync, _sse_async))

    assert trip.replayed == trip.recorded
    assert trip.recorded["content_type"].startswith("text/event-stream")
    lines = trip.recorded["lines"]
    data_lines = [line for line in lines if line.startswith("data: ")]
    assert data_lines[-1] == "data: [DONE]"
    assert lines.count("") == len(data_lines)  # every event ends with its blank line
    events = assert_stream_structure(trip.path, "sse")
    assert len(events) == len(data_lines)
    assert [json.loads(line[6:]) for line in data_lines[:-1]] == [e["data"] for e in events[:-1]]
    assert events[0]["data"]["choices"][0]["delta"]["role"] == "assistant"
    assert events[-1]["text"] == "[DONE]"


# ---------------------------------------------------------------- NDJSON (Ollama)


def _ndjson_request(route: str) -> dict[str, Any]:
    if route == "/api/chat":
        return {"model": "llama3.2", "messages": [{"role": "user", "content": PROMPT}]}
    return {"model": "llama3.2", "prompt": PROMPT}


def _ndjson_sync(route: str) -> Any:
    def run(client: Any) -> dict[str, Any]:
        with client.stream("POST", route, json=_ndjson_request(route)) as response:
            return {
                "status": response.status_code,
                "content_type": response.headers["content-type"],
                "lines": list(response.iter_lines()),
            }

    return run


def _ndjson_async(route: str) -> Any:
    async def run(client: Any) -> dict[str, Any]:
        async with client.stream("POST", route, json=_ndjson_request(route)) as response:
            return {
                "status": response.status_code,
                "content_type": response.headers["content-type"],
                "lines": [line async for line in response.aiter_lines()],
            }

    return run


@pytest.mark.parametrize("route", ["/api/chat", "/api/generate"])
async def test_ndjson_stream(recorder: Recorder, module: ModuleType, mode: str, route: str) -> None:
    trip = await recorder.roundtrip(
        _action(recorder, module, mode, _ndjson_sync(route), _ndjson_async(route))
    )

    assert trip.replayed == trip.recorded
    assert trip.recorded["content_type"] == "application/x-ndjson"
    objects = [json.loads(line) for line in trip.recorded["lines"] if line]
    assert objects[-1]["done"] is True
    assert not any(o["done"] for o in objects[:-1])
    key = "message" if route == "/api/chat" else "response"
    pieces = [o[key]["content"] if key == "message" else o[key] for o in objects]
    assert "".join(pieces) == f"You said: {PROMPT}"
    events = assert_stream_structure(trip.path, "ndjson")
    # One event line per NDJSON object, each stored as JSON.
    assert [e["data"] for e in events] == objects
    assert events[-1]["data"]["done"] is True


# ---------------------------------------------------------------- exact bytes of a stream

_STREAMS = {
    "openai-chat": ("/v1/chat/completions", AUTH, _chat_body(stream=True)),
    "openai-responses": (
        "/v1/responses",
        AUTH,
        {"model": MODEL, "input": PROMPT, "stream": True},
    ),
    # Anthropic's ping event is written with a space after the colon: a layout to keep.
    "anthropic": (
        "/v1/messages",
        {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"},
        {
            "model": "claude-local-test",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
        },
    ),
}


def _bytes_sync(name: str) -> Any:
    route, headers, body = _STREAMS[name]

    def run(client: Any) -> dict[str, Any]:
        with client.stream("POST", route, json=body, headers=headers) as response:
            return {"status": response.status_code, "body": response.read()}

    return run


def _bytes_async(name: str) -> Any:
    route, headers, body = _STREAMS[name]

    async def run(client: Any) -> dict[str, Any]:
        async with client.stream("POST", route, json=body, headers=headers) as response:
            return {"status": response.status_code, "body": await response.aread()}

    return run


@pytest.mark.parametrize("name", list(_STREAMS))
async def test_sse_stream_bytes_are_exact(
    recorder: Recorder, module: ModuleType, mode: str, name: str
) -> None:
    trip = await recorder.roundtrip(
        _action(recorder, module, mode, _bytes_sync(name), _bytes_async(name))
    )

    assert trip.recorded["status"] == 200
    assert trip.replayed == trip.recorded
    events = assert_stream_structure(trip.path, "sse")
    assert len(events) == trip.recorded["body"].count(b"\n\n")
    # Every event was understood: none had to fall back to raw text.
    assert not [e for e in events if "raw" in e]
    assert all(isinstance(e.get("data"), dict) for e in events if "text" not in e)
