"""Streams cut short are reported when recorded and when replayed, as the user chooses."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from _chunked_server import ChunkedServer

import llmcassette
from llmcassette.testing import LocalProvider
from llmcassette.transport.integrity import missing_terminator

CHUNK = {"id": "c", "object": "chat.completion.chunk", "choices": [{"delta": {"content": "hi"}}]}


def _two_chunks_without_done() -> list[bytes]:
    """Two OpenAI chat chunks, and no ``data: [DONE]`` after them."""
    event = f"data: {json.dumps(CHUNK, separators=(',', ':'))}\n\n".encode()
    return [event, event]


@pytest.fixture
def truncating() -> Iterator[ChunkedServer]:
    """Sends two OpenAI chat chunks and then ends the response cleanly, without [DONE]."""
    server = ChunkedServer("text/event-stream", _two_chunks_without_done(), "/v1/chat/completions")
    yield server
    server.stop()


CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def read_stream(url: str) -> list[str]:
    with (
        httpx2.Client() as client,
        client.stream("POST", url, json=CHAT, headers={"authorization": "Bearer sk-t"}) as response,
    ):
        return list(response.iter_lines())


def end_line(path: Path) -> dict[str, Any]:
    return [json.loads(line) for line in path.read_text().splitlines()][-1]


def test_a_clean_close_without_terminator_warns_by_default(
    tmp_path: Path, truncating: ChunkedServer
) -> None:
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="once"),
        pytest.warns(llmcassette.IncompleteStreamWarning, match=r"without `data: \[DONE\]`"),
    ):
        live = read_stream(truncating.url)
    end = end_line(tmp_path / "c.jsonl")
    assert end["cut_short"] is True
    assert "[DONE]" in end["incomplete"]
    truncating.stop()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once, when recorded
        with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
            assert read_stream(truncating.url) == live


def test_a_stream_that_ends_with_an_error_event_is_recorded_whole(tmp_path: Path) -> None:
    """Groq ends a stream whose tool call failed with an error event and no [DONE]; the
    SDKs raise that error. Even under ``incomplete_streams="error"`` it is no cut stream."""
    error = {"error": {"message": "Tool call validation failed", "code": "tool_use_failed"}}
    failing = [_two_chunks_without_done()[0], f"data: {json.dumps(error)}\n\n".encode()]
    server = ChunkedServer("text/event-stream", failing, "/v1/chat/completions")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            path = tmp_path / "c"
            with llmcassette.use_cassette(path, record_mode="once", incomplete_streams="error"):
                live = read_stream(server.url)
            assert "tool_use_failed" in "".join(live)
            end = end_line(tmp_path / "c.jsonl")
            assert "cut_short" not in end
            assert "incomplete" not in end
            with llmcassette.use_cassette(path, record_mode="none", incomplete_streams="error"):
                assert read_stream(server.url) == live
    finally:
        server.stop()


def test_error_policy_refuses_to_record_the_stream(
    tmp_path: Path, truncating: ChunkedServer
) -> None:
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="once", incomplete_streams="error"),
        pytest.raises(llmcassette.IncompleteStreamError, match="cut short") as caught,
    ):
        read_stream(truncating.url)
    assert caught.value.uri == truncating.url
    assert not (tmp_path / "c.jsonl").exists()


def test_the_report_of_a_cut_stream_shows_no_key(tmp_path: Path, truncating: ChunkedServer) -> None:
    key = "AIza" + "Sy" + "Q" * 33
    url = f"{truncating.url}?key={key}"
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="once", incomplete_streams="error"),
        pytest.raises(llmcassette.IncompleteStreamError) as caught,
    ):
        read_stream(url)
    assert key not in str(caught.value)
    assert caught.value.uri == f"{truncating.url}?key=<REDACTED:google-api-key>"
    with (
        pytest.warns(llmcassette.IncompleteStreamWarning) as warned,
        llmcassette.use_cassette(tmp_path / "w", record_mode="once"),
    ):
        read_stream(url)
    assert key not in str(warned[0].message)


def test_ignore_policy_records_silently(tmp_path: Path, truncating: ChunkedServer) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with llmcassette.use_cassette(
            tmp_path / "c", record_mode="once", incomplete_streams="ignore"
        ):
            read_stream(truncating.url)
    assert end_line(tmp_path / "c.jsonl")["cut_short"] is True


def test_the_policy_is_validated() -> None:
    with pytest.raises(ValueError, match="incomplete_streams must be one of"):
        llmcassette.use_cassette("x", incomplete_streams="sometimes")


def test_a_cassette_truncated_elsewhere_warns_on_replay(tmp_path: Path) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        read_stream(f"{provider.url}/v1/chat/completions?x=1")
    # Drop the [DONE] event by hand, as a careless edit or another tool would.
    path = tmp_path / "c.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records = [r for r in records if r.get("text") != "[DONE]"]
    records[-1]["events"] -= 1
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.warns(llmcassette.IncompleteStreamWarning, match="replaying an OpenAI chat"),
    ):
        read_stream(f"{provider.url}/v1/chat/completions?x=1")
    with (
        llmcassette.use_cassette(path, record_mode="none", incomplete_streams="error"),
        pytest.raises(llmcassette.IncompleteStreamError),
    ):
        read_stream(f"{provider.url}/v1/chat/completions?x=1")


@pytest.mark.parametrize(
    ("kind", "body", "problem"),
    [
        ("sse", b'data: {"object":"chat.completion.chunk"}\n\ndata: [DONE]\n\n', None),
        ("sse", b'data: {"object":"chat.completion.chunk"}\n\n', "[DONE]"),
        # Groq ends a stream whose tool call failed with an error event, and no [DONE].
        (
            "sse",
            b'data: {"object":"chat.completion.chunk"}\n\n'
            b'data: {"error":{"message":"Tool call validation failed","code":"tool_use_failed"}}\n\n',
            None,
        ),
        (
            "sse",
            b'data: {"object":"chat.completion.chunk"}\n\ndata: {"error":null}\n\n',
            "[DONE]",
        ),
        ("sse", b"event: message_start\ndata: {}\n\nevent: message_stop\ndata: {}\n\n", None),
        ("sse", b"event: message_start\ndata: {}\n\nevent: ping\ndata: {}\n\n", "message_stop"),
        (
            "sse",
            b'data: {"type":"response.created"}\n\ndata: {"type":"response.completed"}\n\n',
            None,
        ),
        ("sse", b'data: {"type":"response.created"}\n\n', "response.completed"),
        ("ndjson", b'{"done": false}\n{"done": true}\n', None),
        ("ndjson", b'{"done": false}\n', '"done": true'),
        # A failed stream ends with an error object, which the SDK raises: Ollama's and
        # Gemini's (google-genai raises a chunk that opens with {"error": ...}).
        ("ndjson", b'{"done": false}\n{"error": "model ran out of memory"}\n', None),
        ("sse", b'data: {"candidates":[]}\n\ndata: {"error":{"code":500}}\n\n', None),
        ("sse", b'data: {"candidates":[]}\n\ndata: {"candidates":[]}\n\n', "finishReason"),
        ("sse", b"data: something else\n\n", None),  # unknown kinds are not judged
        # The terminator is looked for in every event, not only the last one.
        (
            "sse",
            b'data: {"type":"response.created"}\n\ndata: {"type":"response.completed"}\n\n'
            b"data: [DONE]\n\n",
            None,
        ),
        ("sse", b"event: message_start\ndata: {}\n\nevent: error\ndata: {}\n\n", None),
        ("sse", b'data: {"type":"response.created"}\n\nevent: error\ndata: {}\n\n', None),
        ("sse", b"event: message-start\ndata: {}\n\nevent: message-end\ndata: {}\n\n", None),
        (
            "sse",
            b'data: {"type":"message-start"}\n\ndata: {"type":"message-end"}\n\n'
            b'data: {"type":"other"}\n\n',
            None,
        ),
        ("sse", b'data: {"type":"message-start"}\n\ndata: {"type":"x"}\n\n', "message-end"),
        # A hand-edited event whose type is not a string is no terminator, and no crash.
        ("sse", b'data: {"type":"response.created"}\n\ndata: {"type":[]}\n\n', "completed"),
        ("sse", b'data: {"type":"message-start"}\n\ndata: {"type":{}}\n\n', "message-end"),
    ],
)
def test_terminators(kind: str, body: bytes, problem: str | None) -> None:
    found = missing_terminator(kind, body)
    assert (found is None) if problem is None else (problem in (found or ""))


WRITER_END = (
    b'data: {"object":"chat.completion.chunk","choices":[{"delta":{}}]}\n\n'
    b'data: {"object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":7}}\n\n'
)


def writer_cassette(path: Path, uri: str) -> None:
    events = [line for line in WRITER_END.decode().split("\n\n") if line]
    lines = [
        {"format": "llmcassette", "format_version": 2},
        {"type": "request", "method": "POST", "uri": uri, "body": {"json": {"stream": True}}},
        {
            "type": "response",
            "status": 200,
            "headers": {"content-type": "text/event-stream"},
            "body": {"stream": "sse"},
        },
        *({"type": "event", "data": json.loads(event[len("data: ") :])} for event in events),
        {"type": "end", "events": len(events)},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize(
    ("uri", "warned"),
    [("https://api.writer.com/v1/chat", False), ("https://api.openai.com/v1/chat", True)],
)
def test_a_writer_stream_replays_without_a_warning(tmp_path: Path, uri: str, warned: bool) -> None:
    writer_cassette(tmp_path / "writer.jsonl", uri)
    with (
        warnings.catch_warnings(record=True) as caught,
        llmcassette.use_cassette(tmp_path / "writer.jsonl", record_mode="none"),
    ):
        warnings.simplefilter("always")
        answer = httpx2.post(uri, json={"stream": True})
    assert answer.content == WRITER_END
    cut = [w for w in caught if issubclass(w.category, llmcassette.IncompleteStreamWarning)]
    assert bool(cut) == warned


def test_writer_ends_its_stream_with_the_usage_chunk() -> None:
    """Writer sends no ``[DONE]`` after the usage chunk (OpenLLMetry's 32 Writer streams);
    OpenAI may send more after it (a ``moderation`` chunk), so elsewhere it is no end."""
    assert missing_terminator("sse", WRITER_END, "https://api.writer.com/v1/chat") is None
    for elsewhere in ("https://api.openai.com/v1/chat/completions", None):
        assert "[DONE]" in (missing_terminator("sse", WRITER_END, elsewhere) or "")


@pytest.mark.parametrize("name", ["httpx", "httpx2"])
async def test_async_stream_cut_by_the_provider(tmp_path: Path, name: str) -> None:
    library: Any = {"httpx": httpx, "httpx2": httpx2}[name]
    chat = CHAT

    async def read(url: str) -> tuple[list[bytes], type[BaseException] | None]:
        received: list[bytes] = []
        try:
            async with (
                library.AsyncClient() as client,
                client.stream(
                    "POST", url, json=chat, headers={"authorization": "Bearer sk-test"}
                ) as response,
            ):
                async for chunk in response.aiter_raw():
                    received.append(chunk)
        except library.TransportError as error:
            return received, type(error)
        return received, None

    with LocalProvider() as provider:
        provider.behaviour.cut_after = 3
        url = f"{provider.url}/v1/chat/completions"
        with (
            llmcassette.use_cassette(tmp_path / "c", record_mode="once"),
            pytest.warns(llmcassette.IncompleteStreamWarning),
        ):
            live, live_error = await read(url)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replayed, replay_error = await read(url)
    assert live_error is not None
    assert replay_error is live_error
    assert b"".join(replayed) == b"".join(live)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_anthropic_stream_objects_get_one_event_per_chunk(
    tmp_path: Path, is_async: bool
) -> None:
    messages: Any = [{"role": "user", "content": "count"}]

    async def event_count(base_url: str) -> int:
        if is_async:
            async with (
                anthropic.AsyncAnthropic(base_url=base_url, api_key="sk-ant-x", max_retries=0) as c,
                c.messages.stream(model="claude-haiku-4-5", max_tokens=50, messages=messages) as s,
            ):
                return len([event async for event in s])
        with (
            anthropic.Anthropic(base_url=base_url, api_key="sk-ant-x", max_retries=0) as c,
            c.messages.stream(model="claude-haiku-4-5", max_tokens=50, messages=messages) as s,
        ):
            return len(list(s))

    with LocalProvider() as provider:
        url = provider.anthropic_base_url
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            live = await event_count(url)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replayed = await event_count(url)
    events = [
        json.loads(line)
        for line in (tmp_path / "c.jsonl").read_text().splitlines()
        if '"type":"event"' in line
    ]
    assert replayed == live > 5
    # The SDK turns every recorded SSE event except `ping` into stream events (some into two:
    # a delta also yields a `text` event), so it saw at least one per recorded event.
    assert live >= len([e for e in events if e.get("event") != "ping"])
    assert asyncio.iscoroutinefunction(event_count)


def test_check_command_lists_streams_cut_short(
    tmp_path: Path, truncating: ChunkedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmcassette.cli.main import main

    with (
        llmcassette.use_cassette(tmp_path / "cut", record_mode="once"),
        pytest.warns(llmcassette.IncompleteStreamWarning),
    ):
        read_stream(truncating.url)
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "ok", record_mode="once"):
        read_stream(f"{provider.url}/v1/chat/completions")
    assert main(["check", str(tmp_path / "ok.jsonl")]) == 0
    assert main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path / 'cut.jsonl'}:2: POST {truncating.url}:" in out
    assert "[DONE]" in out
    assert "ok.jsonl" not in out
