"""Streams pass through while recording, keep their timing, and replay event by event."""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest

import llmcassette
from _replay_clock import ReplayClock
from llmcassette.testing import LocalProvider

LIBRARIES = {"httpx": httpx, "httpx2": httpx2}
CHAT = {
    "model": "gpt-4o-mini",
    "stream": True,
    "messages": [{"role": "user", "content": "count slowly"}],
}
AUTH = {"authorization": "Bearer sk-test"}


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def stream_events(path: Path) -> list[dict[str, Any]]:
    return [line for line in lines_of(path) if line.get("type") == "event"]


def end_line(path: Path) -> dict[str, Any]:
    return [line for line in lines_of(path) if line.get("type") == "end"][-1]


def timed_chunks(library: Any, url: str) -> list[tuple[float, bytes]]:
    started = time.monotonic()
    with (
        library.Client() as client,
        client.stream("POST", f"{url}/v1/chat/completions", json=CHAT, headers=AUTH) as response,
    ):
        return [(time.monotonic() - started, chunk) for chunk in response.iter_raw()]


@pytest.mark.parametrize("name", LIBRARIES)
def test_recording_passes_each_event_through_as_it_arrives(
    tmp_path: Path, provider: LocalProvider, name: str
) -> None:
    provider.behaviour.events = 20
    provider.behaviour.event_delay = 0.05
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        chunks = timed_chunks(LIBRARIES[name], provider.url)
    first, last = chunks[0][0], chunks[-1][0]
    # vcrpy's own stubs deliver everything at the end (first == last); here the stream
    # is about a second long and the first event arrives at its start.
    assert last - first > 0.5
    assert len(chunks) >= 10  # a busy machine may read two events in one go

    times = [event["t"] for event in stream_events(tmp_path / "c.jsonl")]
    assert times == sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(times[1:-2])]
    assert statistics.median(gaps) >= 0.03, gaps  # the provider's 50 ms, as recorded


@pytest.mark.parametrize("name", LIBRARIES)
def test_replay_yields_one_chunk_per_event(
    tmp_path: Path, provider: LocalProvider, name: str
) -> None:
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        live = timed_chunks(LIBRARIES[name], provider.url)
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replayed = timed_chunks(LIBRARIES[name], provider.url)
    assert [chunk for _, chunk in replayed] == [chunk for _, chunk in live]
    assert len(replayed) == len(stream_events(tmp_path / "c.jsonl"))


def _without_headers(response: dict[str, Any]) -> dict[str, Any]:
    return {**response, "headers": {}}


def test_a_stream_stays_a_stream_when_a_hook_drops_the_response_headers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Every OpenInference conftest drops all response headers in before_record_response:
    # the content-type is gone, the events are still stored one by one with their times.
    hook = {"before_record_response": _without_headers}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once", **hook):
        live = timed_chunks(httpx2, provider.url)
    provider.stop()
    response = next(
        line for line in lines_of(tmp_path / "c.jsonl") if line.get("type") == "response"
    )
    assert (response["headers"], response["body"]) == ({}, {"stream": "sse"})
    recorded = stream_events(tmp_path / "c.jsonl")
    assert len(recorded) > 2
    assert all("t" in event for event in recorded)
    assert end_line(tmp_path / "c.jsonl")["events"] == len(recorded)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", **hook):
        replayed = timed_chunks(httpx2, provider.url)
    assert [chunk for _, chunk in replayed] == [chunk for _, chunk in live]
    assert len(replayed) == len(recorded)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_replay_waits_as_recorded_only_when_paced(
    tmp_path: Path, provider: LocalProvider, replay_clock: ReplayClock, is_async: bool
) -> None:
    provider.behaviour.events = 10
    provider.behaviour.event_delay = 0.05
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        timed_chunks(httpx2, provider.url)
    provider.stop()
    recorded = [event["t"] for event in stream_events(tmp_path / "c.jsonl")]

    url, sent = f"{provider.url}/v1/chat/completions", 0.0

    def read() -> list[float]:
        with (
            httpx2.Client() as client,
            client.stream("POST", url, json=CHAT, headers=AUTH) as response,
        ):
            return [replay_clock.now() - sent for _ in response.iter_raw()]

    async def read_async() -> list[float]:
        async with (
            httpx2.AsyncClient() as client,
            client.stream("POST", url, json=CHAT, headers=AUTH) as response,
        ):
            return [replay_clock.now() - sent async for _ in response.aiter_raw()]

    def arrivals(**pace: Any) -> list[float]:
        """When each chunk arrived, in seconds on the replay's clock from the request."""
        nonlocal sent
        replay_clock.waits.clear()
        sent = replay_clock.now()
        with llmcassette.use_cassette(tmp_path / "c", record_mode="none", **pace):
            return asyncio.run(read_async()) if is_async else read()

    assert recorded[-1] >= 10 * 0.05
    assert arrivals(pace="recorded") == pytest.approx(recorded)
    assert arrivals(pace=0.5) == pytest.approx([t / 2 for t in recorded])
    assert arrivals() == [0.0] * len(recorded)
    assert replay_clock.waits == []


