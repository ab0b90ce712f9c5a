"""Gemini's streamed JSON array (``streamGenerateContent`` without ``alt=sse``): recorded one
event line per element, replayed one chunk per element, cut streams reported.

google-genai always asks for ``alt=sse`` (``models.py`` writes ``:streamGenerateContent?alt=sse``
for every streamed call), so no SDK reads this framing: these tests read it with raw httpx
and httpx2, as the REST clients that use it do.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from _chunked_server import ChunkedServer

import llmcassette
from _replay_clock import ReplayClock
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.testing import LocalProvider

KEY = {"x-goog-api-key": "AIza-local"}
BODY = {"contents": [{"role": "user", "parts": [{"text": "Hello Gemini"}]}]}
LIBRARIES: dict[str, Any] = {"httpx": httpx, "httpx2": httpx2}


def _url(base: str, query: str = "") -> str:
    return f"{base}/v1beta/models/gemini-2.0-flash:streamGenerateContent{query}"


def read_chunks(library: Any, url: str) -> list[bytes]:
    with library.Client() as client, client.stream("POST", url, json=BODY, headers=KEY) as reply:
        return list(reply.iter_raw())


def timed_chunks(url: str) -> list[tuple[float, bytes]]:
    started = time.monotonic()
    with httpx.stream("POST", url, json=BODY, headers=KEY) as reply:
        return [(time.monotonic() - started, chunk) for chunk in reply.iter_raw()]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def write_records(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")


@pytest.mark.parametrize("name", ["httpx", "httpx2"])
def test_each_element_is_one_event_line_and_one_replayed_chunk(tmp_path: Path, name: str) -> None:
    library = LIBRARIES[name]
    with LocalProvider() as provider:
        provider.behaviour.events = 5
        url = _url(provider.gemini_base_url)
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            live = read_chunks(library, url)
    lines = records(tmp_path / "c.jsonl")
    response, events, end = lines[2], lines[3:-1], lines[-1]
    assert response["body"] == {"stream": "json-array"}
    assert end["events"] == len(events) == len(live) == 5
    assert [event["before"] for event in events] == ["[", ",\r\n", ",\r\n", ",\r\n", ",\r\n"]
    assert [event.get("after") for event in events] == [None, None, None, None, "]"]
    assert all("layout" not in event and "candidates" in event["data"] for event in events)
    assert all(isinstance(event["t"], float) for event in events)
    # The provider is stopped: only the cassette answers, element by element.
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        assert read_chunks(library, url) == live


async def test_async_replay_is_chunk_by_chunk(tmp_path: Path) -> None:
    with LocalProvider() as provider:
        provider.behaviour.events = 3
        url = _url(provider.gemini_base_url)
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            live = read_chunks(httpx, url)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        async with (
            httpx.AsyncClient() as client,
            client.stream("POST", url, json=BODY, headers=KEY) as reply,
        ):
            replayed = [chunk async for chunk in reply.aiter_raw()]
    assert replayed == live


def test_the_cassette_rebuilds_the_body_byte_for_byte(tmp_path: Path) -> None:
    with LocalProvider() as provider:
        provider.behaviour.events = 4
        url = _url(provider.gemini_base_url, "?alt=json")  # alt=json is the default framing
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            live = b"".join(read_chunks(httpx, url))
    path = tmp_path / "c.jsonl"
    (item,) = cassette_file.read(path.read_bytes(), path).interactions
    assert item.stream == "json-array"
    assert item.response_body == live
    assert len(json.loads(live)) == 4
    # Written again, the cassette is the same text.
    text = path.read_text("utf-8")
    assert cassette_file.write(cassette_file.read(path.read_bytes(), path)) == text


def test_replay_waits_as_recorded_only_when_paced(
    tmp_path: Path, replay_clock: ReplayClock
) -> None:
    with LocalProvider() as provider:
        provider.behaviour.events = 6
        provider.behaviour.event_delay = 0.05
        url = _url(provider.gemini_base_url)
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            read_chunks(httpx, url)
    lines = records(tmp_path / "c.jsonl")
    headers, recorded = lines[2]["t"], [event["t"] for event in lines[3:-1]]

    def arrivals(**pace: Any) -> list[float]:
        """When each chunk arrived, in seconds on the replay's clock from the request."""
        replay_clock.waits.clear()
        sent = replay_clock.now()
        with (
            llmcassette.use_cassette(tmp_path / "c", record_mode="none", **pace),
            httpx.stream("POST", url, json=BODY, headers=KEY) as reply,
        ):
            return [replay_clock.now() - sent for _ in reply.iter_raw()]

    assert len(recorded) == 6
    assert recorded[-1] >= 5 * 0.05
    assert arrivals(pace="recorded") == pytest.approx(recorded)
    assert replay_clock.waits[0] == pytest.approx(headers)
    assert arrivals(pace=0.5) == pytest.approx([t / 2 for t in recorded])
    assert arrivals() == [0.0] * 6
    assert replay_clock.waits == []


