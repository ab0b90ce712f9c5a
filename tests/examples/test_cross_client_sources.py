"""The recordings that tests/clients replays with other clients (openai 2.x, litellm, langchain).

Each is recorded through the current openai or anthropic SDK (httpx2), one plain and one
streamed call per API, so the clients matrix proves that a cassette made with today's SDK
serves every other client asking the same thing. In the normal run these tests replay them
with the SDK that made them, so a recording that drifts from what the SDK sends fails here.
"""

from __future__ import annotations

import anthropic
import openai
import pytest

OPENAI_PROMPT = "Which clients can replay this?"
ANTHROPIC_PROMPT = "Which clients can replay this answer?"


def openai_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="sk-example", max_retries=0)


def anthropic_client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key="sk-ant-example", max_retries=0)


@pytest.mark.vcr
def test_openai_chat(base_url: str) -> None:
    completion = openai_client(base_url).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": OPENAI_PROMPT}]
    )
    assert completion.choices[0].message.content == f"You said: {OPENAI_PROMPT}"


@pytest.mark.vcr
def test_openai_chat_stream(base_url: str) -> None:
    stream = openai_client(base_url).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": OPENAI_PROMPT}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == f"You said: {OPENAI_PROMPT}"


@pytest.mark.vcr
def test_anthropic_messages(base_url: str) -> None:
    message = anthropic_client(base_url).messages.create(
        model="claude-haiku-4-5",
        max_tokens=64,
        messages=[{"role": "user", "content": ANTHROPIC_PROMPT}],
    )
    assert message.content[0].type == "text"
    assert message.content[0].text == f"You said: {ANTHROPIC_PROMPT}"


@pytest.mark.vcr
def test_anthropic_messages_stream(base_url: str) -> None:
    with anthropic_client(base_url).messages.stream(
        model="claude-haiku-4-5",
        max_tokens=64,
        messages=[{"role": "user", "content": ANTHROPIC_PROMPT}],
    ) as stream:
        text = "".join(stream.text_stream)
    assert text == f"You said: {ANTHROPIC_PROMPT}"
