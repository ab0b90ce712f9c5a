"""Inside a running event loop, llmcassette never blocks: no file access, no sleep.

Async suites (pydantic-ai's, for one) run their tests under BlockBuster, which turns a
blocking call made from a library's frames inside the event loop into an error. A cassette
opens and saves outside the requests (a fixture, a ``with`` block); everything a request
does in between (record, replay with its timing, a mismatch and its report, a legacy
cassette's drift, a scheduled fault) must not read a file, stat one or sleep. Here
BlockBuster watches llmcassette's own modules while the requests run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import httpx
import httpx2
import openai
import pytest
import vcr

import llmcassette
from llmcassette.testing import LocalProvider

# Python 3.10's pathlib calls the os.stat it bound at import, not the one BlockBuster puts
# in its place: the watch would miss a blocking Path.is_file (test_the_watch_catches_a_...).
pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="BlockBuster misses pathlib's calls on Python 3.10"
)

CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hello there"}]}
AUTH = {"authorization": "Bearer sk-test"}

Ask = Callable[[str, dict[str, object]], Awaitable[list[bytes]]]


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


@contextmanager
def watched() -> Iterator[None]:
    """BlockBuster, raising on a blocking call that llmcassette's frames make in the loop."""
    from blockbuster import BlockBuster  # imported here: its import patches builtins

    buster = BlockBuster(["llmcassette"])
    buster.activate()
    try:
        yield
    finally:
        buster.deactivate()


async def ask_httpx(url: str, body: dict[str, object]) -> list[bytes]:
    async with (
        httpx.AsyncClient() as client,
        client.stream("POST", url, json=body, headers=AUTH) as response,
    ):
        return [line.encode() async for line in response.aiter_lines()]


async def ask_httpx2(url: str, body: dict[str, object]) -> list[bytes]:
    async with (
        httpx2.AsyncClient() as client,
        client.stream("POST", url, json=body, headers=AUTH) as response,
    ):
        return [line.encode() async for line in response.aiter_lines()]


async def ask_aiohttp(url: str, body: dict[str, object]) -> list[bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=AUTH) as response,
    ):
        return [line async for line in response.content]


CLIENTS: dict[str, Ask] = {"httpx": ask_httpx, "httpx2": ask_httpx2, "aiohttp": ask_aiohttp}


async def watched_ask(ask: Ask, url: str, body: dict[str, object] = CHAT) -> list[bytes]:
    with watched():
        return await ask(url, body)


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_record_then_replay_with_timing(
    tmp_path: Path, provider: LocalProvider, client: str
) -> None:
    ask, url = CLIENTS[client], f"{provider.url}/v1/chat/completions"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        live = await watched_ask(ask, url)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", pace="recorded"):
        assert await watched_ask(ask, url) == live


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_a_mismatch_and_its_report(
    tmp_path: Path, provider: LocalProvider, client: str
) -> None:
    ask, url = CLIENTS[client], f"{provider.url}/v1/chat/completions"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        await watched_ask(ask, url)
    changed = {**CHAT, "messages": [{"role": "user", "content": "goodbye"}]}
    with (
        pytest.raises(Exception, match=r"messages\[0\]\.content") as raised,
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
    ):
        await watched_ask(ask, url, changed)
    assert "BlockingError" not in repr(raised.value)


async def test_a_legacy_cassette_whose_request_drifted(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = f"{provider.url}/v1/chat/completions"
    with vcr.VCR(record_mode="once").use_cassette(str(tmp_path / "old.yaml")):
        live = await ask_httpx2(url, CHAT)
    provider.stop()
    changed = {**CHAT, "messages": [{"role": "user", "content": "goodbye"}]}
    with (
        pytest.warns(llmcassette.LegacyCassetteDriftWarning, match=r"messages\[0\]\.content"),
        llmcassette.use_cassette(tmp_path / "old.yaml", record_mode="none"),
    ):
        assert await watched_ask(ask_httpx2, url, changed) == live


async def test_a_scheduled_fault_then_the_sdk_retry(
    tmp_path: Path, provider: LocalProvider
) -> None:
    async def ask() -> str:
        client = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk-test")
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    path = tmp_path / "retry.jsonl"
    with llmcassette.use_cassette(path):
        recorded = await ask()
    sidecar = [{"at": 0, "status": 429, "headers": {"retry-after": "0"}}, {"at": 1, "recorded": 0}]
    path.with_name("retry.overrides.json").write_text(
        json.dumps({"mode": "patch", "entries": sidecar})
    )
    with llmcassette.use_cassette(path, record_mode="none"), watched():
        assert await ask() == recorded


async def test_fan_out_of_sessions(tmp_path: Path, provider: LocalProvider) -> None:
    url = f"{provider.url}/v1/chat/completions"

    async def agent(name: str) -> list[bytes]:
        with llmcassette.session(name):
            body = {**CHAT, "messages": [{"role": "user", "content": f"I am {name}"}]}
            return await ask_httpx(url, body)

    async def fan_out() -> list[list[bytes]]:
        with watched():
            return await asyncio.gather(*(agent(f"agent-{n}") for n in range(4)))

    with llmcassette.use_cassette(tmp_path / "fan", record_mode="once"):
        live = await fan_out()
    with llmcassette.use_cassette(tmp_path / "fan", record_mode="none"):
        assert await fan_out() == live


async def test_the_watch_catches_a_blocking_call(tmp_path: Path) -> None:
    """The watch is real: a file read from llmcassette's frames in the loop is caught."""
    from blockbuster import BlockingError

    from llmcassette.faults import sidecar

    with watched(), pytest.raises(BlockingError, match=r"os\.stat"):
        sidecar.load(tmp_path / "c.overrides.json")


ASYNC_SUITE = """
import os
import openai
import pytest

@pytest.fixture(autouse=True)
def blockbuster():
    from blockbuster import BlockBuster
    buster = BlockBuster(["llmcassette"])
    buster.activate()
    yield
    buster.deactivate()

async def ask(prompt):
    client = openai.AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="sk-test")
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": prompt}}], stream=True
    )
    return [chunk async for chunk in stream]

@pytest.mark.vcr
async def test_story():
    assert await ask("tell me a story")

@pytest.mark.vcr
async def test_joke():
    assert await ask("{joke}")
"""


def test_a_whole_async_pytest_run_under_blockbuster(
    pytester: pytest.Pytester, provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-recording's fixture opens and saves the cassettes; the requests run watched."""
    monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
    pytester.makeini("[pytest]\nasyncio_mode = auto\n")
    pytester.makepyfile(test_suite=ASYNC_SUITE.format(joke="tell me a joke"))
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=2)
    pytester.makepyfile(test_suite=ASYNC_SUITE.format(joke="tell me a better joke"))
    replayed = pytester.runpytest_subprocess("--record-mode=none")
    replayed.assert_outcomes(passed=1, failed=1)  # the story replays; the joke changed
    replayed.stdout.fnmatch_lines(["*messages[[]0[]].content*"])
    replayed.stdout.no_fnmatch_line("*BlockingError*")
