"""Sessions under anyio (asyncio backend): a task group's ``start_soon`` and
``anyio.to_thread.run_sync`` carry the label, so agents with identical first requests
replay their own streamed conversations whatever order they run in
(docs/concurrency.md, the table under "Sessions").
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
import requests

import llmcassette
from llmcassette.testing import LocalProvider

OPTIONS: Any = {"match": {"volatile": ["uuid"]}}
AGENTS = 4


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


async def run_agents(provider: LocalProvider, seed: int) -> list[list[str]]:
    rnd = random.Random(seed)
    client = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk-test")
    url = f"{provider.url}/v1/chat/completions"
    found: dict[int, list[str]] = {}

    def in_a_thread(messages: list[dict[str, str]]) -> str:
        body = {"model": "m", "messages": messages}
        answer = requests.post(url, json=body, headers={"authorization": "Bearer sk-test"})
        return str(answer.json()["choices"][0]["message"]["content"])

    async def agent(number: int, pause: float) -> None:
        messages = [{"role": "user", "content": f"Plan. Run {uuid.uuid4()}"}]
        await anyio.sleep(pause)
        stream = await client.chat.completions.create(model="m", messages=messages, stream=True)
        text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"agent {number}, go on"},
        ]
        found[number] = [text, await anyio.to_thread.run_sync(in_a_thread, messages)]

    async with anyio.create_task_group() as group:
        for number in range(AGENTS):
            with llmcassette.session(f"agent{number}"):
                group.start_soon(agent, number, rnd.random() * 0.02)
    await client.close()
    return [found[number] for number in range(AGENTS)]


def test_anyio_agents_replay_their_own_conversations(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "agents.jsonl"
    with llmcassette.use_cassette(path, **OPTIONS):
        recorded = anyio.run(run_agents, provider, 0)
    sent = len(provider.requests)
    for seed in range(1, 6):  # other orders of arrival
        with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
            assert anyio.run(run_agents, provider, seed) == recorded
    assert len(provider.requests) == sent
    records = [json.loads(line) for line in path.read_text().splitlines()]
    sessions = [record.get("session") for record in records if record.get("type") == "request"]
    assert sorted(sessions) == sorted(f"agent{number}" for number in range(AGENTS) for _ in "ab")