def test_a_paced_replay_takes_at_least_the_recorded_time(
    tmp_path: Path, provider: LocalProvider
) -> None:
    provider.behaviour.events = 3
    provider.behaviour.event_delay = 0.05
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        timed_chunks(httpx2, provider.url)
    provider.stop()
    recorded = [event["t"] for event in stream_events(tmp_path / "c.jsonl")]
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", pace="recorded"):
        paced = [t for t, _ in timed_chunks(httpx2, provider.url)]
    # A lower bound only: a busy machine makes a replay late, never early.
    assert all(p >= r for p, r in zip(paced, recorded, strict=True))


def test_pace_is_validated() -> None:
    with pytest.raises(ValueError, match="pace must be"):
        llmcassette.use_cassette("x", pace="fast")


@pytest.mark.parametrize("name", LIBRARIES)
def test_a_stream_the_provider_cuts_is_recorded_as_cut_and_breaks_again_on_replay(
    tmp_path: Path, provider: LocalProvider, name: str
) -> None:
    library = LIBRARIES[name]
    provider.behaviour.cut_after = 3

    def read() -> tuple[list[bytes], type[BaseException] | None]:
        received: list[bytes] = []
        try:
            with (
                library.Client() as client,
                client.stream(
                    "POST", f"{provider.url}/v1/chat/completions", json=CHAT, headers=AUTH
                ) as response,
            ):
                received.extend(response.iter_raw())
        except library.TransportError as error:
            return received, type(error)
        return received, None

    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="once"),
        pytest.warns(llmcassette.IncompleteStreamWarning, match="broke mid-stream"),
    ):
        live, live_error = read()
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replayed, replay_error = read()  # marked as cut when recorded: no second warning

    assert live_error is not None
    assert replay_error is live_error
    assert b"".join(replayed) == b"".join(live)
    assert len(stream_events(tmp_path / "c.jsonl")) == 3
    end = end_line(tmp_path / "c.jsonl")
    assert end["cut_short"] is True
    assert end["error"] == live_error.__name__
    assert "broke mid-stream" in end["incomplete"]


def read_up_to(library: Any, url: str, limit: int | None) -> list[bytes]:
    """The chunks of a streamed chat, the caller stopping after ``limit`` (None: all)."""
    received: list[bytes] = []
    with (
        library.Client() as client,
        client.stream("POST", f"{url}/v1/chat/completions", json=CHAT, headers=AUTH) as response,
    ):
        for chunk in response.iter_raw():
            received.append(chunk)
            if len(received) == limit:
                break
    return received


@pytest.mark.parametrize("name", LIBRARIES)
def test_an_endless_stream_the_caller_stops_is_recorded_up_to_where_it_stopped(
    tmp_path: Path, provider: LocalProvider, name: str
) -> None:
    library = LIBRARIES[name]
    provider.behaviour.endless = True
    provider.behaviour.event_delay = 0.01
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        live = read_up_to(library, provider.url, 5)
    provider.stop()
    end = end_line(tmp_path / "c.jsonl")
    assert end["cut_short"] is True
    assert "error" not in end
    assert len(stream_events(tmp_path / "c.jsonl")) == 5
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        assert read_up_to(library, provider.url, 5) == live


