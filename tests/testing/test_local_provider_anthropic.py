"""The real `anthropic` SDK (sync and async) against the local provider."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from llmcassette.testing import LocalProvider

MODEL = "claude-local"
WEATHER_TOOL: Any = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "metric": {"type": "boolean"}},
        "required": ["city"],
    },
}


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def drain(items: Iterable[Any], into: list[Any]) -> None:
    """Collect items one by one, so that those before an error are kept."""
    for item in items:
        into.append(item)


@pytest.fixture
def client(provider: LocalProvider) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=provider.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    ) as sdk_client:
        yield sdk_client


@pytest.fixture
async def aclient(provider: LocalProvider) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=provider.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    ) as sdk_client:
        yield sdk_client


def test_messages_create(client: anthropic.Anthropic, provider: LocalProvider) -> None:
    message = client.messages.create(model=MODEL, max_tokens=64, messages=user("Hi Claude"))
    assert message.content[0].type == "text"
    assert message.content[0].text == "You said: Hi Claude"
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens == 5
    assert message.id.startswith("msg_01")
    raw = client.messages.with_raw_response.create(
        model=MODEL, max_tokens=64, messages=user("Hi Claude")
    )
    assert raw.headers["request-id"].startswith("req_")
    assert raw.headers["anthropic-organization-id"]
    assert raw.parse().id == message.id


def test_messages_stream_text(client: anthropic.Anthropic) -> None:
    with client.messages.stream(model=MODEL, max_tokens=64, messages=user("stream it")) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert pieces == ["You", " said", ":", " stream", " it"]
    assert final.content[0].type == "text"
    assert final.content[0].text == "You said: stream it"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 5


def test_messages_raw_stream_events(client: anthropic.Anthropic) -> None:
    stream = client.messages.create(model=MODEL, max_tokens=64, messages=user("x"), stream=True)
    with stream:
        kinds = [event.type for event in stream]
    # The SDK drops `ping`; everything else arrives in Anthropic's order.
    assert kinds == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 4,  # You, said, :, x
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_tool_use_stream(client: anthropic.Anthropic) -> None:
    with client.messages.stream(
        model=MODEL, max_tokens=64, messages=user("Berlin"), tools=[WEATHER_TOOL]
    ) as stream:
        partials = [e.partial_json for e in stream if e.type == "input_json"]
        final = stream.get_final_message()
    assert len(partials) > 3
    (block,) = final.content
    assert block.type == "tool_use"
    assert block.name == "get_weather"
    assert block.input == {"city": "Berlin", "metric": True}
    assert final.stop_reason == "tool_use"


def test_tool_result_round_trip(client: anthropic.Anthropic) -> None:
    first = client.messages.create(
        model=MODEL, max_tokens=64, messages=user("Berlin"), tools=[WEATHER_TOOL]
    )
    (block,) = first.content
    assert block.type == "tool_use"
    messages: Any = [
        *user("Berlin"),
        {"role": "assistant", "content": [block.model_dump(exclude_none=True)]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": block.id, "content": "cloudy"}],
        },
    ]
    second = client.messages.create(
        model=MODEL, max_tokens=64, messages=messages, tools=[WEATHER_TOOL]
    )
    assert second.content[0].type == "text"
    assert second.content[0].text == "The tool returned: cloudy"


@pytest.mark.parametrize(
    ("model", "error"),
    [
        ("error-401", anthropic.AuthenticationError),
        ("error-429", anthropic.RateLimitError),
        ("error-500", anthropic.InternalServerError),
    ],
)
def test_errors(client: anthropic.Anthropic, model: str, error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        client.messages.create(model=model, max_tokens=8, messages=user("x"))
    assert isinstance(caught.value, anthropic.APIStatusError)
    body: Any = caught.value.body
    assert body["type"] == "error"


def test_queued_rate_limit(client: anthropic.Anthropic, provider: LocalProvider) -> None:
    provider.queue_error(429, retry_after=3)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(model=MODEL, max_tokens=8, messages=user("x"))
    assert caught.value.response.headers["retry-after"] == "3"
    body: Any = caught.value.body
    assert body["error"]["type"] == "rate_limit_error"


def test_cut_stream(client: anthropic.Anthropic, provider: LocalProvider) -> None:
    provider.behaviour.cut_after = 4
    received: list[Any] = []
    with (
        client.messages.stream(model=MODEL, max_tokens=8, messages=user("a b c")) as stream,
        pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)) as raised,
    ):
        # anthropic before 2.17 let the transport error through; since, it wraps it.
        drain(stream.text_stream, received)
    error = raised.value
    transport = error if isinstance(error, httpx2.RemoteProtocolError) else error.__cause__
    assert isinstance(transport, httpx2.RemoteProtocolError)
    assert received == ["You"]  # message_start, block_start, ping, first delta


async def test_async_stream(aclient: anthropic.AsyncAnthropic) -> None:
    async with aclient.messages.stream(
        model=MODEL, max_tokens=64, messages=user("async hi")
    ) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == "You said: async hi"
    assert final.usage.output_tokens == 5


async def test_async_tool_use_and_error(
    aclient: anthropic.AsyncAnthropic, provider: LocalProvider
) -> None:
    async with aclient.messages.stream(
        model=MODEL, max_tokens=64, messages=user("Quito"), tools=[WEATHER_TOOL]
    ) as stream:
        final = await stream.get_final_message()
    assert final.content[0].type == "tool_use"
    assert final.content[0].input == {"city": "Quito", "metric": True}
    provider.queue_error(401)
    with pytest.raises(anthropic.AuthenticationError):
        await aclient.messages.create(model=MODEL, max_tokens=8, messages=user("x"))
