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


def test_a_stream_cut_before_done_is_healed_and_the_sdk_reads_it(tmp_path: Path) -> None:
    """llmcassette heal appends Ollama's last object (done, no counts): the SDK parses it."""
    import json

    import llmcassette
    from llmcassette.cli.main import main

    def parts(provider: LocalProvider) -> list[dict[str, object]]:
        client = ollama.Client(host=provider.ollama_base_url)
        stream = client.chat(model="llama3.2", messages=MESSAGES, stream=True)
        return [part.model_dump() for part in stream]

    cassette = tmp_path / "cassette.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(cassette, record_mode="all"):
        recorded = parts(provider)
    lines = cassette.read_text().splitlines()
    assert json.loads(lines[-2])["data"]["done"] is True
    cassette.write_text("\n".join([*lines[:-2], lines[-1]]) + "\n")  # cut before done
    assert main(["heal", str(cassette)]) == 0
    # The provider is stopped: only the cassette can answer.
    with llmcassette.use_cassette(cassette, record_mode="none") as replay:
        healed = parts(provider)
    assert replay.all_played
    measured = ["total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration"]
    measured += ["eval_count", "eval_duration"]
    assert all(recorded[-1][field] is not None for field in measured)
    for field in measured:  # left empty by heal, not made up
        assert healed[-1][field] is None
        recorded[-1][field] = None
    assert healed == recorded
    assert healed[-1]["done"] is True
    assert "".join(part["message"]["content"] for part in healed) == ANSWER
