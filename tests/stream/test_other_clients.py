"""requests and aiohttp go through vcrpy's own stubs: buffered, but stored event by event."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import requests

import llmcassette
from llmcassette.testing import LocalProvider

CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hello there"}]}
AUTH = {"authorization": "Bearer sk-test"}


def events_in(path: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if line.get("type") == "event"]


def test_requests_stream_records_events_and_replays(tmp_path: Path) -> None:
    def read(url: str) -> list[bytes]:
        with requests.post(url, json=CHAT, headers=AUTH, stream=True, timeout=5) as response:
            return list(response.iter_lines())

    with LocalProvider() as provider:
        url = f"{provider.url}/v1/chat/completions"
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            live = read(url)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        assert read(url) == live
    stored = events_in(tmp_path / "c.jsonl")
    assert stored[-1] == {"type": "event", "text": "[DONE]"}  # no timing: vcrpy buffers
    assert len(stored) == len([line for line in live if line])


async def test_aiohttp_stream_records_events_and_replays(tmp_path: Path) -> None:
    async def read(url: str) -> list[bytes]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json=CHAT, headers=AUTH) as response,
        ):
            return [line async for line in response.content]

    with LocalProvider() as provider:
        url = f"{provider.url}/v1/chat/completions"
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            live = await read(url)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        assert await read(url) == live
    stored = events_in(tmp_path / "c.jsonl")
    assert stored[0]["data"]["object"] == "chat.completion.chunk"  # type: ignore[index]
    assert stored[-1] == {"type": "event", "text": "[DONE]"}


async def test_aiohttp_json_body_with_a_secret_matches_its_redacted_recording(
    tmp_path: Path,
) -> None:
    body = {**CHAT, "stream": False, "api_key": "live-secret-value-123"}

    async def ask(url: str) -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json=body, headers=AUTH) as response,
        ):
            await response.read()
            return response.status

    with LocalProvider() as provider:
        url = f"{provider.url}/v1/chat/completions"
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            assert await ask(url) == 200
    assert "live-secret-value-123" not in (tmp_path / "c.jsonl").read_text()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        assert await ask(url) == 200
