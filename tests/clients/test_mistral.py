"""mistralai (sync, async, streamed) records against the local provider and replays offline.

mistralai speaks OpenAI's chat completions shape at ``{server_url}/v1/chat/completions``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay, stored_events

mistral_client = pytest.importorskip("mistralai.client")

MODEL = "mistral-small-latest"
MESSAGES: Any = [{"role": "user", "content": "Which clients can replay Mistral?"}]
ANSWER = "You said: Which clients can replay Mistral?"
API_KEY = "mistral" + "L0calKey" * 4


def test_complete_and_stream(tmp_path: Path) -> None:
    def call(provider: LocalProvider) -> tuple[str, list[str]]:
        client = mistral_client.Mistral(api_key=API_KEY, server_url=provider.url)
        whole = client.chat.complete(model=MODEL, messages=MESSAGES)
        stream = client.chat.stream(model=MODEL, messages=MESSAGES)
        return whole.choices[0].message.content, [
            e.data.choices[0].delta.content or "" for e in stream
        ]

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    assert replayed[0] == ANSWER
    assert "".join(replayed[1]) == ANSWER
    # The SDK yields every event but the closing [DONE].
    assert len(replayed[1]) == len(stored_events(cassette)[0]) - 1
    assert API_KEY not in cassette.read_text()


def test_async_complete_and_stream(tmp_path: Path) -> None:
    async def both(provider: LocalProvider) -> tuple[str, list[str]]:
        client = mistral_client.Mistral(api_key=API_KEY, server_url=provider.url)
        whole = await client.chat.complete_async(model=MODEL, messages=MESSAGES)
        stream = await client.chat.stream_async(model=MODEL, messages=MESSAGES)
        deltas = [e.data.choices[0].delta.content or "" async for e in stream]
        return whole.choices[0].message.content, deltas

    recorded, replayed, cassette = record_then_replay(tmp_path, lambda p: asyncio.run(both(p)))
    assert replayed == recorded
    assert replayed[0] == ANSWER
    assert len(replayed[1]) == len(stored_events(cassette)[0]) - 1
