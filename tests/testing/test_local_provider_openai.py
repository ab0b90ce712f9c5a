"""The real `openai` SDK (sync and async) against the local provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import openai
import pytest

from llmcassette.testing import LocalProvider

MODEL = "gpt-4o-mini"
WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    },
}


def drain(items: Iterable[Any], into: list[Any]) -> None:
    """Collect items one by one, so that those before an error are kept."""
    for item in items:
        into.append(item)


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


@pytest.fixture
def client(provider: LocalProvider) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=provider.openai_base_url, api_key="sk-test", max_retries=0
    ) as sdk_client:
        yield sdk_client


@pytest.fixture
async def aclient(provider: LocalProvider) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=provider.openai_base_url, api_key="sk-test", max_retries=0
    ) as sdk_client:
        yield sdk_client


def test_chat_non_stream(client: openai.OpenAI, provider: LocalProvider) -> None:
    completion = client.chat.completions.create(model=MODEL, messages=user("Hi there"))
    assert completion.choices[0].message.content == "You said: Hi there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + 5
    again = client.chat.completions.create(model=MODEL, messages=user("Hi there"))
    assert again.id == completion.id
    assert again.created == completion.created
    # The SDK asked for gzip and got it.
    assert "gzip" in provider.requests[0].headers["accept-encoding"]


def test_chat_content_parts(client: openai.OpenAI) -> None:
    messages: Any = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}],
        },
    ]
    completion = client.chat.completions.create(model=MODEL, messages=messages)
    assert completion.choices[0].message.content == "You said: part one two"


def test_chat_stream(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model=MODEL, messages=user("stream me"), stream=True)
    with stream:
        chunks = list(stream)
    assert len(chunks) == 1 + 5 + 1  # role, You / said / : / stream / me, finish
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "You said: stream me"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)


def test_chat_stream_include_usage(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model=MODEL,
        messages=user("count me"),
        stream=True,
        stream_options={"include_usage": True},
    )
    with stream:
        chunks = list(stream)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 5


def test_chat_stream_with_events_override(client: openai.OpenAI, provider: LocalProvider) -> None:
    provider.behaviour.events = 50
    with client.chat.completions.create(model=MODEL, messages=user("x"), stream=True) as stream:
        contents = [c.choices[0].delta.content for c in stream]
    assert len(contents) == 52
    assert "".join(c or "" for c in contents).startswith("You said: x ")


def test_chat_tool_call_stream(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model=MODEL, messages=user("Paris"), tools=[WEATHER_TOOL], stream=True
    )
    with stream:
        chunks = list(stream)
    calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices[0].delta.tool_calls]
    assert calls[0][0].id is not None
    assert calls[0][0].function is not None
    assert calls[0][0].function.name == "get_weather"
    arguments = "".join((call[0].function.arguments or "") for call in calls if call[0].function)
    assert len(calls) > 3  # split across several chunks, like OpenAI
    assert json.loads(arguments) == {"city": "Paris", "unit": "celsius", "days": 1}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_chat_tool_call_stream_helper(client: openai.OpenAI) -> None:
    with client.chat.completions.stream(
        model=MODEL, messages=user("Oslo"), tools=[WEATHER_TOOL]
    ) as stream:
        final = stream.get_final_completion()
    (call,) = final.choices[0].message.tool_calls or []
    assert call.type == "function"
    assert json.loads(call.function.arguments)["city"] == "Oslo"


def test_chat_tool_result_round_trip(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(model=MODEL, messages=user("Rome"), tools=[WEATHER_TOOL])
    (call,) = first.choices[0].message.tool_calls or []
    assert call.type == "function"
    messages: Any = [
        *user("Rome"),
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 degrees"},
    ]
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER_TOOL])
    assert second.choices[0].message.content == "The tool returned: sunny, 21 degrees"
    assert second.choices[0].finish_reason == "stop"


def test_responses_non_stream(client: openai.OpenAI) -> None:
    response = client.responses.create(model=MODEL, input="Hello responses")
    assert response.output_text == "You said: Hello responses"
    assert response.status == "completed"
    assert response.usage is not None
    assert response.usage.output_tokens == 5


def test_responses_stream(client: openai.OpenAI) -> None:
    stream = client.responses.create(
        model=MODEL, input=[{"role": "user", "content": "streamed answer"}], stream=True
    )
    with stream:
        events = list(stream)
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "You said: streamed answer"
    assert events[-1].response.output_text == "You said: streamed answer"


def test_responses_stream_helper_with_function_call(client: openai.OpenAI) -> None:
    tool: Any = {"type": "function", "name": "get_weather", **WEATHER_TOOL["function"]}
    tool.pop("description")
    with client.responses.stream(model=MODEL, input="Lima", tools=[tool]) as stream:
        final = stream.get_final_response()
    (call,) = final.output
    assert call.type == "function_call"
    assert json.loads(call.arguments)["city"] == "Lima"


def test_models(client: openai.OpenAI) -> None:
    assert "gpt-4o-mini" in [m.id for m in client.models.list()]


@pytest.mark.parametrize(
    ("model", "error"),
    [
        ("error-401", openai.AuthenticationError),
        ("error-429", openai.RateLimitError),
        ("error-500", openai.InternalServerError),
    ],
)
def test_errors(client: openai.OpenAI, model: str, error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        client.chat.completions.create(model=model, messages=user("x"))
    assert isinstance(caught.value, openai.APIStatusError)
    assert set(caught.value.body or {}) >= {"message", "type", "code"}  # type: ignore[arg-type]


def test_rate_limit_retry_after(client: openai.OpenAI, provider: LocalProvider) -> None:
    provider.queue_error(429, retry_after=0.01)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model=MODEL, messages=user("x"))
    assert caught.value.response.headers["retry-after"] == "0.01"
    # With a retry allowed, the SDK honours retry-after and the next attempt succeeds.
    provider.queue_error(429, retry_after=0.01)
    retrying = client.with_options(max_retries=1)
    completion = retrying.chat.completions.create(model=MODEL, messages=user("x"))
    assert completion.choices[0].message.content == "You said: x"
    assert [r.headers["x-stainless-retry-count"] for r in provider.requests[-2:]] == ["0", "1"]


def test_cut_stream_raises_connection_error(client: openai.OpenAI, provider: LocalProvider) -> None:
    provider.behaviour.cut_after = 2
    stream = client.chat.completions.create(model=MODEL, messages=user("x y z"), stream=True)
    received: list[Any] = []
    with stream, pytest.raises(openai.APIConnectionError):
        drain(stream, received)
    assert len(received) == 2


async def test_async_chat_stream(aclient: openai.AsyncOpenAI) -> None:
    stream = await aclient.chat.completions.create(
        model=MODEL,
        messages=user("async hello"),
        stream=True,
        stream_options={"include_usage": True},
    )
    async with stream:
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "You said: async hello"
    assert chunks[-1].usage is not None


async def test_async_chat_non_stream_and_tool_stream(aclient: openai.AsyncOpenAI) -> None:
    completion = await aclient.chat.completions.create(model=MODEL, messages=user("hey"))
    assert completion.choices[0].message.content == "You said: hey"
    stream = await aclient.chat.completions.create(
        model=MODEL, messages=user("Kyiv"), tools=[WEATHER_TOOL], stream=True
    )
    async with stream:
        pieces = [
            call.function.arguments or ""
            async for chunk in stream
            for call in chunk.choices[0].delta.tool_calls or []
            if call.function
        ]
    assert json.loads("".join(pieces))["city"] == "Kyiv"


async def test_async_responses(aclient: openai.AsyncOpenAI) -> None:
    response = await aclient.responses.create(model=MODEL, input="async responses")
    assert response.output_text == "You said: async responses"
    stream = await aclient.responses.create(model=MODEL, input="async stream", stream=True)
    async with stream:
        events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "You said: async stream"


async def test_async_errors(aclient: openai.AsyncOpenAI, provider: LocalProvider) -> None:
    provider.queue_error(401)
    with pytest.raises(openai.AuthenticationError):
        await aclient.chat.completions.create(model=MODEL, messages=user("x"))
    with pytest.raises(openai.RateLimitError):
        await aclient.responses.create(model="error-429", input="x")
