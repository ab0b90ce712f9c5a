"""The openai SDK (built on httpx2), sync and async: record, stop the provider, replay."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from llmcassette.cassette.events import event_name

from ._support import (
    API_KEY,
    Recorder,
    assert_header_line,
    assert_stream_structure,
    stream_interactions,
)

MODEL = "gpt-4o-mini"
PROMPT = "Hello there, how are you?"
MESSAGES = [{"role": "user", "content": PROMPT}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"],
        },
    },
}
WEATHER_PROMPT = "What is the weather in Paris?"

pytestmark = pytest.mark.parametrize("mode", ["sync", "async"])


def _sync_client(recorder: Recorder) -> openai.OpenAI:
    return openai.OpenAI(base_url=recorder.provider.openai_base_url, api_key=API_KEY, max_retries=0)


def _async_client(recorder: Recorder) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=recorder.provider.openai_base_url, api_key=API_KEY, max_retries=0
    )


def _action(recorder: Recorder, mode: str, sync_fn: Any, async_fn: Any) -> Any:
    """A zero-argument callable running the sync or async variant with a fresh client."""
    if mode == "sync":

        def run_sync() -> Any:
            with _sync_client(recorder) as client:
                return sync_fn(client)

        return run_sync

    async def run_async() -> Any:
        async with _async_client(recorder) as client:
            return await async_fn(client)

    return run_async


def _chunk_summary(chunks: list[Any]) -> dict[str, Any]:
    text = "".join(
        choice.delta.content or "" for chunk in chunks for choice in chunk.choices if choice.delta
    )
    return {
        "chunks": [chunk.model_dump() for chunk in chunks],
        "count": len(chunks),
        "text": text,
        "finish": [c.choices[0].finish_reason for c in chunks if c.choices][-1],
        "usage": chunks[-1].usage.model_dump(exclude_unset=True) if chunks[-1].usage else None,
    }


# ---------------------------------------------------------------- chat, not streamed


def _chat_sync(client: openai.OpenAI) -> dict[str, Any]:
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
    completion = raw.parse()
    return {
        "status": raw.status_code,
        "request_id": raw.headers.get("x-request-id"),
        "completion": completion.model_dump(),
        "text": completion.choices[0].message.content,
    }


async def _chat_async(client: openai.AsyncOpenAI) -> dict[str, Any]:
    raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
    completion = raw.parse()  # with_raw_response gives the legacy wrapper: parse() is sync
    return {
        "status": raw.status_code,
        "request_id": raw.headers.get("x-request-id"),
        "completion": completion.model_dump(),
        "text": completion.choices[0].message.content,
    }


async def test_chat_not_streamed(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, mode, _chat_sync, _chat_async))

    assert trip.replayed == trip.recorded
    assert trip.recorded["status"] == 200
    assert trip.recorded["text"] == f"You said: {PROMPT}"
    assert trip.recorded["completion"]["usage"]["total_tokens"] > 0
    assert_header_line(trip.path)
    ((request, response, end),) = stream_interactions(trip.path)
    assert request["body"]["json"]["messages"] == MESSAGES
    assert response["status"] == 200
    assert response["body"]["json"]["object"] == "chat.completion"
    assert end["events"] == 0


# ---------------------------------------------------------------- chat, streamed


def _stream_sync(**extra: Any) -> Any:
    def run(client: openai.OpenAI) -> dict[str, Any]:
        with client.chat.completions.create(
            model=MODEL, messages=MESSAGES, stream=True, **extra
        ) as stream:
            return _chunk_summary(list(stream))

    return run


def _stream_async(**extra: Any) -> Any:
    async def run(client: openai.AsyncOpenAI) -> dict[str, Any]:
        stream = await client.chat.completions.create(
            model=MODEL, messages=MESSAGES, stream=True, **extra
        )
        async with stream:
            return _chunk_summary([chunk async for chunk in stream])

    return run


async def test_chat_streamed(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, mode, _stream_sync(), _stream_async()))

    assert trip.replayed == trip.recorded
    assert trip.recorded["text"] == f"You said: {PROMPT}"
    assert trip.recorded["finish"] == "stop"
    assert trip.recorded["usage"] is None
    events = assert_stream_structure(trip.path, "sse")
    # One event line per SSE event: every chunk the SDK yielded, plus the final [DONE].
    assert len(events) == trip.recorded["count"] + 1
    assert events[0]["data"]["choices"][0]["delta"]["role"] == "assistant"
    assert events[-1]["text"] == "[DONE]"
    assert "data" not in events[-1]
    stored_text = "".join(
        e["data"]["choices"][0]["delta"].get("content") or "" for e in events[:-1]
    )
    assert stored_text == trip.recorded["text"]


async def test_chat_streamed_with_usage(recorder: Recorder, mode: str) -> None:
    options = {"stream_options": {"include_usage": True}}
    trip = await recorder.roundtrip(
        _action(recorder, mode, _stream_sync(**options), _stream_async(**options))
    )

    assert trip.replayed == trip.recorded
    usage = trip.recorded["usage"]
    assert usage is not None
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert trip.replayed["usage"] == usage
    events = assert_stream_structure(trip.path, "sse")
    assert len(events) == trip.recorded["count"] + 1
    assert events[-2]["data"]["choices"] == []
    assert events[-2]["data"]["usage"] == usage
    # "usage": null on the other chunks is kept as JSON null, not dropped.
    assert events[0]["data"]["usage"] is None
    assert events[-1]["text"] == "[DONE]"


# ---------------------------------------------------------------- tool call, streamed


def _collect_tool_call(chunks: list[Any]) -> dict[str, Any]:
    name = None
    call_id = None
    arguments = ""
    for chunk in chunks:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or ():
                call_id = call.id or call_id
                if call.function is not None:
                    name = call.function.name or name
                    arguments += call.function.arguments or ""
    summary = _chunk_summary(chunks)
    return {
        "id": call_id,
        "name": name,
        "arguments": json.loads(arguments),
        "raw_arguments": arguments,
        "count": summary["count"],
        "finish": summary["finish"],
    }


def _tool_request() -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": WEATHER_PROMPT}],
        "tools": [WEATHER_TOOL],
        "stream": True,
    }


def _tool_sync(client: openai.OpenAI) -> dict[str, Any]:
    with client.chat.completions.create(**_tool_request()) as stream:
        return _collect_tool_call(list(stream))


async def _tool_async(client: openai.AsyncOpenAI) -> dict[str, Any]:
    stream = await client.chat.completions.create(**_tool_request())
    async with stream:
        return _collect_tool_call([chunk async for chunk in stream])


async def test_tool_call_streamed(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, mode, _tool_sync, _tool_async))

    assert trip.replayed == trip.recorded
    assert trip.recorded["name"] == "get_weather"
    assert trip.recorded["arguments"] == {"city": WEATHER_PROMPT, "unit": "celsius"}
    assert trip.recorded["finish"] == "tool_calls"
    events = assert_stream_structure(trip.path, "sse")
    assert len(events) == trip.recorded["count"] + 1
    first_call = events[0]["data"]["choices"][0]["delta"]["tool_calls"][0]
    assert first_call["function"]["name"] == "get_weather"
    stored_arguments = "".join(
        call["function"].get("arguments", "")
        for event in events[:-1]
        for choice in event["data"]["choices"]
        for call in choice["delta"].get("tool_calls") or ()
    )
    assert stored_arguments == trip.recorded["raw_arguments"]


# ---------------------------------------------------------------- Responses API


def _responses_summary(events: list[Any]) -> dict[str, Any]:
    completed = [e for e in events if e.type == "response.completed"]
    return {
        "types": [e.type for e in events],
        "sequence": [e.sequence_number for e in events],
        "deltas": "".join(e.delta for e in events if e.type == "response.output_text.delta"),
        "output_text": completed[-1].response.output_text if completed else None,
        "usage": completed[-1].response.usage.model_dump() if completed else None,
    }


def _responses_stream_sync(client: openai.OpenAI) -> dict[str, Any]:
    with client.responses.create(model=MODEL, input=PROMPT, stream=True) as stream:
        return _responses_summary(list(stream))


async def _responses_stream_async(client: openai.AsyncOpenAI) -> dict[str, Any]:
    stream = await client.responses.create(model=MODEL, input=PROMPT, stream=True)
    async with stream:
        return _responses_summary([event async for event in stream])


async def test_responses_streamed(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(
        _action(recorder, mode, _responses_stream_sync, _responses_stream_async)
    )

    assert trip.replayed == trip.recorded
    types = trip.recorded["types"]
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types[-1] == "response.completed"
    assert "response.output_text.delta" in types
    assert trip.recorded["output_text"] == f"You said: {PROMPT}"
    assert trip.recorded["deltas"] == trip.recorded["output_text"]
    events = assert_stream_structure(trip.path, "sse")
    # Named SSE events: the name is the data's type, so the line leaves it out.
    assert [event_name(e) for e in events] == types
    assert not any("event" in e for e in events)
    assert [e["data"]["type"] for e in events] == types


def _responses_sync(client: openai.OpenAI) -> dict[str, Any]:
    response = client.responses.create(model=MODEL, input=PROMPT)
    return {"response": response.model_dump(), "output_text": response.output_text}


async def _responses_async(client: openai.AsyncOpenAI) -> dict[str, Any]:
    response = await client.responses.create(model=MODEL, input=PROMPT)
    return {"response": response.model_dump(), "output_text": response.output_text}


async def test_responses_not_streamed(recorder: Recorder, mode: str) -> None:
    trip = await recorder.roundtrip(_action(recorder, mode, _responses_sync, _responses_async))

    assert trip.replayed == trip.recorded
    assert trip.recorded["output_text"] == f"You said: {PROMPT}"
    assert trip.recorded["response"]["status"] == "completed"
    ((_, response, end),) = stream_interactions(trip.path)
    assert response["body"]["json"]["object"] == "response"
    assert end["events"] == 0
