"""The anthropic SDK (built on httpx2), sync and async: record, stop the provider, replay."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from llmcassette.cassette.events import event_name

from ._support import (
    API_KEY,
    Recorder,
    assert_header_line,
    assert_stream_structure,
    stream_interactions,
)

MODEL = "claude-local-test"
PROMPT = "Tell me something nice."
MESSAGES = [{"role": "user", "content": PROMPT}]
WEATHER_PROMPT = "What is the weather in Lyon?"
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 3}},
        "required": ["city", "days"],
    },
}
TOOL_REQUEST: dict[str, Any] = {
    "model": MODEL,
    "max_tokens": 256,
    "messages": [{"role": "user", "content": WEATHER_PROMPT}],
    "tools": [WEATHER_TOOL],
}

pytestmark = pytest.mark.parametrize("mode", ["sync", "async"])


def _action(recorder: Recorder, mode: str, sync_fn: Any, async_fn: Any) -> Any:
    """A zero-argument callable running the sync or async variant with a fresh client."""
    options = {
        "base_url": recorder.provider.anthropic_base_url,
        "api_key": API_KEY,
        "max_retries": 0,
    }
    if mode == "sync":

        def run_sync() -> Any:
            with anthropic.Anthropic(**options) as client:
                return sync_fn(client)

        return run_sync

    async def run_async() -> Any:
        async with anthropic.AsyncAnthropic(**options) as client:
            return await async_fn(client)

    return run_async


def _message_summary(message: Any) -> dict[str, Any]:
    return {
        "message": message.model_dump(),
        "text": "".join(block.text for block in message.content if block.type == "text"),
        "tool_uses": [
            {"id": block.id, "name": block.name, "input": block.input}
            for block in message.content
            if block.type == "tool_use"
        ],
        "usage": message.usage.model_dump(exclude_unset=True),
        "stop_reason": message.stop_reason,
    }


# ---------------------------------------------------------------- messages.create


def _create_sync(client: anthropic.Anthropic) -> dict[str, Any]:
    return _message_summary(client.messages.create(model=MODEL, max_tokens=256, messages=MESSAGES))


async def _create_async(client: anthropic.AsyncAnthropic) -> dict[str, Any]:
    message = await client.messages.create(model=MODEL, max_tokens=256, messages=MESSAGES)
    return _message_summary(message)


async def test_create_not_streamed(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, mode, _create_sync, _create_async))

    assert trip.replayed == trip.recorded
    assert trip.recorded["text"] == f"You said: {PROMPT}"
    assert trip.recorded["stop_reason"] == "end_turn"
    assert trip.recorded["usage"]["output_tokens"] > 0
    assert_header_line(trip.path)
    ((request, response, end),) = stream_interactions(trip.path)
    assert request["uri"].endswith("/v1/messages")
    assert response["body"]["json"]["type"] == "message"
    assert end["events"] == 0


# ---------------------------------------------------------------- messages.stream


def _stream_summary(events: list[Any], final: Any) -> dict[str, Any]:
    return {
        "types": [event.type for event in events],
        "streamed_text": "".join(event.text for event in events if event.type == "text"),
        "final": _message_summary(final),
    }


def _stream_sync(**request: Any) -> Any:
    def run(client: anthropic.Anthropic) -> dict[str, Any]:
        with client.messages.stream(**request) as stream:
            events = list(stream)
            return _stream_summary(events, stream.get_final_message())

    return run


def _stream_async(**request: Any) -> Any:
    async def run(client: anthropic.AsyncAnthropic) -> dict[str, Any]:
        async with client.messages.stream(**request) as stream:
            events = [event async for event in stream]
            return _stream_summary(events, await stream.get_final_message())

    return run


async def test_stream_text(recorder: Recorder, mode: str) -> None:
    request = {"model": MODEL, "max_tokens": 256, "messages": MESSAGES}
    trip = await recorder.roundtrip(
        _action(recorder, mode, _stream_sync(**request), _stream_async(**request))
    )

    assert trip.replayed == trip.recorded
    final = trip.recorded["final"]
    assert trip.recorded["streamed_text"] == final["text"] == f"You said: {PROMPT}"
    assert final["usage"]["output_tokens"] > 0
    assert final["usage"]["input_tokens"] > 0
    assert final["stop_reason"] == "end_turn"
    assert trip.recorded["types"][0] == "message_start"
    assert trip.recorded["types"][-1] == "message_stop"
    events = assert_stream_structure(trip.path, "sse")
    names = [event_name(e) for e in events]
    assert names[0] == "message_start"
    assert names[-1] == "message_stop"
    assert "ping" in names
    assert events[0]["data"]["message"]["role"] == "assistant"
    deltas = [e["data"]["delta"]["text"] for e in events if event_name(e) == "content_block_delta"]
    assert "".join(deltas) == final["text"]


async def test_stream_tool_use(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(
        _action(recorder, mode, _stream_sync(**TOOL_REQUEST), _stream_async(**TOOL_REQUEST))
    )

    assert trip.replayed == trip.recorded
    final = trip.recorded["final"]
    assert final["stop_reason"] == "tool_use"
    ((tool_use,),) = [final["tool_uses"]]
    assert tool_use["name"] == "get_weather"
    assert tool_use["input"] == {"city": WEATHER_PROMPT, "days": 3}
    events = assert_stream_structure(trip.path, "sse")
    partial = "".join(
        e["data"]["delta"]["partial_json"] for e in events if event_name(e) == "content_block_delta"
    )
    assert '"city"' in partial


def _tool_create_sync(client: anthropic.Anthropic) -> dict[str, Any]:
    return _message_summary(client.messages.create(**TOOL_REQUEST))


async def _tool_create_async(client: anthropic.AsyncAnthropic) -> dict[str, Any]:
    return _message_summary(await client.messages.create(**TOOL_REQUEST))


async def test_create_tool_use(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, mode, _tool_create_sync, _tool_create_async))

    assert trip.replayed == trip.recorded
    assert trip.recorded["stop_reason"] == "tool_use"
    (tool_use,) = trip.recorded["tool_uses"]
    assert tool_use["name"] == "get_weather"
    assert tool_use["input"] == {"city": WEATHER_PROMPT, "days": 3}
    ((request, response, _),) = stream_interactions(trip.path)
    assert request["body"]["json"]["tools"] == [WEATHER_TOOL]
    assert response["body"]["json"]["content"][0]["input"] == tool_use["input"]
