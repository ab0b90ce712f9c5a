"""The bar of issue 21: concurrent agents whose first requests are identical replay their own
conversations, whatever the scheduling, when each runs in its own ``llmcassette.session``.

Each agent asks the same first question of one shared openai client; its identity enters
only in the later turns. A real model answers identical requests differently (it samples);
the local provider is deterministic, so each agent's first prompt carries a run id (a UUID,
which matching treats as volatile): the requests have the same request key, the answers
differ. Recorded once, each cassette is replayed ``REPLAYS`` times with a random short sleep
before every call.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

import llmcassette
from llmcassette.testing import LocalProvider, StreamBehaviour

REPLAYS = 100
TURNS = 3
MATCH: Any = {"volatile": ["uuid"]}
# Nothing here is secret; without the redaction rules a replay costs a third less.
OPTIONS: Any = {"match": MATCH, "redaction": False}
SYSTEM = "You are a research agent. Answer in one line."
QUESTION = "Summarise the quarterly report."

Answers = dict[str, list[str]]


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def first_messages() -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{QUESTION} (run {uuid.uuid4()})"},
    ]


def follow_up(name: str, turn: int) -> dict[str, str]:
    return {"role": "user", "content": f"Agent {name}: follow-up {turn}"}


def text_of(answer: Any) -> str:
    if isinstance(answer, openai.Stream):
        return "".join(chunk.choices[0].delta.content or "" for chunk in answer if chunk.choices)
    return str(answer.choices[0].message.content)


async def async_text_of(answer: Any) -> str:
    if isinstance(answer, openai.AsyncStream):
        return "".join([c.choices[0].delta.content or "" async for c in answer if c.choices])
    return str(answer.choices[0].message.content)


async def async_agent(
    client: openai.AsyncOpenAI, name: str, rng: random.Random | None, stream: bool
) -> list[str]:
    messages = first_messages()
    answers = []
    for turn in range(TURNS):
        if turn:
            messages.append(follow_up(name, turn))
        if rng is not None:
            await asyncio.sleep(rng.uniform(0, 0.002))
        answer = await client.chat.completions.create(
            model="local-model",
            messages=messages,  # type: ignore[arg-type]
            stream=stream,
        )
        answers.append(await async_text_of(answer))
        messages.append({"role": "assistant", "content": answers[-1]})
    return answers


def thread_agent(
    client: openai.OpenAI, name: str, rng: random.Random | None, start: threading.Barrier | None
) -> list[str]:
    if start is not None:
        start.wait()
    messages = first_messages()
    answers = []
    for turn in range(TURNS):
        if turn:
            messages.append(follow_up(name, turn))
        if rng is not None:
            time.sleep(rng.uniform(0, 0.002))
        answer = client.chat.completions.create(
            model="local-model",
            messages=messages,  # type: ignore[arg-type]
            stream=True,  # threads: streamed slowly while recording, so that they overlap
        )
        answers.append(text_of(answer))
        messages.append({"role": "assistant", "content": answers[-1]})
    return answers


def names(count: int) -> list[str]:
    return [f"agent-{index}" for index in range(count)]


async def run_async_agents(
    client: openai.AsyncOpenAI,
    count: int,
    sessions: bool,
    rng: random.Random | None,
    stream: bool = False,
) -> Answers:
    tasks = {}
    for name in names(count):
        if sessions:
            with llmcassette.session(name):  # the task copies the context as it is created
                tasks[name] = asyncio.create_task(async_agent(client, name, rng, stream))
        else:
            tasks[name] = asyncio.create_task(async_agent(client, name, rng, stream))
    await asyncio.gather(*tasks.values())
    return {name: task.result() for name, task in tasks.items()}


def run_thread_agents(
    client: openai.OpenAI,
    pool: ThreadPoolExecutor,
    count: int,
    sessions: bool,
    rng: random.Random | None,
) -> Answers:
    start = threading.Barrier(count) if rng is None else None  # recording: all at once
    futures = {}
    for name in names(count):
        if sessions:
            with llmcassette.session(name):  # each call runs in its own copy of this context
                context = contextvars.copy_context()
        else:
            context = contextvars.copy_context()
        futures[name] = pool.submit(context.run, thread_agent, client, name, rng, start)
    return {name: future.result() for name, future in futures.items()}


@pytest.fixture
def slow_first_event(provider: LocalProvider) -> Iterator[None]:
    """While recording, every answer takes a while: identical requests overlap in time.
    One content event each keeps the replays cheap."""
    provider.behaviour = StreamBehaviour(first_event_delay=0.05, events=1)
    yield
    provider.behaviour = StreamBehaviour()


def check_recording(answers: Answers, caught: list[warnings.WarningMessage]) -> None:
    firsts = [conversation[0] for conversation in answers.values()]
    assert len(set(firsts)) == len(firsts)  # identical requests, different answers
    assert all(len(conversation) == TURNS for conversation in answers.values())
    assert not [w for w in caught if issubclass(w.category, llmcassette.LlmCassetteWarning)]


def replay_figures(label: str, successes: int) -> None:
    print(f"{label}: {successes}/{REPLAYS} replays gave every agent exactly its answers")
    assert successes == REPLAYS


@pytest.mark.parametrize("count", [2, 8])
def test_asyncio_agents_replay_their_own_answers_in_sessions(
    tmp_path: Path, provider: LocalProvider, count: int
) -> None:
    path = tmp_path / "agents.jsonl"

    async def record_and_replay() -> int:
        client = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with llmcassette.use_cassette(path, **OPTIONS):
                recorded = await run_async_agents(client, count, True, None)
        check_recording(recorded, caught)
        sent = len(provider.requests)
        rng = random.Random(count)
        successes = 0
        for _ in range(REPLAYS):
            with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
                successes += await run_async_agents(client, count, True, rng) == recorded
        assert len(provider.requests) == sent
        return successes

    replay_figures(f"asyncio, {count} agents", asyncio.run(record_and_replay()))


@pytest.mark.parametrize("count", [2, 8])
def test_thread_agents_replay_their_own_answers_in_sessions(
    tmp_path: Path, provider: LocalProvider, slow_first_event: None, count: int
) -> None:
    path = tmp_path / "agents.jsonl"
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
    with ThreadPoolExecutor(max_workers=count) as pool:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with llmcassette.use_cassette(path, **OPTIONS):
                recorded = run_thread_agents(client, pool, count, True, None)
        check_recording(recorded, caught)
        sent = len(provider.requests)
        rng = random.Random(count)
        successes = 0
        for _ in range(REPLAYS):
            with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
                successes += run_thread_agents(client, pool, count, True, rng) == recorded
    replay_figures(f"threads, {count} agents", successes)
    assert len(provider.requests) == sent


def identical_request_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, llmcassette.ConcurrentIdenticalRequestsWarning)
    ]


@pytest.fixture
def slower_first_event(provider: LocalProvider) -> Iterator[None]:
    """Every answer takes long enough that identical requests overlap even on a loaded
    machine: the openai client's first call in each task waits on a worker thread (it reads
    the platform once), and a late thread once let one task's whole request end before
    another's was sent."""
    provider.behaviour = StreamBehaviour(first_event_delay=0.3, events=1)
    yield
    provider.behaviour = StreamBehaviour()


