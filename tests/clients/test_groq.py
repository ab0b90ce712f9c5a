"""The groq SDK (sync, async, streamed) records against the local provider and replays offline."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay, stored_events

groq = pytest.importorskip("groq")

MODEL = "llama-3.1-8b-instant"
MESSAGES: Any = [{"role": "user", "content": "Which clients can replay Groq?"}]
ANSWER = "You said: Which clients can replay Groq?"
API_KEY = "gsk_" + "L0calProviderKey" * 3


def test_chat_and_stream(tmp_path: Path) -> None:
    def call(provider: LocalProvider) -> tuple[str, list[Any]]:
        client = groq.Groq(base_url=provider.url, api_key=API_KEY, max_retries=0)
        whole = client.chat.completions.create(model=MODEL, messages=MESSAGES)
        chunks = list(client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True))
        return whole.choices[0].message.content, [c.model_dump() for c in chunks]

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    assert replayed[0] == ANSWER
    chunks = replayed[1]
    assert "".join(c["choices"][0]["delta"]["content"] or "" for c in chunks) == ANSWER
    # The SDK yields every event but the closing [DONE].
    assert len(chunks) == len(stored_events(cassette)[0]) - 1
    assert chunks[0]["x_groq"]["id"].startswith("req_01")
    assert API_KEY not in cassette.read_text()


def test_async_stream(tmp_path: Path) -> None:
    async def deltas(provider: LocalProvider) -> list[str]:
        client = groq.AsyncGroq(base_url=provider.url, api_key=API_KEY, max_retries=0)
        stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
        return [c.choices[0].delta.content or "" async for c in stream]

    recorded, replayed, cassette = record_then_replay(tmp_path, lambda p: asyncio.run(deltas(p)))
    assert replayed == recorded
    assert "".join(replayed) == ANSWER
    assert len(replayed) == len(stored_events(cassette)[0]) - 1
