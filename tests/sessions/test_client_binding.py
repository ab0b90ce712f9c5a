"""Binding without labels (issue 21 item 2): each live client object replays the recorded
client of the same first-call order, and a request whose content picks another recorded
client's conversation moves the binding there (docs/concurrency.md, "Separate clients").

The local provider is deterministic, so every prompt carries a run id (a UUID, which
matching treats as volatile): identical requests, different recorded answers. The later
requests here carry no history, so their content cannot tell the clients apart: only the
binding can. Each recording is replayed ``REPLAYS`` times with a random short sleep before
every call.
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
import time
import uuid
import warnings
import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

import llmcassette
from llmcassette import CassetteFormatError
from llmcassette.testing import LocalProvider

REPLAYS = 100
OPTIONS: Any = {"match": {"volatile": ["uuid"]}, "redaction": False}
LATER = 2  # identical requests each client makes after its first


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def prompt(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{text} (run {uuid.uuid4()})"}]


async def ask(client: openai.AsyncOpenAI, messages: list[dict[str, str]]) -> str:
    answer = await client.chat.completions.create(
        model="local-model",
        messages=messages,  # type: ignore[arg-type]
    )
    return str(answer.choices[0].message.content)


async def later(client: openai.AsyncOpenAI, rng: random.Random | None) -> list[str]:
    """The same request, without history, ``LATER`` times: only the binding tells whose."""
    answers = []
    for _ in range(LATER):
        if rng is not None:
            await asyncio.sleep(rng.uniform(0, 0.002))
        answers.append(await ask(client, prompt("Next step.")))
    return answers


def async_clients(provider: LocalProvider, count: int) -> list[openai.AsyncOpenAI]:
    return [
        openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
        for _ in range(count)
    ]


Agents = dict[str, openai.AsyncOpenAI]


@pytest.fixture
def agents(provider: LocalProvider) -> Iterator[Agents]:
    """The clients of agents a and b for replays (made once: an SDK client takes 50 ms to
    build; the cassette numbers clients anew each time it is used)."""
    a, b = async_clients(provider, 2)
    yield {"a": a, "b": b}
    asyncio.run(close(a, b))


async def close(*clients: openai.AsyncOpenAI) -> None:
    for client in clients:
        await client.close()


async def two_agents(
    clients: Agents, rng: random.Random | None, first: str = "ab", rest: str = "gather"
) -> dict[str, list[str]]:
    """Agents a and b make identical first requests one after the other (in the order
    ``first`` names them, or at once: ``"together"``), then their later requests:
    interleaved at random (``rest="gather"``), or all of one agent's before the other's
    (``"ab"`` or ``"ba"``).
    """
    answers: dict[str, list[str]] = {}
    if first == "together":  # the first calls race, after a random sleep each

        async def first_call(name: str) -> None:
            if rng is not None:
                await asyncio.sleep(rng.uniform(0, 0.002))
            answers[name] = [await ask(clients[name], prompt("Read the brief."))]

        await asyncio.gather(first_call("a"), first_call("b"))
    else:
        for name in first:
            answers[name] = [await ask(clients[name], prompt("Read the brief."))]
    if rest == "gather":
        order = ["a", "b"] if rng is None or rng.random() < 0.5 else ["b", "a"]
        results = await asyncio.gather(*(later(clients[name], rng) for name in order))
        for name, result in zip(order, results, strict=True):
            answers[name] += result
    else:
        for name in rest:
            answers[name] += await later(clients[name], rng)
    return answers


def request_lines(path: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [record for record in records if record.get("type") == "request"]


def record_two_agents(path: Path, provider: LocalProvider) -> dict[str, list[str]]:
    """Record a and b (with clients of their own, closed in the event loop that used them)."""

    async def run() -> dict[str, list[str]]:
        a, b = async_clients(provider, 2)
        try:
            return await two_agents({"a": a, "b": b}, None, rest="ab")
        finally:
            await close(a, b)

    with llmcassette.use_cassette(path, **OPTIONS):
        recorded = asyncio.run(run())
    firsts = [answers[0] for answers in recorded.values()]
    assert len(set(firsts)) == 2  # identical requests, different answers
    return recorded


def replay(path: Path, coroutine: Any) -> Any:
    with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
        return asyncio.run(coroutine)


def test_the_request_line_numbers_the_clients_in_first_call_order(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "agents.jsonl"
    record_two_agents(path, provider)
    # a's first call, b's first call, then a's later requests and b's
    assert [line["client"] for line in request_lines(path)] == [1, 2, 1, 1, 2, 2]


def test_separate_clients_keep_their_own_answers_whatever_the_interleaving(
    tmp_path: Path, provider: LocalProvider, agents: Agents
) -> None:
    """Promise (a): first calls in the recorded order, later identical requests in any."""
    path = tmp_path / "agents.jsonl"
    recorded = record_two_agents(path, provider)
    sent = len(provider.requests)
    rng = random.Random(21)
    successes = sum(replay(path, two_agents(agents, rng)) == recorded for _ in range(REPLAYS))
    print(f"two clients, later requests interleaved: {successes}/{REPLAYS} replays exact")
    assert successes == REPLAYS
    assert len(provider.requests) == sent  # all of it from the cassette


def test_separate_clients_in_threads_keep_their_own_answers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """Promise (a) with sync clients, their later requests sent from two threads at once."""
    path = tmp_path / "threads.jsonl"

    def ask_sync(client: openai.OpenAI, text: str) -> str:
        answer = client.chat.completions.create(
            model="local-model",
            messages=prompt(text),  # type: ignore[arg-type]
        )
        return str(answer.choices[0].message.content)

    def later_sync(client: openai.OpenAI, rng: random.Random | None) -> list[str]:
        answers = []
        for _ in range(LATER):
            if rng is not None:
                time.sleep(rng.uniform(0, 0.002))
            answers.append(ask_sync(client, "Next step."))
        return answers

    clients = {
        name: openai.OpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
        for name in "ab"
    }

    def run(pool: ThreadPoolExecutor, rng: random.Random | None) -> dict[str, list[str]]:
        answers = {name: [ask_sync(client, "Read the brief.")] for name, client in clients.items()}
        if rng is None:  # recording: one after the other
            for name, client in clients.items():
                answers[name] += later_sync(client, None)
        else:
            futures = {name: pool.submit(later_sync, c, rng) for name, c in clients.items()}
            for name, future in futures.items():
                answers[name] += future.result()
        return answers

    with ThreadPoolExecutor(max_workers=2) as pool:
        with llmcassette.use_cassette(path, **OPTIONS):
            recorded = run(pool, None)
        rng = random.Random(7)
        successes = 0
        for _ in range(REPLAYS):
            with llmcassette.use_cassette(path, record_mode="none", **OPTIONS):
                successes += run(pool, rng) == recorded
    for client in clients.values():
        client.close()
    print(f"two sync clients in threads: {successes}/{REPLAYS} replays exact")
    assert successes == REPLAYS


def test_a_cassette_without_client_numbers_replays_in_recorded_order(
    tmp_path: Path, provider: LocalProvider, agents: Agents
) -> None:
    """Promise (c): recorded before clients were numbered (the field taken out), identical
    requests get their answers in recorded order, as they did: b's later requests, sent
    first, get a's recorded answers. With the numbers, each gets its own."""
    path = tmp_path / "agents.jsonl"
    recorded = record_two_agents(path, provider)
    assert replay(path, two_agents(agents, None, rest="ba")) == recorded

    lines = path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    for record in records:
        record.pop("client", None)
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    swapped = replay(old, two_agents(agents, None, rest="ba"))
    assert swapped["a"][0] == recorded["a"][0]
    assert swapped["b"][0] == recorded["b"][0]
    assert swapped["b"][1:] == recorded["a"][1:]  # arrival order: b asked first
    assert swapped["a"][1:] == recorded["b"][1:]


