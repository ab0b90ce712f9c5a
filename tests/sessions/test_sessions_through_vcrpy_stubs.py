"""Sessions for the clients vcrpy's own stubs intercept: requests (in threads), aiohttp (in
asyncio tasks), urllib3 and http.client, as for httpx. The label is stored on the request line, replay answers
a request only from its own session, and identical requests sent together outside any
session warn while recording.

Every agent asks the same question with a run id in it (a UUID, which matching treats as
volatile): the requests are identical to matching, and the local provider, which echoes
the question, answers each differently, as a sampling model would. Replay starts the
agents in the reverse order of the recording, so arrival order alone would give each one
the other's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import threading
import urllib.request
import uuid
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import requests
import urllib3

import llmcassette
from llmcassette.testing import LocalProvider

OPTIONS: Any = {"match": {"volatile": ["uuid"]}}
AUTH = {"authorization": "Bearer sk-test"}
NAMES = ["critic", "editor"]


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


@contextlib.contextmanager
def answering_slowly(provider: LocalProvider) -> Iterator[None]:
    """Requests sent together overlap however late one of them leaves (a loaded machine)."""
    provider.behaviour.latency = 0.2
    try:
        yield
    finally:
        provider.behaviour.latency = 0.0


def question() -> dict[str, Any]:
    content = f"Review the draft. Run {uuid.uuid4()}"
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def answer_of(payload: Any) -> str:
    return str(payload["choices"][0]["message"]["content"])


def sessions_on_request_lines(path: Path) -> list[str | None]:
    """The session of each request line, in the order of the file."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [record.get("session") for record in records if record.get("type") == "request"]


def identical_request_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, llmcassette.ConcurrentIdenticalRequestsWarning)
    ]


# --- aiohttp, in asyncio tasks ---------------------------------------------------------------


async def aiohttp_agent(http: aiohttp.ClientSession, url: str) -> tuple[str | None, str]:
    async with http.post(url, json=question(), headers=AUTH) as response:
        return llmcassette.current_session(), answer_of(await response.json())


async def aiohttp_fan_out(url: str, names: list[str], *, sessions: bool) -> dict[str, str]:
    async with aiohttp.ClientSession() as http:
        tasks = {}
        for name in names:
            in_session = llmcassette.session(name) if sessions else contextlib.nullcontext()
            with in_session:  # the task copies the label as it is created
                tasks[name] = asyncio.create_task(aiohttp_agent(http, url))
        await asyncio.gather(*tasks.values())
    return {name: task.result()[1] for name, task in tasks.items()}


def test_aiohttp_tasks_in_sessions_replay_their_own_answers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "agents.jsonl"
    url = provider.openai_base_url + "/chat/completions"
    with answering_slowly(provider), llmcassette.use_cassette(path, **OPTIONS):
        recorded = asyncio.run(aiohttp_fan_out(url, NAMES, sessions=True))
    assert len(set(recorded.values())) == len(NAMES)  # identical requests, different answers
    assert set(sessions_on_request_lines(path)) == set(NAMES)
    sent = len(provider.requests)
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        replayed = asyncio.run(aiohttp_fan_out(url, NAMES[::-1], sessions=True))
    assert replayed == recorded
    assert len(provider.requests) == sent