def test_a_paced_replay_takes_at_least_the_recorded_time(tmp_path: Path) -> None:
    with LocalProvider() as provider:
        provider.behaviour.events = 3
        provider.behaviour.event_delay = 0.05
        url = _url(provider.gemini_base_url)
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            read_chunks(httpx, url)
    recorded = [event["t"] for event in records(tmp_path / "c.jsonl")[3:-1]]
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", pace="recorded"):
        paced = [t for t, _ in timed_chunks(url)]
    # A lower bound only: a busy machine makes a replay late, never early.
    assert all(p >= r for p, r in zip(paced, recorded, strict=True))


def test_sse_streams_and_error_objects_stay_as_they_were(tmp_path: Path) -> None:
    with LocalProvider() as provider:
        base = provider.gemini_base_url
        error = f"{base}/v1beta/models/error-429:streamGenerateContent"
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once", record_errors=True):
            read_chunks(httpx, _url(base, "?alt=sse"))
            read_chunks(httpx, error)
    responses = [line for line in records(tmp_path / "c.jsonl") if line.get("type") == "response"]
    assert responses[0]["body"] == {"stream": "sse"}
    assert responses[1]["status"] == 429
    assert "json" in responses[1]["body"], "an error sent as one object is a plain body"


def test_a_cassette_holding_the_array_as_one_body_still_replays(tmp_path: Path) -> None:
    # Earlier releases stored the streamed array as one JSON body on the response line.
    with LocalProvider() as provider:
        provider.behaviour.events = 3
        url = _url(provider.gemini_base_url)
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            live = b"".join(read_chunks(httpx, url))
    path = tmp_path / "c.jsonl"
    lines = records(path)
    old = [*lines[:2], {**lines[2], "body": {"text": live.decode()}}, {**lines[-1], "events": 0}]
    write_records(path, old)
    with llmcassette.use_cassette(path, record_mode="none"):
        assert read_chunks(httpx, url) == [live]
    parsed = json.loads(live)
    write_records(path, [*old[:2], {**old[2], "body": {"json": parsed}}, old[3]])
    cassette = cassette_file.read(path.read_bytes(), path)
    (item,) = cassette.interactions
    assert item.stream is None
    assert json.loads(item.response_body) == parsed
    # Written again (a recording that adds to it), the body is stored as its events.
    written = [json.loads(line) for line in cassette_file.write(cassette).splitlines()]
    assert written[2]["body"] == {"stream": "json-array"}
    assert [line["data"] for line in written[3:-1]] == parsed


# ---------------------------------------------------------------- streams cut short