def test_the_binding_follows_first_call_order_not_the_client(
    tmp_path: Path, provider: LocalProvider, agents: Agents
) -> None:
    """Promise (d): the client that calls first replays the first recorded client. When b
    makes its first call before a, b gets a's whole recorded conversation and a gets b's:
    deterministic for a given order, so first calls that race are up to the scheduler."""
    path = tmp_path / "agents.jsonl"
    recorded = record_two_agents(path, provider)
    swapped = replay(path, two_agents(agents, random.Random(3), first="ba"))
    assert swapped == {"a": recorded["b"], "b": recorded["a"]}


def test_first_calls_that_race_bind_by_the_scheduler(
    tmp_path: Path, provider: LocalProvider, agents: Agents
) -> None:
    """Promise (d), shown: when the first calls race, which agent replays which recorded
    client changes from run to run; each still gets one recorded client's answers whole."""
    path = tmp_path / "agents.jsonl"
    recorded = record_two_agents(path, provider)
    swapped = {"a": recorded["b"], "b": recorded["a"]}
    rng = random.Random(11)
    outcomes = [replay(path, two_agents(agents, rng, first="together")) for _ in range(40)]
    assert all(outcome in (recorded, swapped) for outcome in outcomes)
    assert recorded in outcomes
    assert swapped in outcomes


