"""The ollama SDK records against the local provider and replays with it stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay, stored_events

ollama = pytest.importorskip("ollama")

MESSAGES = [{"role": "user", "content": "Which clients can replay Ollama?"}]
ANSWER = "You said: Which clients can replay Ollama?"


def test_chat_and_stream(tmp_path: Path) -> None:
    def call(provider: LocalProvider) -> tuple[str, list[str]]:
        client = ollama.Client(host=provider.ollama_base_url)
        whole = client.chat(model="llama3.2", messages=MESSAGES, stream=False)
        stream = client.chat(model="llama3.2", messages=MESSAGES, stream=True)
        return whole.message.content, [part.message.content for part in stream]

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    assert replayed[0] == ANSWER
    assert "".join(replayed[1]) == ANSWER
    # One SDK part per NDJSON line, the final done=true line included.
    assert len(replayed[1]) == len(stored_events(cassette)[0]) > 2


def test_async_chat_stream(tmp_path: Path) -> None:
    async def parts(provider: LocalProvider) -> list[str]:
        client = ollama.AsyncClient(host=provider.ollama_base_url)
        stream = await client.chat(model="llama3.2", messages=MESSAGES, stream=True)
        return [part.message.content async for part in stream]

    recorded, replayed, cassette = record_then_replay(tmp_path, lambda p: asyncio.run(parts(p)))
    assert replayed == recorded
    assert "".join(replayed) == ANSWER
    assert len(replayed) == len(stored_events(cassette)[0])