@pytest.mark.parametrize("count", [2, 8])
def test_asyncio_agents_without_sessions_warn_while_recording(
    tmp_path: Path, provider: LocalProvider, slower_first_event: None, count: int
) -> None:
    client = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "agents.jsonl", **OPTIONS):
            asyncio.run(run_async_agents(client, count, False, None, stream=True))
    [message] = identical_request_warnings(caught)  # once per request, not once per agent
    assert message.startswith("POST /v1/chat/completions (prompt 'Summarise the quarterly")
    assert "outside any session" in message
    assert "how to fix: run each caller in its own llmcassette.session(name)" in message


@pytest.mark.parametrize("count", [2, 8])
def test_thread_agents_without_sessions_warn_while_recording(
    tmp_path: Path, provider: LocalProvider, slow_first_event: None, count: int
) -> None:
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
    with (
        ThreadPoolExecutor(max_workers=count) as pool,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "agents.jsonl", **OPTIONS):
            run_thread_agents(client, pool, count, False, None)
    [message] = identical_request_warnings(caught)
    assert "POST /v1/chat/completions" in message
    assert "llmcassette.session" in message


def test_a_parent_with_two_sub_agents_replays_without_labels(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """Each sub-agent has its own client, the parent starts them one after another: the
    identical first requests replay in recorded order, with no session anywhere."""
    path = tmp_path / "parent.jsonl"

    def parent(rng: random.Random | None) -> Answers:
        answers = {}
        for name in ("researcher", "writer"):
            with openai.OpenAI(
                base_url=provider.openai_base_url, api_key="sk", max_retries=0
            ) as client:
                answers[name] = thread_agent(client, name, rng, None)
        return answers

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(path, **OPTIONS):
            recorded = parent(None)
    check_recording(recorded, caught)
    sent = len(provider.requests)
    rng = random.Random(2)
    successes = 0
    for _ in range(REPLAYS):
        with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
            successes += parent(rng) == recorded
    assert len(provider.requests) == sent  # every replay came from the cassette
    replay_figures("parent with two sub-agents, no labels", successes)


async def async_sub_agent(client: openai.AsyncOpenAI, rng: random.Random | None) -> list[str]:
    """A sub-agent whose later turns depend only on the answers it got: the same words for
    every sub-agent ("Go on.", with a run id) after its own history."""
    messages = first_messages()
    answers = []
    for turn in range(TURNS):
        if turn:
            # A run id in every turn: each recorded answer differs (the provider echoes it).
            note = f"Go on (step {turn}, run {uuid.uuid4()})."
            messages.append({"role": "user", "content": note})
        if rng is not None:
            await asyncio.sleep(rng.uniform(0, 0.005))
        answer = await client.chat.completions.create(
            model="local-model",
            messages=messages,  # type: ignore[arg-type]
        )
        answers.append(await async_text_of(answer))
        messages.append({"role": "assistant", "content": answers[-1]})
    return answers


def test_concurrent_sub_agents_each_replay_one_recorded_conversation_whole(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """No labels, each sub-agent with a client of its own, all at the same time with random
    sleeps before every call. Which sub-agent gets which first answer follows arrival order;
    each follow-up carries the answer it got, and the recorded request carrying the same text
    is preferred, so every sub-agent gets one recorded conversation whole, never the turns of
    two (their follow-ups have one request key: the run ids are volatile)."""
    path = tmp_path / "fan-out.jsonl"
    count = 3

    async def parent(rng: random.Random | None) -> list[list[str]]:
        clients = [
            openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
            for _ in range(count)
        ]
        try:
            return list(await asyncio.gather(*(async_sub_agent(c, rng) for c in clients)))
        finally:
            for client in clients:
                await client.close()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", llmcassette.ConcurrentIdenticalRequestsWarning)
        with llmcassette.use_cassette(path, **OPTIONS):
            recorded = asyncio.run(parent(None))
    assert len({conversation[0] for conversation in recorded}) == count
    sent = len(provider.requests)
    rng = random.Random(3)
    whole = 0
    orders: set[tuple[int, ...]] = set()
    for _ in range(REPLAYS):
        with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
            replayed = asyncio.run(parent(rng))
        if sorted(replayed) == sorted(recorded):
            whole += 1
            orders.add(tuple(recorded.index(conversation) for conversation in replayed))
    assert len(provider.requests) == sent
    print(f"concurrent sub-agents, no labels: {whole}/{REPLAYS} whole, {len(orders)} orders")
    assert whole == REPLAYS
    assert len(orders) > 1  # the scheduling did change which sub-agent got which conversation
