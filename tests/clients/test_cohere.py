"""cohere's v2 client (sync, async, streamed) records against the local provider and replays offline."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay, stored_events

cohere = pytest.importorskip("cohere")

MODEL = "command-r-plus"
MESSAGES: Any = [{"role": "user", "content": "Which clients can replay Cohere?"}]
ANSWER = "You said: Which clients can replay Cohere?"
API_KEY = "co" + "L0calProviderKey" * 2


def _text(events: list[tuple[str, str]]) -> str:
    return "".join(text for kind, text in events if kind == "content-delta")


def _kind_and_text(event: Any) -> tuple[str, str]:
    content = getattr(getattr(getattr(event, "delta", None), "message", None), "content", None)
    return event.type, getattr(content, "text", None) or ""


def test_chat_and_stream(tmp_path: Path) -> None:
    def call(provider: LocalProvider) -> tuple[str, list[tuple[str, str]]]:
        client = cohere.ClientV2(api_key=API_KEY, base_url=provider.url)
        whole = client.chat(model=MODEL, messages=MESSAGES)
        events = [_kind_and_text(e) for e in client.chat_stream(model=MODEL, messages=MESSAGES)]
        return whole.message.content[0].text, events

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    assert replayed[0] == ANSWER
    events = replayed[1]
    assert _text(events) == ANSWER
    # Every typed event reaches the SDK's stream, one by one, from message-start to message-end.
    assert len(events) == len(stored_events(cassette)[0])
    assert events[0][0] == "message-start"
    assert events[-1][0] == "message-end"
    assert API_KEY not in cassette.read_text()


def test_async_stream(tmp_path: Path) -> None:
    async def events(provider: LocalProvider) -> list[tuple[str, str]]:
        client = cohere.AsyncClientV2(api_key=API_KEY, base_url=provider.url)
        return [_kind_and_text(e) async for e in client.chat_stream(model=MODEL, messages=MESSAGES)]

    recorded, replayed, cassette = record_then_replay(tmp_path, lambda p: asyncio.run(events(p)))
    assert replayed == recorded
    assert _text(replayed) == ANSWER
    assert len(replayed) == len(stored_events(cassette)[0])
