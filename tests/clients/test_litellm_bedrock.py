"""litellm's ``bedrock/`` routes record against the local provider and replay with it stopped.

litellm builds Bedrock requests itself and signs them with botocore's SigV4 (no boto3
client): ``bedrock/converse/`` posts to ``/model/{id}/converse`` (``converse-stream``),
``bedrock/invoke/`` an Anthropic Messages body to ``/model/{id}/invoke``
(``invoke-with-response-stream``); ``aws_bedrock_runtime_endpoint`` replaces
``https://bedrock-runtime.{region}.amazonaws.com``. Its sync calls go through httpx, so
through llmcassette's stubs, and so do ``acompletion``'s with
``litellm.disable_aiohttp_transport``; by default ``acompletion`` uses aiohttp underneath
httpx, through vcrpy's aiohttp stub. Runs in the ``frameworks`` nox session; skipped where
litellm is missing (the conftest switches its model cost map to the bundled copy).
"""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import llmcassette
from llmcassette.testing import LocalProvider

from ._bedrock_frameworks import (
    MODEL,
    RECORDING,
    REPLAYING,
    assert_no_recording_credentials,
    frame_text,
    frames,
    recording_then_replaying,
)
from ._record_replay import record_then_replay
from ._support import error_chain_text

litellm = pytest.importorskip("litellm")
pytest.importorskip("botocore")  # litellm signs Bedrock requests with botocore
litellm.suppress_debug_info = True

# litellm's own pydantic use warns (on import; and its Bedrock stream chunks read
# ``model_fields`` from an instance): litellm's business, not this module's.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Items? .* (is|are) using the `ReadOnly` qualifier"),
    pytest.mark.filterwarnings("ignore:Accessing the 'model_(computed_)?fields' attribute"),
]

PROMPT = "Which frameworks can replay Bedrock?"
ANSWER = f"You said: {PROMPT}"
ROUTES = pytest.mark.parametrize("route", ["converse", "invoke"])
OPERATIONS = {
    ("converse", False): "/converse",
    ("converse", True): "/converse-stream",
    ("invoke", False): "/invoke",
    ("invoke", True): "/invoke-with-response-stream",
}
WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

# What the stream looked like from litellm's side: ("read", bytes) for each chunk httpx
# handed over, ("piece", text) for each chunk litellm's stream yielded.
Log = list[tuple[str, Any]]


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Log:
    """Notes every chunk an httpx response body yields, the order litellm sees them in."""
    seen: Log = []
    iter_bytes, aiter_bytes = httpx.Response.iter_bytes, httpx.Response.aiter_bytes

    def spied(self: httpx.Response, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        for chunk in iter_bytes(self, *args, **kwargs):
            seen.append(("read", len(chunk)))
            yield chunk

    async def aspied(self: httpx.Response, *args: Any, **kwargs: Any) -> AsyncIterator[bytes]:
        async for chunk in aiter_bytes(self, *args, **kwargs):
            seen.append(("read", len(chunk)))
            yield chunk

    monkeypatch.setattr(httpx.Response, "iter_bytes", spied)
    monkeypatch.setattr(httpx.Response, "aiter_bytes", aspied)
    return seen


def request(
    provider: LocalProvider, credentials: dict[str, str], route: str, **more: Any
) -> dict[str, Any]:
    return {
        "model": f"bedrock/{route}/{MODEL}",
        "messages": [{"role": "user", "content": PROMPT}],
        "aws_bedrock_runtime_endpoint": provider.bedrock_endpoint_url,
        "aws_region_name": "us-east-1",
        "num_retries": 0,
        **credentials,
        **more,
    }


def ask(
    provider: LocalProvider,
    credentials: dict[str, str],
    log: Log,
    *,
    route: str,
    streamed: bool,
    run_async: bool,
) -> tuple[list[str], Log]:
    """The answer's pieces as litellm hands them over, and the log of this call alone."""
    log.clear()
    call = request(provider, credentials, route, stream=streamed)

    async def asynchronously() -> list[str | None]:
        response = await litellm.acompletion(**call)
        if not streamed:
            return [response.choices[0].message.content]
        pieces = []
        async for chunk in response:
            pieces.append(chunk.choices[0].delta.content)
            log.append(("piece", pieces[-1]))
        return pieces

    if run_async:
        pieces = asyncio.run(asynchronously())
    elif streamed:
        pieces = []
        for chunk in litellm.completion(**call):
            pieces.append(chunk.choices[0].delta.content)
            log.append(("piece", pieces[-1]))
    else:
        pieces = [litellm.completion(**call).choices[0].message.content]
    # litellm's last streamed chunk carries the finish reason and no text.
    return [piece for piece in pieces if piece], list(log)


def request_uri(cassette: Path) -> str:
    """The URI of the cassette's only request."""
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    (uri,) = [line["uri"] for line in lines if line.get("type") == "request"]
    return str(uri)


def reads_before_each_piece(log: Log) -> list[int]:
    """How many body chunks httpx had handed over when litellm yielded each text piece."""
    reads, counts = 0, []
    for kind, value in log:
        if kind == "read":
            reads += 1
        elif value:
            counts.append(reads)
    return counts


@ROUTES
@pytest.mark.parametrize(
    ("streamed", "run_async"),
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["completion", "completion-stream", "acompletion", "acompletion-stream"],
)
def test_bedrock_route(
    tmp_path: Path,
    log: Log,
    monkeypatch: pytest.MonkeyPatch,
    route: str,
    streamed: bool,
    run_async: bool,
) -> None:
    monkeypatch.setattr(litellm, "disable_aiohttp_transport", True)  # httpx all the way

    def call(provider: LocalProvider, credentials: dict[str, str]) -> tuple[list[str], Log]:
        return ask(provider, credentials, log, route=route, streamed=streamed, run_async=run_async)

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(call))
    assert replayed[0] == recorded[0]
    pieces, replay_log = replayed
    assert "".join(pieces) == ANSWER
    assert_no_recording_credentials(cassette)
    assert request_uri(cassette).endswith(OPERATIONS[route, streamed])
    if not streamed:
        assert frames(cassette) == []
        return
    (stream,) = frames(cassette)
    texts = [(i, frame_text(f)) for i, f in enumerate(stream) if frame_text(f)]
    # One litellm chunk per text frame, in order: the replay was not merged into fewer.
    assert pieces == [text for _, text in texts]
    # Replay hands httpx one frame per chunk, and litellm yields each piece as soon as the
    # frame holding it has arrived, before the next frame is read.
    assert sum(kind == "read" for kind, _ in replay_log) == len(stream)
    assert reads_before_each_piece(replay_log) == [i + 1 for i, _ in texts]
    # Each frame was timed while recording, so `pace` applies to the replay.
    assert all("t" in frame for frame in stream)