def test_reading_past_where_the_recording_stopped_is_not_a_whole_answer(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Recorded, the code stopped after five events of an endless stream (a watchdog, a
    # cancelled task); replayed faster, it reads on. Ending there would pass five events
    # off as the whole answer.
    provider.behaviour.endless = True
    provider.behaviour.event_delay = 0.01

    def read(limit: int | None) -> list[bytes]:
        return read_up_to(httpx2, provider.url, limit)

    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        live = read(5)
    provider.stop()
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
        pytest.warns(llmcassette.IncompleteStreamWarning, match="stopped reading this response"),
    ):
        assert read(None) == live
    replay = llmcassette.use_cassette(
        tmp_path / "c", record_mode="none", incomplete_streams="error"
    )
    with pytest.raises(llmcassette.IncompleteStreamError, match="after 5 pieces"), replay:
        read(None)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", incomplete_streams="ignore"):
        assert read(None) == live  # kept on purpose: no word


@pytest.mark.parametrize("name", LIBRARIES)
async def test_async_cancel_during_an_endless_stream(
    tmp_path: Path, provider: LocalProvider, name: str
) -> None:
    library = LIBRARIES[name]
    provider.behaviour.endless = True
    provider.behaviour.event_delay = 0.01
    received: list[bytes] = []
    five = asyncio.Event()

    async def read_forever() -> None:
        async with (
            library.AsyncClient() as client,
            client.stream(
                "POST", f"{provider.url}/v1/chat/completions", json=CHAT, headers=AUTH
            ) as response,
        ):
            async for chunk in response.aiter_raw():
                received.append(chunk)
                if len(received) == 5:
                    five.set()

    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        task = asyncio.create_task(read_forever())
        await asyncio.wait_for(five.wait(), timeout=5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    end = end_line(tmp_path / "c.jsonl")
    assert end["cut_short"] is True
    assert "error" not in end
    assert len(stream_events(tmp_path / "c.jsonl")) >= 5


async def test_cancelling_a_paced_replay_is_prompt(tmp_path: Path, provider: LocalProvider) -> None:
    provider.behaviour.events = 1
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        timed_chunks(httpx2, provider.url)
    provider.stop()
    first_chunk = asyncio.Event()

    async def replay() -> None:
        async with (
            httpx2.AsyncClient() as client,
            client.stream(
                "POST", f"{provider.url}/v1/chat/completions", json=CHAT, headers=AUTH
            ) as response,
        ):
            async for _ in response.aiter_raw():
                first_chunk.set()

    # The events after the first recorded an hour later: the replay waits for the second,
    # and the task ends within the test only if the cancel cuts that wait short.
    path = tmp_path / "c.jsonl"
    lines = lines_of(path)
    events = [i for i, line in enumerate(lines) if line.get("type") == "event"]
    for i in events[1:]:
        lines[i]["t"] = 3600.0
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", pace="recorded"):
        task = asyncio.create_task(replay())
        await asyncio.wait_for(first_chunk.wait(), timeout=60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=60)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_openai_stream_objects_get_one_event_per_chunk(
    tmp_path: Path, provider: LocalProvider, is_async: bool
) -> None:
    async def chunk_count() -> int:
        messages: Any = [{"role": "user", "content": "count"}]
        if is_async:
            async with openai.AsyncOpenAI(
                base_url=provider.openai_base_url, api_key="sk-test", max_retries=0
            ) as client:
                stream = await client.chat.completions.create(
                    model="gpt-4o-mini", messages=messages, stream=True
                )
                return len([chunk async for chunk in stream])
        with openai.OpenAI(
            base_url=provider.openai_base_url, api_key="sk-test", max_retries=0
        ) as client:
            stream = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, stream=True
            )
            return len(list(stream))

    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        live = await chunk_count()
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replayed = await chunk_count()
    # The SDK yields one chunk per event except the [DONE] terminator.
    assert replayed == live == len(stream_events(tmp_path / "c.jsonl")) - 1
    # The sync SDK closes the response at [DONE], before the chunked body's last empty
    # chunk: that is a complete stream, not one cut short.
    assert "cut_short" not in end_line(tmp_path / "c.jsonl")