def test_aiohttp_in_nested_sessions_and_decorated_coroutines(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "nested.jsonl"
    url = provider.openai_base_url + "/chat/completions"

    async def parent() -> list[tuple[str | None, str]]:
        async with aiohttp.ClientSession() as http:
            with llmcassette.session("parent"):
                agents = [llmcassette.session(name)(aiohttp_agent) for name in NAMES]
                return list(await asyncio.gather(*(agent(http, url) for agent in agents)))

    with llmcassette.use_cassette(path, **OPTIONS):
        recorded = asyncio.run(parent())
    assert [label for label, _ in recorded] == ["parent/critic", "parent/editor"]
    assert set(sessions_on_request_lines(path)) == {"parent/critic", "parent/editor"}
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        assert asyncio.run(parent()) == recorded


def test_aiohttp_outside_the_recorded_sessions_is_refused_as_another_sessions(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "agents.jsonl"
    url = provider.openai_base_url + "/chat/completions"
    with llmcassette.use_cassette(path, **OPTIONS):
        asyncio.run(aiohttp_fan_out(url, NAMES, sessions=True))
    replay = llmcassette.use_cassette(path, record_mode="none", allow_unused=True, **OPTIONS)
    with pytest.raises(llmcassette.CassetteMismatch) as caught, replay:
        asyncio.run(aiohttp_fan_out(url, NAMES[:1], sessions=False))
    assert caught.value.reason == "other_session"
    assert "llmcassette.sessions 'critic', 'editor', and this one outside any" in str(caught.value)


def test_aiohttp_identical_requests_together_outside_sessions_warn(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = provider.openai_base_url + "/chat/completions"
    with warnings.catch_warnings(record=True) as caught, answering_slowly(provider):
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "agents.jsonl", **OPTIONS):
            asyncio.run(aiohttp_fan_out(url, NAMES, sessions=False))
    [message] = identical_request_warnings(caught)
    assert message.startswith("POST /v1/chat/completions (prompt 'Review the draft. Run ")
    assert "outside any session" in message


def test_aiohttp_identical_requests_one_after_the_other_do_not_warn(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = provider.openai_base_url + "/chat/completions"

    async def one_after_the_other() -> None:
        async with aiohttp.ClientSession() as http:
            for _ in NAMES:
                await aiohttp_agent(http, url)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "agents.jsonl", **OPTIONS):
            asyncio.run(one_after_the_other())
    assert identical_request_warnings(caught) == []


# --- requests, in threads --------------------------------------------------------------------


def requests_agent(url: str, start: threading.Barrier | None) -> str:
    if start is not None:
        start.wait()  # while recording: every agent sends at once
    with requests.Session() as http:
        return answer_of(http.post(url, json=question(), headers=AUTH, timeout=10).json())


def requests_fan_out(
    url: str, names: list[str], *, sessions: bool, together: bool = False
) -> dict[str, str]:
    start = threading.Barrier(len(names)) if together else None
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = {}
        for index, name in enumerate(names):
            agent: Callable[..., str] = requests_agent
            if not sessions:
                futures[name] = pool.submit(requests_agent, url, start)
            elif index % 2:  # both ways the docs give: a decorated function ...
                agent = llmcassette.session(name)(requests_agent)
                futures[name] = pool.submit(agent, url, start)
            else:  # ... or a copy of the context taken inside the session, one per call
                with llmcassette.session(name):
                    context = contextvars.copy_context()
                futures[name] = pool.submit(context.run, agent, url, start)
        return {name: future.result() for name, future in futures.items()}


def test_requests_threads_in_sessions_replay_their_own_answers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "agents.jsonl"
    url = provider.openai_base_url + "/chat/completions"
    with answering_slowly(provider), llmcassette.use_cassette(path, **OPTIONS):
        recorded = requests_fan_out(url, NAMES, sessions=True, together=True)
    assert len(set(recorded.values())) == len(NAMES)
    assert set(sessions_on_request_lines(path)) == set(NAMES)
    sent = len(provider.requests)
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        assert requests_fan_out(url, NAMES[::-1], sessions=True) == recorded
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        # One after the other, in the reverse order: arrival order is the wrong one.
        replayed = {
            name: requests_fan_out(url, [name], sessions=True)[name] for name in NAMES[::-1]
        }
    assert replayed == recorded
    assert len(provider.requests) == sent


def test_requests_outside_the_recorded_sessions_is_refused_as_another_sessions(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "agents.jsonl"
    url = provider.openai_base_url + "/chat/completions"
    with llmcassette.use_cassette(path, **OPTIONS):
        requests_fan_out(url, NAMES, sessions=True)
    replay = llmcassette.use_cassette(path, record_mode="none", allow_unused=True, **OPTIONS)
    with pytest.raises(llmcassette.CassetteMismatch) as caught, replay:
        requests_agent(url, None)  # this thread: outside any session
    assert caught.value.reason == "other_session"
    assert "llmcassette.sessions 'critic', 'editor', and this one outside any" in str(caught.value)


def test_requests_threads_sending_identical_requests_together_outside_sessions_warn(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = provider.openai_base_url + "/chat/completions"
    with warnings.catch_warnings(record=True) as caught, answering_slowly(provider):
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "agents.jsonl", **OPTIONS):
            requests_fan_out(url, NAMES, sessions=False, together=True)
    [message] = identical_request_warnings(caught)
    assert message.startswith("POST /v1/chat/completions (prompt 'Review the draft. Run ")
    assert "outside any session" in message


def test_requests_threads_in_sessions_do_not_warn(tmp_path: Path, provider: LocalProvider) -> None:
    url = provider.openai_base_url + "/chat/completions"
    with warnings.catch_warnings(record=True) as caught, answering_slowly(provider):
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "agents.jsonl", **OPTIONS):
            requests_fan_out(url, NAMES, sessions=True, together=True)
    assert identical_request_warnings(caught) == []


# --- the other clients on vcrpy's VCRConnection: urllib3, and http.client itself ------------


def with_urllib3(url: str) -> str:
    body = json.dumps(question()).encode()
    headers = {**AUTH, "content-type": "application/json"}
    with urllib3.PoolManager() as pool:
        response = pool.request("POST", url, body=body, headers=headers)
        return answer_of(json.loads(response.data))  # vcrpy 8's replayed response has no .json()


def with_urllib_request(url: str) -> str:
    body = json.dumps(question()).encode()
    headers = {**AUTH, "content-type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=10) as got:
        return answer_of(json.load(got))


@pytest.mark.parametrize("send", [with_urllib3, with_urllib_request])
def test_other_vcrpy_connection_clients_replay_by_session(
    tmp_path: Path, provider: LocalProvider, send: Callable[[str], str]
) -> None:
    path = tmp_path / "agents.jsonl"
    url = provider.openai_base_url + "/chat/completions"
    recorded = {}
    with llmcassette.use_cassette(path, **OPTIONS):
        for name in NAMES:
            with llmcassette.session(name):
                recorded[name] = send(url)
    assert sessions_on_request_lines(path) == NAMES
    replayed = {}
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        for name in NAMES[::-1]:
            with llmcassette.session(name):
                replayed[name] = send(url)
    assert replayed == recorded
