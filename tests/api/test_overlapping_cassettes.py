"""A cassette opened while another task's or thread's cassette is open fails before it
patches anything: vcrpy's patches are the whole process's, so the requests of both would
go to the cassette opened last."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette import OverlappingCassettesError
from llmcassette.testing import LocalProvider

PROMPT = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
AUTH = {"authorization": "Bearer sk-test"}


async def _ask(url: str, client: httpx.AsyncClient, prompt: str) -> str:
    body = {**PROMPT, "messages": [{"role": "user", "content": prompt}]}
    response = await client.post(f"{url}/v1/chat/completions", json=body, headers=AUTH)
    return str(response.json()["choices"][0]["message"]["content"])


def test_overlapping_blocks_in_two_tasks_fail_and_leave_no_patch(
    provider: LocalProvider, tmp_path: Path
) -> None:
    first_open = asyncio.Event()
    second_tried = asyncio.Event()

    async def first(client: httpx.AsyncClient) -> str:
        with llmcassette.use_cassette(tmp_path / "a.jsonl"):
            first_open.set()
            answer = await _ask(provider.url, client, "first")
            await second_tried.wait()
            return answer

    async def second(client: httpx.AsyncClient) -> str:
        await first_open.wait()
        try:
            with llmcassette.use_cassette(tmp_path / "b.jsonl"):
                return await _ask(provider.url, client, "second")
        finally:
            second_tried.set()

    async def both() -> list[object]:
        async with httpx.AsyncClient() as client:
            return await asyncio.gather(first(client), second(client), return_exceptions=True)

    answered, refused = asyncio.run(both())
    assert isinstance(answered, str)
    assert isinstance(refused, OverlappingCassettesError)
    assert refused.code == "LC403 overlapping-cassettes"
    assert refused.path.endswith("b.jsonl")
    assert refused.open_path.endswith("a.jsonl")
    assert str(refused).startswith(f"{refused.path}: opened while {refused.open_path} is open")
    assert "llmcassette.session(name)" in str(refused)
    # The first block recorded its own call only; the refused one wrote nothing.
    assert (tmp_path / "a.jsonl").read_text().count('"type":"request"') == 1
    assert not (tmp_path / "b.jsonl").exists()
    # Nothing stays patched: a request after both blocks goes to the provider.
    requests_before = len(provider.requests)
    httpx.post(f"{provider.url}/v1/chat/completions", json=PROMPT, headers=AUTH)
    assert len(provider.requests) == requests_before + 1


def test_a_cassette_of_another_thread_is_refused(provider: LocalProvider, tmp_path: Path) -> None:
    opened = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with llmcassette.use_cassette(tmp_path / "a.jsonl", record_mode="all"):
                opened.set()
                release.wait(10)
        except BaseException as error:  # reported below
            errors.append(error)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert opened.wait(10)
        with (
            pytest.raises(OverlappingCassettesError, match="is open in another task or thread"),
            llmcassette.use_cassette(tmp_path / "b.jsonl"),
        ):
            pass
    finally:
        release.set()
        thread.join(10)
    assert errors == []
    with llmcassette.use_cassette(tmp_path / "b.jsonl"):  # once the other one closed
        pass


def test_nested_blocks_and_tasks_started_inside_a_block_are_fine(
    provider: LocalProvider, tmp_path: Path
) -> None:
    async def sub_agent(client: httpx.AsyncClient, name: str) -> str:
        with llmcassette.use_cassette(tmp_path / f"{name}.jsonl"):  # nested in the outer one
            return await _ask(provider.url, client, name)

    async def run() -> list[str]:
        async with httpx.AsyncClient() as client:
            with llmcassette.use_cassette(tmp_path / "outer.jsonl"):
                await _ask(provider.url, client, "outer")
                # One after the other: each nested block closes before the next opens.
                return [await sub_agent(client, "critic"), await sub_agent(client, "editor")]

    assert len(asyncio.run(run())) == 2
    for name in ("outer", "critic", "editor"):
        assert (tmp_path / f"{name}.jsonl").read_text().count('"type":"request"') == 1


def test_concurrent_calls_of_a_decorated_coroutine_are_refused(
    provider: LocalProvider, tmp_path: Path
) -> None:
    started = asyncio.Event()

    @llmcassette.use_cassette(tmp_path / "agent.jsonl", record_mode="all")
    async def agent(client: httpx.AsyncClient, prompt: str) -> str:
        started.set()
        answer = await _ask(provider.url, client, prompt)
        await asyncio.sleep(0.05)
        return answer

    async def two() -> list[object]:
        async def later(client: httpx.AsyncClient) -> str:
            await started.wait()
            return await agent(client, "two")

        async with httpx.AsyncClient() as client:
            return await asyncio.gather(agent(client, "one"), later(client), return_exceptions=True)

    one, two_ = asyncio.run(two())
    assert isinstance(one, str)
    assert isinstance(two_, OverlappingCassettesError)
