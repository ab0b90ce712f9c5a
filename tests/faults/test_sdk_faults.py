"""Faults through the real SDKs and clients: retries, cut streams, hangs, transport failures.

Each test records a real call against the local provider first, then replays it with a
fault and checks what the client code sees, and that nothing reached the provider.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

import llmcassette
from _replay_clock import ReplayClock
from llmcassette import faults
from llmcassette.errors import OverridesError
from llmcassette.testing import LocalProvider, StreamBehaviour

MESSAGES = [{"role": "user", "content": "Tell me a story about retries"}]
AUTH = {"authorization": "Bearer sk-test"}


def openai_client(provider: LocalProvider, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", **options)


def anthropic_client(provider: LocalProvider, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=provider.anthropic_base_url, api_key="sk-ant-test", **options
    )


def openai_text(client: openai.OpenAI) -> str:
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def anthropic_text(client: anthropic.Anthropic) -> str:
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES) as s:
        return "".join(s.text_stream)


def write_sidecar(cassette: Path, entries: list[dict[str, Any]]) -> None:
    cassette.with_name(cassette.stem + ".overrides.json").write_text(
        json.dumps({"mode": "patch", "entries": entries})
    )


def attempts(cassette: Any) -> int:
    return int(cassette.__dict__.get("_llmcassette_calls", 0))


def record_through(sdk: str, provider: LocalProvider, path: Path) -> tuple[Any, Any, str]:
    """Record one streamed answer through ``sdk``: its client factory, its ask, the answer."""
    make, ask = (
        (openai_client, openai_text) if sdk == "openai" else (anthropic_client, anthropic_text)
    )
    with llmcassette.use_cassette(path):
        recorded = ask(make(provider))
    return make, ask, recorded


RETRY_THEN_RECORDED = [
    {"at": 0, "status": 429, "headers": {"retry-after": "0"}},
    {"at": 1, "recorded": 0},
]


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_sdk_retries_a_429_then_gets_the_recorded_answer(
    provider: LocalProvider, tmp_path: Path, sdk: str
) -> None:
    path = tmp_path / "retry.jsonl"
    make, ask, recorded = record_through(sdk, provider, path)
    write_sidecar(path, RETRY_THEN_RECORDED)
    seen = len(provider.requests)
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        replayed = ask(make(provider))  # the SDK's default retries (2) are on
    assert replayed == recorded != ""
    assert attempts(cassette) == 2  # the 429, then the retry
    assert len(provider.requests) == seen
    assert llmcassette.check_unused(cassette) is None


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_without_retries_the_sdk_raises_its_rate_limit_error(
    provider: LocalProvider, tmp_path: Path, sdk: str
) -> None:
    path = tmp_path / "retry.jsonl"
    make, ask, _ = record_through(sdk, provider, path)
    module: Any = openai if sdk == "openai" else anthropic
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.http_error(429, retry_after=0))
        with pytest.raises(module.RateLimitError) as raised:
            ask(make(provider, max_retries=0))
        assert raised.value.status_code == 429
        assert raised.value.response.headers["retry-after"] == "0"
        # the error body is shaped like the provider's, so the SDK parsed its type
        assert "rate_limit" in json.dumps(raised.value.body)
        assert ask(make(provider)) != ""  # the recorded answer is still there


def test_the_sidecar_is_read_as_the_cassette_opens_not_by_a_request(
    provider: LocalProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first request may run on an event loop, where a blocking call is an error to
    # some suites (pydantic-ai's BlockBuster); and a bad sidecar fails before the block,
    # with nothing left patched.
    path = tmp_path / "retry.jsonl"
    make, ask, recorded = record_through("openai", provider, path)
    write_sidecar(path, RETRY_THEN_RECORDED)
    client = make(provider)

    def blocking(*args: object, **kwargs: object) -> None:
        raise AssertionError("a blocking call inside the request")

    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        with monkeypatch.context() as patched:
            patched.setattr(os, "stat", blocking)
            assert ask(client) == recorded
        assert attempts(cassette) == 2  # the sidecar's 429, then the retry
    unpatched = httpx.HTTPTransport.handle_request
    write_sidecar(path, [{"at": 0, "status": "429"}])
    with (
        pytest.raises(OverridesError, match=r"entries\[0\]\.status"),
        llmcassette.use_cassette(path, record_mode="none"),
    ):
        pytest.fail("the block ran")
    assert httpx.HTTPTransport.handle_request is unpatched


def test_the_unused_append_is_reported_with_counts(provider: LocalProvider, tmp_path: Path) -> None:
    path = tmp_path / "retry.jsonl"
    with llmcassette.use_cassette(path):
        openai_text(openai_client(provider))
    write_sidecar(path, [{"at": 1, "recorded": 0}])
    with llmcassette.use_cassette(path, record_mode="none", allow_unused=True) as cassette:
        openai_text(openai_client(provider))
        faults.schedule(cassette, faults.http_error(500))
    error = llmcassette.check_unused(cassette)
    assert error is not None
    assert error.unused[0][0] == 2
    assert error.total == 2
    assert error.unused_faults == ["http_error(500)"]
    assert "1 of the 2 interactions the overrides script for" in str(error)
    assert "1 scheduled fault(s) were never used" in str(error)


def test_a_fault_left_unused_by_a_requests_call_says_where_the_call_went(
    provider: LocalProvider, tmp_path: Path
) -> None:
    # requests goes through vcrpy's own stubs, which carry no fault out: the call was made,
    # so "the test made fewer calls than scripted" alone sent the reader the wrong way.
    import requests

    url = provider.openai_base_url + "/chat/completions"
    body = {"model": "gpt-4o-mini", "messages": MESSAGES}
    path = tmp_path / "requests.jsonl"
    with llmcassette.use_cassette(path):
        requests.post(url, json=body, headers=AUTH, timeout=30)
    with llmcassette.use_cassette(path, record_mode="none", allow_unused=True) as cassette:
        faults.schedule(cassette, faults.http_error(429))
        assert requests.post(url, json=body, headers=AUTH, timeout=30).status_code == 200
    error = llmcassette.check_unused(cassette)
    assert error is not None
    assert error.unused_faults == ["http_error(429)"]
    assert error.bypassed == 1
    assert "1 request(s) went through vcrpy's own stubs" in str(error)
    assert "docs/faults.md#which-clients" in str(error)
    assert error.with_hint("another hint").bypassed == 1

    # A call through llmcassette's own transports that used no fault is not counted.
    with llmcassette.use_cassette(path, record_mode="none", allow_unused=True) as again:
        faults.schedule(again, faults.http_error(429), faults.http_error(429))
        with pytest.raises(httpx2.HTTPStatusError):
            httpx2.post(url, json=body, headers=AUTH).raise_for_status()
    error = llmcassette.check_unused(again)
    assert error is not None
    assert error.bypassed == 0
    assert "(the test made fewer calls than scripted)" in str(error)


@pytest.mark.parametrize("kind", sorted(faults.FAILURES))
@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_transport_failures_raise_the_client_libraries_own_types(
    provider: LocalProvider, tmp_path: Path, kind: str, library: Any
) -> None:
    path = tmp_path / "raw.jsonl"
    url = provider.openai_base_url + "/chat/completions"
    body = {"model": "gpt-4o-mini", "messages": MESSAGES}
    with llmcassette.use_cassette(path), library.Client() as client:
        client.post(url, json=body, headers=AUTH)
    with llmcassette.use_cassette(path, record_mode="none") as cassette, library.Client() as client:
        faults.schedule(cassette, faults.transport_error(kind))
        with pytest.raises(getattr(library, faults.FAILURES[kind][0])) as raised:
            client.post(url, json=body, headers=AUTH)
        assert raised.value.request.url == url
        assert client.post(url, json=body, headers=AUTH).json()["object"] == "chat.completion"


def test_the_openai_sdk_retries_a_connection_failure(
    provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "retry.jsonl"
    with llmcassette.use_cassette(path):
        recorded = openai_text(openai_client(provider))
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.transport_error("connect_error"))
        assert openai_text(openai_client(provider)) == recorded
    assert attempts(cassette) == 2


# --- cut streams -------------------------------------------------------------------------


def live_cut_error(provider: LocalProvider, run: Any) -> type[BaseException]:
    """The exception type the client raises when the real provider drops the stream."""
    provider.behaviour = StreamBehaviour(cut_after=3)
    try:
        run()
    except Exception as error:
        return type(error)
    finally:
        provider.behaviour = StreamBehaviour()
    raise AssertionError("the live cut raised nothing")


def openai_events(provider: LocalProvider, received: list[str]) -> None:
    stream = openai_client(provider, max_retries=0).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, stream=True
    )
    for chunk in stream:
        received.append(chunk.choices[0].delta.content or "" if chunk.choices else "")


def anthropic_events(provider: LocalProvider, received: list[str]) -> None:
    with anthropic_client(provider, max_retries=0).messages.stream(
        model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES
    ) as stream:
        for event in stream:
            received.append(event.type)


def raw_events(library: Any) -> Any:
    def run(provider: LocalProvider, received: list[str]) -> None:
        body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
        with (
            library.Client() as client,
            client.stream(
                "POST", provider.openai_base_url + "/chat/completions", json=body, headers=AUTH
            ) as response,
        ):
            for line in response.iter_lines():
                if line:
                    received.append(line)

    return run


CUT_CLIENTS = {
    "openai": openai_events,
    "anthropic": anthropic_events,
    "httpx": raw_events(httpx),
    "httpx2": raw_events(httpx2),
}


@pytest.mark.parametrize("client", sorted(CUT_CLIENTS))
def test_a_cut_stream_raises_what_a_real_cut_raises(
    provider: LocalProvider, tmp_path: Path, client: str
) -> None:
    run = CUT_CLIENTS[client]
    expected = live_cut_error(provider, lambda: run(provider, []))
    path = tmp_path / "cut.jsonl"
    with llmcassette.use_cassette(path):
        whole: list[str] = []
        run(provider, whole)
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.cut_stream(3))
        received: list[str] = []
        with pytest.raises(expected):
            run(provider, received)
    assert 0 < len(received) < len(whole)
    assert received == whole[: len(received)]


def test_a_cut_with_end_just_stops(provider: LocalProvider, tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    run = CUT_CLIENTS["httpx2"]
    with llmcassette.use_cassette(path):
        whole: list[str] = []
        run(provider, whole)
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.cut_stream(3, then="end"))
        received: list[str] = []
        run(provider, received)
    assert received == whole[:3]
    assert "data: [DONE]" not in received


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_an_async_cut_raises_the_same_type(
    provider: LocalProvider, tmp_path: Path, library: Any
) -> None:
    path = tmp_path / "cut.jsonl"
    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    url = provider.openai_base_url + "/chat/completions"

    async def run(received: list[str]) -> None:
        async with (
            library.AsyncClient() as client,
            client.stream("POST", url, json=body, headers=AUTH) as r,
        ):
            async for line in r.aiter_lines():
                if line:
                    received.append(line)

    with llmcassette.use_cassette(path):
        asyncio.run(run([]))
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.cut_stream(2, then="reset"))
        received: list[str] = []
        with pytest.raises(library.ReadError):
            asyncio.run(run(received))
    assert len(received) == 2


async def async_openai_events(provider: LocalProvider, received: list[str]) -> None:
    client = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, stream=True
    )
    async for chunk in stream:
        received.append(chunk.choices[0].delta.content or "" if chunk.choices else "")


async def async_anthropic_events(provider: LocalProvider, received: list[str]) -> None:
    client = anthropic.AsyncAnthropic(
        base_url=provider.anthropic_base_url, api_key="sk-ant", max_retries=0
    )
    async with client.messages.stream(
        model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES
    ) as stream:
        async for event in stream:
            received.append(event.type)


@pytest.mark.parametrize(
    ("events", "delivered"),
    [
        (async_openai_events, 3),
        # three SSE events; the SDK does not hand its "ping" event on
        (async_anthropic_events, ["message_start", "content_block_start"]),
    ],
    ids=["openai", "anthropic"],
)
def test_async_sdk_cut(
    provider: LocalProvider, tmp_path: Path, events: Any, delivered: Any
) -> None:
    path = tmp_path / "cut.jsonl"
    expected = live_cut_error(provider, lambda: asyncio.run(events(provider, [])))
    with llmcassette.use_cassette(path):
        asyncio.run(events(provider, []))
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.cut_stream(3))
        received: list[str] = []
        with pytest.raises(expected):
            asyncio.run(events(provider, received))
    assert (len(received) if isinstance(delivered, int) else received) == delivered


def test_cutting_more_events_than_recorded_is_an_error(
    provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "cut.jsonl"
    with llmcassette.use_cassette(path):
        raw_events(httpx2)(provider, [])
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.cut_stream(500))
        with pytest.raises(
            llmcassette.errors.FaultError,
            match=r"cut_stream\(after=500\), but the recorded stream has \d+ event",
        ):
            raw_events(httpx2)(provider, [])


# --- hangs ---------------------------------------------------------------------------------


def record_raw_stream(provider: LocalProvider, path: Path) -> None:
    with llmcassette.use_cassette(path):
        raw_events(httpx2)(provider, [])


def test_an_async_hang_is_cancelled_promptly(provider: LocalProvider, tmp_path: Path) -> None:
    path = tmp_path / "hang.jsonl"
    record_raw_stream(provider, path)
    marker = tmp_path / "hung.flag"
    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    url = provider.openai_base_url + "/chat/completions"
    received: list[str] = []

    async def consume() -> None:
        async with (
            httpx2.AsyncClient(timeout=None) as client,
            client.stream("POST", url, json=body, headers=AUTH) as r,
        ):
            async for line in r.aiter_lines():
                if line:
                    received.append(line)

    async def main() -> float:
        task = asyncio.create_task(consume())
        while not marker.exists():
            await asyncio.sleep(0.005)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - cancelled_at

    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.hang(after=2, marker=str(marker)))
        elapsed = asyncio.run(main())
    assert len(received) == 2
    # Without cancellation the hang never ends (no timeout): finishing at all shows the
    # cancel got through; the figure itself is measured in benchmarks/fault_latency.py.
    assert elapsed < 5


def test_a_sync_hang_ends_when_the_response_is_closed(
    provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "hang.jsonl"
    record_raw_stream(provider, path)
    marker = tmp_path / "hung.flag"
    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    received: list[str] = []
    with (
        llmcassette.use_cassette(path, record_mode="none") as cassette,
        httpx2.Client(timeout=None) as client,
    ):
        faults.schedule(cassette, faults.hang(after=1, marker=str(marker)))
        with client.stream(
            "POST", provider.openai_base_url + "/chat/completions", json=body, headers=AUTH
        ) as response:

            def close_when_hung() -> None:
                while not marker.exists():
                    time.sleep(0.005)
                response.close()

            closer = threading.Thread(target=close_when_hung)
            closer.start()
            for line in response.iter_lines():  # returns once the other thread closed it
                if line:
                    received.append(line)
            closer.join()
    assert len(received) == 1


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_a_hang_runs_into_the_sdks_read_timeout(
    provider: LocalProvider, tmp_path: Path, sdk: str
) -> None:
    path = tmp_path / "hang.jsonl"
    events = openai_events if sdk == "openai" else anthropic_events
    with llmcassette.use_cassette(path):
        events(provider, [])
    module: Any = openai if sdk == "openai" else anthropic
    make = openai_client if sdk == "openai" else anthropic_client
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.hang(after=2))
        client = make(provider, max_retries=0, timeout=0.2)
        with pytest.raises((module.APITimeoutError, httpx.ReadTimeout, httpx2.ReadTimeout)):
            events_with(client, sdk)


def events_with(client: Any, sdk: str) -> None:
    if sdk == "openai":
        for _ in client.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, stream=True
        ):
            pass
        return
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES) as s:
        for _ in s:
            pass


# --- latency -------------------------------------------------------------------------------


def test_latency_delays_headers_and_events(provider: LocalProvider, tmp_path: Path) -> None:
    path = tmp_path / "slow.jsonl"
    record_raw_stream(provider, path)
    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    stamps: list[float] = []
    with llmcassette.use_cassette(path, record_mode="none") as cassette, httpx2.Client() as client:
        faults.schedule(cassette, faults.latency(before_headers=0.2, between_events=0.05))
        started = time.monotonic()
        with client.stream(
            "POST", provider.openai_base_url + "/chat/completions", json=body, headers=AUTH
        ) as r:
            headers_at = time.monotonic() - started
            for line in r.iter_lines():
                if line:
                    stamps.append(time.monotonic() - started)
    # Lower bounds only: a busy machine makes a replay late, never early.
    assert headers_at >= 0.2
    assert stamps[-1] >= 0.2 + 0.05 * (len(stamps) - 1)


def test_latency_asks_for_its_waits(
    provider: LocalProvider, tmp_path: Path, replay_clock: ReplayClock
) -> None:
    path = tmp_path / "slow.jsonl"
    record_raw_stream(provider, path)
    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    with llmcassette.use_cassette(path, record_mode="none") as cassette, httpx2.Client() as client:
        faults.schedule(cassette, faults.latency(before_headers=0.2, between_events=0.05))
        with client.stream(
            "POST", provider.openai_base_url + "/chat/completions", json=body, headers=AUTH
        ) as r:
            headers_at = replay_clock.now()
            stamps = [replay_clock.now() for line in r.iter_lines() if line]
    assert headers_at == 0.2
    assert stamps == pytest.approx([0.2 + 0.05 * i for i in range(len(stamps))])


def test_a_fault_on_a_request_being_recorded_is_refused(
    provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "new.jsonl"
    with llmcassette.use_cassette(path) as cassette:
        faults.schedule(cassette, faults.cut_stream(1))
        with pytest.raises(llmcassette.errors.FaultError, match="record the cassette first"):
            raw_events(httpx2)(provider, [])


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_async_sdks_retry_a_429_then_get_the_recorded_answer(
    provider: LocalProvider, tmp_path: Path, sdk: str
) -> None:
    path = tmp_path / "retry.jsonl"

    async def ask() -> str:
        if sdk == "openai":
            client = openai.AsyncOpenAI(base_url=provider.openai_base_url, api_key="sk-test")
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", messages=MESSAGES, stream=True
            )
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        aclient = anthropic.AsyncAnthropic(base_url=provider.anthropic_base_url, api_key="sk-ant")
        async with aclient.messages.stream(
            model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES
        ) as s:
            return "".join([text async for text in s.text_stream])

    with llmcassette.use_cassette(path):
        recorded = asyncio.run(ask())
    write_sidecar(path, RETRY_THEN_RECORDED)
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        assert asyncio.run(ask()) == recorded
    assert attempts(cassette) == 2


def test_recorded_marker_text_replays_unchanged(provider: LocalProvider, tmp_path: Path) -> None:
    """An answer that happens to contain ``{{fromRequest:...}}`` is stored escaped."""
    path = tmp_path / "literal.jsonl"
    prompt = [{"role": "user", "content": "write {{fromRequest:(x)}} and {{!fromRequest"}]

    def ask() -> str:
        client = openai_client(provider)
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=prompt)
        return answer.choices[0].message.content or ""

    with llmcassette.use_cassette(path):
        recorded = ask()
    assert "{{fromRequest:(x)}}" in recorded
    assert "{{!fromRequest:(x)}}" in path.read_text()  # stored escaped
    with llmcassette.use_cassette(path, record_mode="none"):
        assert ask() == recorded


def test_converted_vcrpy_text_with_marker_text_replays_unchanged(
    provider: LocalProvider, tmp_path: Path
) -> None:
    import vcr

    from llmcassette.cli.main import main

    url = provider.openai_base_url + "/chat/completions"
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "{{fromRequest:.}}"}]}
    with vcr.VCR().use_cassette(str(tmp_path / "old.yaml")), httpx2.Client() as c:
        live = c.post(url, json=body, headers=AUTH).json()["choices"][0]["message"]["content"]
    assert "{{fromRequest:.}}" in live
    assert main(["convert", str(tmp_path / "old.yaml")]) == 0
    with llmcassette.use_cassette(tmp_path / "old.jsonl", record_mode="none"), httpx2.Client() as c:
        replayed = c.post(url, json=body, headers=AUTH).json()["choices"][0]["message"]["content"]
    assert replayed == live
