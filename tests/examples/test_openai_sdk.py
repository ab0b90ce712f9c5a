"""Example cassettes recorded through the openai SDK (httpx2)."""

from __future__ import annotations

import json

import openai
import pytest


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="sk-example", max_retries=0)


@pytest.mark.vcr
def test_chat_stream(base_url: str) -> None:
    stream = client(base_url).chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Name three rivers"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "You said: Name three rivers"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


@pytest.mark.vcr
def test_chat_tool_call_stream(base_url: str) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    stream = client(base_url).chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[tool],  # type: ignore[list-item]
        stream=True,
    )
    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in stream
        if c.choices and c.choices[0].delta.tool_calls and c.choices[0].delta.tool_calls[0].function
    )
    assert isinstance(json.loads(arguments), dict)


@pytest.mark.vcr
def test_responses_stream(base_url: str) -> None:
    events = list(
        client(base_url).responses.create(model="gpt-4o-mini", input="Say hello", stream=True)
    )
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "You said: Say hello"  # type: ignore[union-attr]


@pytest.mark.vcr
def test_chat_not_streamed(base_url: str) -> None:
    completion = client(base_url).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "One word"}]
    )
    assert completion.choices[0].message.content == "You said: One word"