async def planner_and_workers(
    clients: list[openai.AsyncOpenAI], rng: random.Random | None, order: str
) -> dict[str, list[str]]:
    """A planner client asks for a plan twice (identical requests, different plans) and hands
    plan 1 to worker 1 and plan 2 to worker 2, each with a client of its own, started in
    ``order``; then both workers send identical status requests, without history."""
    planner, *workers = clients
    plans = [await ask(planner, prompt("Plan the work.")) for _ in workers]
    answers: dict[str, list[str]] = {}
    for index in map(int, order):
        work = [{"role": "user", "content": plans[index]}, {"role": "user", "content": "Do it."}]
        answers[str(index)] = [plans[index], await ask(workers[index], work)]
    results = await asyncio.gather(*(later(worker, rng) for worker in workers))
    for index, result in enumerate(results):
        answers[str(index)] += result
    return answers


def test_a_request_carrying_another_clients_answer_rebinds_its_client(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """Promise (b). Recorded: planner (client 1), worker 0 (client 2), worker 1 (client 3).
    Replayed with worker 1 started first, so it is live client 2, bound to worker 0's
    recording; its first request carries plan 1, which only worker 1's recorded request
    carries: that one is played, and worker 1 is bound to recorded client 3 from then on.
    Its later requests, identical to worker 0's, get worker 1's recorded answers."""
    path = tmp_path / "plan.jsonl"
    with warnings.catch_warnings():
        # The workers' status requests overlap while recording; the warning says replay
        # gives them by arrival order, which holds only without the clients' numbers.
        warnings.simplefilter("ignore", llmcassette.ConcurrentIdenticalRequestsWarning)

        async def record() -> dict[str, list[str]]:
            clients = async_clients(provider, 3)
            try:
                return await planner_and_workers(clients, None, "01")
            finally:
                await close(*clients)

        with llmcassette.use_cassette(path, **OPTIONS):
            recorded = asyncio.run(record())
    numbers = [line["client"] for line in request_lines(path)]
    assert numbers[:4] == [1, 1, 2, 3]  # the status requests after them overlap: any order
    assert sorted(numbers[4:]) == [2, 2, 3, 3]
    assert recorded["0"][2:] != recorded["1"][2:]
    rng = random.Random(5)
    clients = async_clients(provider, 3)
    successes = 0
    for _ in range(REPLAYS):
        successes += replay(path, planner_and_workers(clients, rng, "10")) == recorded
    asyncio.run(close(*clients))
    print(f"workers started in the other order, rebound by their plans: {successes}/{REPLAYS}")
    assert successes == REPLAYS


def test_a_cassette_of_one_client_has_no_client_numbers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """One client's number tells nothing apart: its lines stay as before numbers existed."""
    path = tmp_path / "one.jsonl"

    async def one_client() -> list[str]:
        [client] = async_clients(provider, 1)
        answers = [await ask(client, prompt("Read the brief.")), *await later(client, None)]
        await client.close()
        return answers

    with llmcassette.use_cassette(path, **OPTIONS):
        recorded = asyncio.run(one_client())
    lines = request_lines(path)
    assert len(lines) == 1 + LATER
    assert not [line for line in lines if "client" in line]
    assert replay(path, one_client()) == recorded


def test_a_dropped_client_is_not_kept_alive_by_the_cassette(
    tmp_path: Path, provider: LocalProvider
) -> None:
    with llmcassette.use_cassette(tmp_path / "dropped.jsonl", **OPTIONS):
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
        client.chat.completions.create(model="local-model", messages=prompt("Hello."))  # type: ignore[arg-type]
        transport = weakref.ref(client._client._transport)
        client.close()
        del client
        gc.collect()
        assert transport() is None


@pytest.mark.parametrize("value", ["0", "-1", '"2"', "1.0", "true"])
def test_a_client_number_that_is_not_a_whole_number_from_1_is_refused(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"format": "llmcassette", "format_version": 1}\n'
        f'{{"type": "request", "method": "GET", "uri": "http://llm.test/", "client": {value}}}\n'
        '{"type": "response", "status": 204}\n{"type": "end", "events": 0}\n',
        encoding="utf-8",
    )
    with (
        pytest.raises(CassetteFormatError) as raised,
        llmcassette.use_cassette(path, record_mode="none"),
    ):
        pass
    assert "request line: field 'client' must be a whole number from 1" in str(raised.value)


