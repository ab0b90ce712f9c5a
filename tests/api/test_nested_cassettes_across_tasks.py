"""A cassette nested in a task or thread that the outer block started, while other tasks
and threads go on using the outer one.

vcrpy's patches are the whole process's: the nested cassette's patches catch every
request, whoever sends it. Each request goes to the innermost open cassette of the task or
thread that sent it, and the patches come off in the order the cassettes were opened, even
when the nested block closes last.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import httpx
import openai
import pytest
import requests
import urllib3.connectionpool

import llmcassette
from llmcassette import OverlappingCassettesError
from llmcassette.testing import LocalProvider

AUTH = {"authorization": "Bearer sk-test"}


def prompts(path: Path) -> list[str]:
    """The user prompts of the requests stored in a cassette, in file order."""
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        record["body"]["json"]["messages"][-1]["content"]
        for record in records
        if record.get("type") == "request"
    ]


def chat(prompt: str) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": prompt}]}


def nothing_patched(provider: LocalProvider) -> None:
    """Every client is back to the network once all cassettes closed."""
    assert not hasattr(httpx.HTTPTransport.handle_request, "cassette")
    assert urllib3.connectionpool.HTTPConnectionPool.ConnectionCls.__module__ == (
        "urllib3.connection"
    )
    before = len(provider.requests)
    httpx.post(f"{provider.url}/v1/chat/completions", json=chat("after"), headers=AUTH)
    requests.post(f"{provider.url}/v1/chat/completions", json=chat("after"), headers=AUTH)
    assert len(provider.requests) == before + 2


def test_a_sibling_task_records_into_the_outer_cassette(
    provider: LocalProvider, tmp_path: Path
) -> None:
    # One task opens a nested cassette; its sibling, started by the same outer block,
    # calls while the nested one is open. It used to be recorded into the nested one.
    async def run(record_mode: str) -> list[str]:
        nested_open = asyncio.Event()
        sibling_done = asyncio.Event()
        client = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk-test")

        async def ask(prompt: str) -> str:
            answer = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": prompt}]
            )
            return str(answer.choices[0].message.content)

        async def with_its_own_cassette() -> str:
            with llmcassette.use_cassette(tmp_path / "nested.jsonl", record_mode=record_mode):
                nested_open.set()
                answer = await ask("nested")
                await sibling_done.wait()
                return answer

        async def sibling() -> str:
            await nested_open.wait()
            try:
                return await ask("sibling")
            finally:
                sibling_done.set()

        with llmcassette.use_cassette(tmp_path / "outer.jsonl", record_mode=record_mode):
            answers = await asyncio.gather(with_its_own_cassette(), sibling())
        await client.close()
        return answers

    assert asyncio.run(run("once")) == ["You said: nested", "You said: sibling"]
    assert prompts(tmp_path / "outer.jsonl") == ["sibling"]
    assert prompts(tmp_path / "nested.jsonl") == ["nested"]
    sent = len(provider.requests)
    assert asyncio.run(run("none")) == ["You said: nested", "You said: sibling"]
    assert len(provider.requests) == sent  # both replayed, each from its own file
    nothing_patched(provider)


def test_the_thread_that_opened_the_outer_cassette_records_into_it(
    provider: LocalProvider, tmp_path: Path
) -> None:
    # A worker thread run in a copy of the context opens a nested cassette; the main thread
    # goes on calling through requests meanwhile.
    nested_open = threading.Event()
    main_done = threading.Event()
    url = f"{provider.url}/v1/chat/completions"

    def worker() -> None:
        with llmcassette.use_cassette(tmp_path / "nested.jsonl"):
            nested_open.set()
            requests.post(url, json=chat("worker"), headers=AUTH, timeout=10)
            assert main_done.wait(10)

    with llmcassette.use_cassette(tmp_path / "outer.jsonl"):
        thread = threading.Thread(target=contextvars.copy_context().run, args=(worker,))
        thread.start()
        assert nested_open.wait(10)
        with requests.Session() as session:
            session.post(url, json=chat("main"), headers=AUTH, timeout=10)
        main_done.set()
        thread.join(10)
    assert prompts(tmp_path / "outer.jsonl") == ["main"]
    assert prompts(tmp_path / "nested.jsonl") == ["worker"]
    nothing_patched(provider)


@pytest.mark.parametrize("client", ["httpx", "requests"])
def test_a_nested_cassette_closed_after_the_outer_one_keeps_its_patches(
    provider: LocalProvider, tmp_path: Path, client: str
) -> None:
    # A task started in the outer block outlives it. Its cassette used to lose its patches
    # when the outer one closed (its calls went out unrecorded), and, closing, put the outer
    # cassette's patches back for the rest of the process.
    url = f"{provider.url}/v1/chat/completions"

    async def call(prompt: str) -> None:
        if client == "httpx":
            async with httpx.AsyncClient() as http:
                await http.post(url, json=chat(prompt), headers=AUTH)
        else:
            await asyncio.to_thread(requests.post, url, json=chat(prompt), headers=AUTH)

    async def run() -> None:
        nested_open = asyncio.Event()
        outer_closed = asyncio.Event()

        async def outliving() -> None:
            with llmcassette.use_cassette(tmp_path / "nested.jsonl"):
                nested_open.set()
                await outer_closed.wait()
                await call("after the outer block")

        with llmcassette.use_cassette(tmp_path / "outer.jsonl"):
            task = asyncio.create_task(outliving())
            await nested_open.wait()
            await call("outer")
        outer_closed.set()
        await task

    asyncio.run(run())
    assert prompts(tmp_path / "outer.jsonl") == ["outer"]
    assert prompts(tmp_path / "nested.jsonl") == ["after the outer block"]
    nothing_patched(provider)


def test_sub_agents_each_with_a_nested_cassette_at_once(
    provider: LocalProvider, tmp_path: Path
) -> None:
    # Every task the outer block started may open a cassette of its own, at the same time:
    # each records and replays its own calls, the parent's go to the outer one, and the
    # nested blocks close in any order.
    names = ["critic", "editor", "planner"]

    async def run(record_mode: str) -> list[str]:
        # Every sub-agent's cassette open before any calls (asyncio.Barrier, from 3.11 only).
        opened: list[str] = []
        all_open = asyncio.Event()

        async def sub_agent(http: httpx.AsyncClient, name: str, last: int) -> str:
            with llmcassette.use_cassette(tmp_path / f"{name}.jsonl", record_mode=record_mode):
                opened.append(name)
                if len(opened) == len(names):
                    all_open.set()
                await all_open.wait()
                await asyncio.sleep(0.01 * last)  # the first one opened closes last
                response = await http.post(
                    f"{provider.url}/v1/chat/completions", json=chat(name), headers=AUTH
                )
                return str(response.json()["choices"][0]["message"]["content"])

        async with httpx.AsyncClient() as http:
            with llmcassette.use_cassette(tmp_path / "parent.jsonl", record_mode=record_mode):
                answers = await asyncio.gather(
                    *(sub_agent(http, name, len(names) - i) for i, name in enumerate(names))
                )
                response = await http.post(
                    f"{provider.url}/v1/chat/completions", json=chat("parent"), headers=AUTH
                )
                answers.append(str(response.json()["choices"][0]["message"]["content"]))
        return answers

    expected = [f"You said: {name}" for name in [*names, "parent"]]
    assert asyncio.run(run("once")) == expected
    for name in [*names, "parent"]:
        assert prompts(tmp_path / f"{name}.jsonl") == [name]
    sent = len(provider.requests)
    assert asyncio.run(run("none")) == expected
    assert len(provider.requests) == sent
    nothing_patched(provider)


def test_a_task_that_owns_no_open_cassette_is_still_refused(tmp_path: Path) -> None:
    # Beside a nested cassette, a task unrelated to both blocks may not open one.
    async def run() -> BaseException | None:
        outer_open = asyncio.Event()
        tried = asyncio.Event()

        async def holder() -> None:
            with (
                llmcassette.use_cassette(tmp_path / "outer.jsonl"),
                llmcassette.use_cassette(tmp_path / "nested.jsonl"),
            ):
                outer_open.set()
                await tried.wait()

        async def stranger() -> BaseException | None:
            await outer_open.wait()
            try:
                with llmcassette.use_cassette(tmp_path / "stranger.jsonl"):
                    return None
            except OverlappingCassettesError as error:
                return error
            finally:
                tried.set()

        holding = asyncio.create_task(holder())  # created outside any cassette
        refused = await stranger()
        await holding
        return refused

    refused = asyncio.run(run())
    assert isinstance(refused, OverlappingCassettesError)
    assert refused.open_path.endswith("nested.jsonl")


def test_the_outer_cassette_records_while_a_nested_one_replays(
    provider: LocalProvider, tmp_path: Path
) -> None:
    # vcrpy's stubs ask the cassette whose patches caught the request whether it may
    # record: the nested one, in record mode "none", refused the outer block's calls.
    url = f"{provider.url}/v1/chat/completions"
    with llmcassette.use_cassette(tmp_path / "nested.jsonl"):
        requests.post(url, json=chat("worker"), headers=AUTH, timeout=10)
    nested_open = threading.Event()
    main_done = threading.Event()
    replayed: list[str] = []

    def worker() -> None:
        with llmcassette.use_cassette(tmp_path / "nested.jsonl", record_mode="none"):
            nested_open.set()
            answer = requests.post(url, json=chat("worker"), headers=AUTH, timeout=10).json()
            replayed.append(answer["choices"][0]["message"]["content"])
            assert main_done.wait(10)

    async def with_aiohttp() -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json=chat("main, aiohttp"), headers=AUTH) as response,
        ):
            assert response.status == 200

    with llmcassette.use_cassette(tmp_path / "outer.jsonl"):
        thread = threading.Thread(target=contextvars.copy_context().run, args=(worker,))
        thread.start()
        assert nested_open.wait(10)
        try:
            requests.post(url, json=chat("main, requests"), headers=AUTH, timeout=10)
            asyncio.run(with_aiohttp())
        finally:
            main_done.set()
            thread.join(10)
    assert replayed == ["You said: worker"]
    assert prompts(tmp_path / "outer.jsonl") == ["main, requests", "main, aiohttp"]
    nothing_patched(provider)


def test_a_pool_thread_opens_a_nested_cassette_only_in_a_copy_of_the_context(
    provider: LocalProvider, tmp_path: Path
) -> None:
    # A plain executor thread does not carry the context: nothing tells that the outer block
    # started it, so its cassette is refused, with the way to carry it.
    url = f"{provider.url}/v1/chat/completions"

    def sub_agent(name: str) -> list[str]:
        with llmcassette.use_cassette(tmp_path / f"{name}.jsonl"):
            requests.post(url, json=chat(name), headers=AUTH, timeout=10)
        return prompts(tmp_path / f"{name}.jsonl")

    with (
        llmcassette.use_cassette(tmp_path / "outer.jsonl"),
        ThreadPoolExecutor(2) as pool,
    ):
        plain = pool.submit(sub_agent, "plain")
        with pytest.raises(OverlappingCassettesError, match=r"contextvars\.copy_context\(\)\.run"):
            plain.result()
        carried = pool.submit(contextvars.copy_context().run, sub_agent, "carried")
        assert carried.result() == ["carried"]
    assert not (tmp_path / "plain.jsonl").exists()
