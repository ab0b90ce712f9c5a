"""Client numbering for the clients on vcrpy's own stubs, as for httpx: each
``requests.Session`` (a urllib3 pool) and each ``aiohttp.ClientSession`` is numbered in the
order of its first call, the number is stored on the request line, and replay gives a live
client the answers its recorded counterpart got (docs/concurrency.md, "Separate clients").

Two sub-agents, each with a client of its own, make their first calls one after the other,
then send the same request (a run id in it, which matching treats as volatile): recorded
one after the other, replayed together, the second sub-agent's request first. Without
numbering, arrival order gave each one the other's answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import requests

import llmcassette
from llmcassette.testing import LocalProvider

OPTIONS: Any = {"match": {"volatile": ["uuid"]}}
AUTH = {"authorization": "Bearer sk-test"}
NAMES = ["researcher", "writer"]


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def question() -> dict[str, Any]:
    content = f"Next step. Run {uuid.uuid4()}"
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def client_numbers(path: Path) -> list[int | None]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [record.get("client") for record in records if record.get("type") == "request"]


def test_requests_sessions_in_threads_keep_their_own_answers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = f"{provider.url}/v1/chat/completions"

    def ask(session: requests.Session) -> str:
        answer = session.post(url, json=question(), headers=AUTH, timeout=10).json()
        return str(answer["choices"][0]["message"]["content"])

    def two_sub_agents(together: bool) -> dict[str, list[str]]:
        sessions = {name: requests.Session() for name in NAMES}
        answers = {name: [ask(session)] for name, session in sessions.items()}
        if not together:
            for name, session in sessions.items():
                answers[name].append(ask(session))
            return answers
        writer_sent = threading.Event()

        def sub_agent(name: str) -> None:
            if name == "researcher":
                assert writer_sent.wait(10)
            answers[name].append(ask(sessions[name]))
            writer_sent.set()

        threads = [threading.Thread(target=sub_agent, args=(name,)) for name in NAMES]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        return answers

    path = tmp_path / "sub_agents.jsonl"
    with llmcassette.use_cassette(path, **OPTIONS):
        recorded = two_sub_agents(together=False)
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        replayed = two_sub_agents(together=True)
    assert replayed == recorded
    assert client_numbers(path) == [1, 2, 1, 2]


def test_aiohttp_sessions_in_tasks_keep_their_own_answers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = f"{provider.url}/v1/chat/completions"

    async def ask(session: aiohttp.ClientSession) -> str:
        async with session.post(url, json=question(), headers=AUTH) as response:
            answer = await response.json()
        return str(answer["choices"][0]["message"]["content"])

    async def two_sub_agents(together: bool) -> dict[str, list[str]]:
        sessions = {name: aiohttp.ClientSession() for name in NAMES}
        try:
            answers = {name: [await ask(session)] for name, session in sessions.items()}
            if together:
                writer, researcher = await asyncio.gather(
                    ask(sessions["writer"]), ask(sessions["researcher"])
                )
                answers["writer"].append(writer)
                answers["researcher"].append(researcher)
            else:
                for name, session in sessions.items():
                    answers[name].append(await ask(session))
            return answers
        finally:
            for session in sessions.values():
                await session.close()

    path = tmp_path / "sub_agents.jsonl"
    with llmcassette.use_cassette(path, **OPTIONS):
        recorded = asyncio.run(two_sub_agents(together=False))
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        replayed = asyncio.run(two_sub_agents(together=True))
    assert replayed == recorded
    assert client_numbers(path) == [1, 2, 1, 2]


def test_module_level_requests_calls_are_a_new_client_each_time(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # requests.post() makes a session for the call, as httpx.get() makes a client.
    path = tmp_path / "calls.jsonl"
    url = f"{provider.url}/v1/chat/completions"
    with llmcassette.use_cassette(path, **OPTIONS):
        for _ in range(3):
            requests.post(url, json=question(), headers=AUTH, timeout=10)
    assert client_numbers(path) == [1, 2, 3]