def test_allow_playback_repeats_plays_the_first_match_whatever_the_client(
    tmp_path: Path, provider: LocalProvider, agents: Agents
) -> None:
    """vcrpy's behaviour: with repeats allowed, every identical request gets the first one."""
    path = tmp_path / "agents.jsonl"
    recorded = record_two_agents(path, provider)
    with llmcassette.use_cassette(
        path, record_mode="none", allow_playback_repeats=True, allow_unused=True, **OPTIONS
    ):
        repeated = asyncio.run(two_agents(agents, None, rest="ab"))
    assert repeated["b"][0] == recorded["a"][0]
    assert repeated["b"][1:] == repeated["a"][1:] == [recorded["a"][1]] * LATER


def test_sdk_clients_sharing_one_http_client_are_one_client(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "shared.jsonl"

    async def run() -> None:
        async with httpx2.AsyncClient() as shared:
            clients = [
                openai.AsyncOpenAI(
                    base_url=provider.openai_base_url, api_key="sk", http_client=shared
                )
                for _ in range(2)
            ]
            for client in clients:
                await ask(client, prompt("Read the brief."))

    with llmcassette.use_cassette(path, **OPTIONS):
        asyncio.run(run())
    lines = request_lines(path)
    assert len(lines) == 2
    assert not [line for line in lines if "client" in line]  # one client: no numbers


def test_a_module_level_call_is_a_new_client_each_time(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "calls.jsonl"
    url = f"{provider.openai_base_url}/chat/completions"
    body = {"model": "local-model", "messages": [{"role": "user", "content": "Hello."}]}
    with llmcassette.use_cassette(path, **OPTIONS):
        for _ in range(2):
            httpx2.post(url, json=body, headers={"authorization": "Bearer sk"}).raise_for_status()
    assert [line["client"] for line in request_lines(path)] == [1, 2]