CHUNKS = [
    {"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "index": 0}]},
    {"candidates": [{"content": {"parts": [{"text": "!"}], "role": "model"}, "index": 0}]},
]


def _unclosed_array() -> list[bytes]:
    """The two Gemini chunks as a JSON array, and no ``]`` after them."""
    return [(("[" if i == 0 else ",\r\n") + json.dumps(c)).encode() for i, c in enumerate(CHUNKS)]


@pytest.fixture
def unclosed() -> Iterator[ChunkedServer]:
    """Streams two Gemini chunks as a JSON array, then ends the body cleanly without ``]``."""
    server = ChunkedServer("application/json; charset=UTF-8", _unclosed_array())
    server.url = _url(server.base)
    yield server
    server.stop()


def test_an_array_that_ends_without_its_bracket_is_reported(
    tmp_path: Path, unclosed: ChunkedServer
) -> None:
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="once"),
        pytest.warns(llmcassette.IncompleteStreamWarning, match=r"ended without its `\]`"),
    ):
        live = read_chunks(httpx, unclosed.url)
    end = records(tmp_path / "c.jsonl")[-1]
    assert end["events"] == 2
    assert end["cut_short"] is True
    assert "without its `]`" in end["incomplete"]
    unclosed.stop()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once, when recorded
        with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
            assert read_chunks(httpx, unclosed.url) == live


def test_a_connection_dropped_mid_array_breaks_again_on_replay(tmp_path: Path) -> None:
    with LocalProvider() as provider:
        provider.behaviour.events = 5
        provider.behaviour.cut_after = 2
        url = _url(provider.gemini_base_url)
        received: list[bytes] = []
        with (
            llmcassette.use_cassette(tmp_path / "c", record_mode="once"),
            pytest.warns(llmcassette.IncompleteStreamWarning),
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream("POST", url, json=BODY, headers=KEY) as reply,
        ):
            received.extend(reply.iter_raw())
    assert len(received) == 2
    assert records(tmp_path / "c.jsonl")[-1]["events"] == 2
    replayed: list[bytes] = []
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", url, json=BODY, headers=KEY) as reply,
    ):
        replayed.extend(reply.iter_raw())
    assert replayed == received


def test_an_array_cut_elsewhere_warns_on_replay_and_check_lists_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmcassette.cli.main import main

    with LocalProvider() as provider:
        provider.behaviour.events = 3
        url = _url(provider.gemini_base_url)
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            read_chunks(httpx, url)
    path = tmp_path / "c.jsonl"
    assert main(["check", str(path)]) == 0
    # Drop the last element, the one holding the `]`, as a careless edit would.
    lines = records(path)
    write_records(path, [*lines[:-2], {**lines[-1], "events": lines[-1]["events"] - 1}])
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.warns(llmcassette.IncompleteStreamWarning, match=r"without its `\]`"),
    ):
        assert len(read_chunks(httpx, url)) == 2
    with (
        llmcassette.use_cassette(path, record_mode="none", incomplete_streams="error"),
        pytest.raises(llmcassette.IncompleteStreamError),
    ):
        read_chunks(httpx, url)
    capsys.readouterr()
    assert main(["check", str(path)]) == 1
    assert "without its `]`" in capsys.readouterr().out


def test_a_gzip_compressed_array_is_stored_as_its_events() -> None:
    import gzip

    body = b'[{"candidates":[]},\r\n{"candidates":[{"finishReason":"STOP"}]}]'
    headers = {"content-type": ["application/json; charset=UTF-8"], "content-encoding": ["gzip"]}
    uri = _url("https://generativelanguage.googleapis.com", "?alt=json")
    item = cassette_file.Interaction("POST", uri, {}, None, 200, "OK", headers, gzip.compress(body))
    header = cassette_file.new_header("tests")
    text = cassette_file.write(cassette_file.Cassette(header, [item]))
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[2]["body"] == {"stream": "json-array"}
    assert "content-encoding" not in lines[2]["headers"]
    assert [line["before"] for line in lines[3:-1]] == ["[", ",\r\n"]
    (read,) = cassette_file.read(text.encode(), "c.jsonl").interactions
    assert read.response_body == body
