"""A request the cassette cannot answer costs one attempt, with the SDKs' default retries.

openai 3.x and anthropic 2.x (on httpx2) get the ``CassetteMismatch``, which is also their
own error class, so they neither wrap nor retry it; openai 2.x on httpx gets a response
that says not to retry (``tests/clients/test_openai2.py``). One attempt, no backoff, the
path named.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import llmcassette
from llmcassette._vcr.mismatch import RAISED
from llmcassette.testing import LocalProvider

KEY = "sk-local-key"


async def _ask(sdk: str, is_async: bool, base: LocalProvider | str, prompt: str) -> None:
    messages: Any = [{"role": "user", "content": prompt}]
    if sdk == "openai":
        url = base if isinstance(base, str) else base.openai_base_url
        if is_async:
            async with openai.AsyncOpenAI(base_url=url, api_key=KEY) as client:
                await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        else:
            with openai.OpenAI(base_url=url, api_key=KEY) as client:
                client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        return
    url = base if isinstance(base, str) else base.anthropic_base_url
    options: Any = {"model": "claude-haiku-4-5", "max_tokens": 32, "messages": messages}
    if is_async:
        async with anthropic.AsyncAnthropic(base_url=url, api_key=KEY) as client:
            await client.messages.create(**options)
    else:
        with anthropic.Anthropic(base_url=url, api_key=KEY) as client:
            client.messages.create(**options)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
async def test_a_changed_prompt_is_tried_once(tmp_path: Path, sdk: str, is_async: bool) -> None:
    path = tmp_path / "c.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(path):
        await _ask(sdk, is_async, provider, "the recorded prompt")
        url = provider.openai_base_url if sdk == "openai" else provider.anthropic_base_url
    raised = len(RAISED)
    started = time.monotonic()
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        await _ask(sdk, is_async, url, "a changed prompt")
    assert time.monotonic() - started < 1.0  # two retries with backoff take over 1 s
    assert len(RAISED) == raised + 1  # one attempt
    assert isinstance(
        caught.value, openai.OpenAIError if sdk == "openai" else anthropic.AnthropicError
    )
    assert "body.messages[0].content: recorded 'the recorded prompt'" in str(caught.value)