@ROUTES
def test_acompletion_stream_through_aiohttp(tmp_path: Path, log: Log, route: str) -> None:
    """litellm's default async transport: recorded and replayed by vcrpy's aiohttp stub."""

    def call(provider: LocalProvider, credentials: dict[str, str]) -> tuple[list[str], Log]:
        return ask(provider, credentials, log, route=route, streamed=True, run_async=True)

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(call))
    assert replayed[0] == recorded[0]
    pieces, replay_log = replayed
    assert "".join(pieces) == ANSWER
    assert_no_recording_credentials(cassette)
    # Stored frame by frame all the same; litellm still yields one chunk per text frame.
    (stream,) = frames(cassette)
    assert pieces == [text for text in map(frame_text, stream) if text]
    # The stub hands the body over in one piece (docs/recipes.md, litellm's caveats), and
    # read it whole while recording: no frame has a time.
    assert sum(kind == "read" for kind, _ in replay_log) == 1
    assert not any("t" in frame for frame in stream)


def test_tool_call_stream(tmp_path: Path) -> None:
    def call(provider: LocalProvider, credentials: dict[str, str]) -> list[tuple[Any, Any]]:
        calls = []
        streamed = request(provider, credentials, "converse", stream=True, tools=WEATHER)
        for chunk in litellm.completion(**streamed):
            for tool in chunk.choices[0].delta.tool_calls or []:
                calls.append((tool.function.name, tool.function.arguments))
        return calls

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(call))
    assert replayed == recorded
    assert replayed[0] == ("get_weather", "")
    assert json.loads("".join(arguments for _, arguments in replayed)) == {"city": PROMPT}
    (stream,) = frames(cassette)
    deltas = [f for f in stream if f["headers"][":event-type"] == "contentBlockDelta"]
    # One litellm tool-call chunk for the block's start, then one per input delta.
    assert len(replayed) == 1 + len(deltas)
    assert_no_recording_credentials(cassette)


def test_signed_on_one_day_replays_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "cassette.jsonl"

    def on_day(day: datetime.datetime) -> None:
        monkeypatch.setattr("botocore.auth.get_current_datetime", lambda *a, **k: day)

    on_day(datetime.datetime(2024, 3, 1, 9, 30, 0))
    with LocalProvider() as provider:
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            ask_once = request(provider, RECORDING, "converse")
            assert litellm.completion(**ask_once).choices[0].message.content == ANSWER
        (sent,) = provider.requests
    assert sent.headers["x-amz-date"] == "20240301T093000Z"
    assert sent.headers["x-amz-security-token"] == RECORDING["aws_session_token"]
    signature = sent.headers["authorization"].rsplit("Signature=", 1)[1]

    on_day(datetime.datetime(2025, 11, 20, 17, 5, 42))
    with llmcassette.use_cassette(str(cassette), record_mode="none") as replay:
        again = request(provider, REPLAYING, "converse")
        assert litellm.completion(**again).choices[0].message.content == ANSWER
    assert replay.all_played
    text = cassette.read_text()
    for secret in (signature, "20240301T093000Z"):
        assert secret not in text
    assert_no_recording_credentials(cassette)
    headers = json.loads(text.splitlines()[1])["headers"]
    assert headers["x-amz-date"].startswith("<REDACTED:")
    assert headers["x-amz-security-token"].startswith("<REDACTED:")


def test_another_prompt_is_not_answered_from_the_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        litellm.completion(**request(provider, RECORDING, "converse"))
    other = [{"role": "user", "content": "Another question"}]
    with (
        pytest.raises(litellm.APIConnectionError) as raised,
        llmcassette.use_cassette(str(cassette), record_mode="none"),
    ):
        litellm.completion(**{**request(provider, REPLAYING, "converse"), "messages": other})
    # litellm wraps the mismatch in its own error; the report is in the message.
    report = error_chain_text(raised.value)
    assert "body.messages[0].content[0].text: recorded 'Which frameworks" in report
    assert "/converse]" in report
