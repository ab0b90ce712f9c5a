"""A Bedrock event stream fetched with httpx (as litellm does): recorded by llmcassette's own
stubs, each frame timed, replayed one frame per chunk (at the recorded pace if asked), and a
cut one reported while recording and on replay."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _chunked_server import ChunkedServer

import llmcassette
from llmcassette import _eventstream as wire
from llmcassette.errors import IncompleteStreamError, IncompleteStreamWarning
from llmcassette.testing import LocalProvider

AUTH = {
    "authorization": "AWS4-HMAC-SHA256 Credential=AKIALOCALPROVIDERAAA/20240301/us-east-1/"
    "bedrock/aws4_request, SignedHeaders=host, Signature=" + "7a" * 32
}
BODY = {"messages": [{"role": "user", "content": [{"text": "Hello there"}]}]}
PATH = "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"


def _chunks(url: str) -> list[bytes]:
    with httpx.stream("POST", url + PATH, json=BODY, headers=AUTH) as reply:
        return list(reply.iter_raw())


def test_replayed_one_frame_per_chunk(tmp_path: Path) -> None:
    cassette = tmp_path / "bedrock.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        recorded = _chunks(provider.url)
    with llmcassette.use_cassette(str(cassette), record_mode="none"):
        replayed = _chunks(provider.url)
    assert b"".join(replayed) == b"".join(recorded)
    frames = wire.decode_frames(b"".join(recorded))
    assert [wire.decode_frame(chunk) for chunk in replayed] == frames
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert sum(line.get("type") == "event" for line in lines) == len(frames) == len(replayed)
    assert "AKIALOCALPROVIDERAAA" not in cassette.read_text()


def test_a_cut_stream_warns_on_replay(tmp_path: Path) -> None:
    cassette = tmp_path / "bedrock.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        _chunks(provider.url)
    records = [json.loads(line) for line in cassette.read_text().splitlines()]
    # Drop messageStop and metadata, as a converter or a hand edit might.
    kept = [*records[:-3], {**records[-1], "events": records[-1]["events"] - 2}]
    cassette.write_text("".join(json.dumps(r) + "\n" for r in kept))
    with (
        pytest.warns(IncompleteStreamWarning, match="ConverseStream that ended without"),
        llmcassette.use_cassette(str(cassette), record_mode="none"),
    ):
        _chunks(provider.url)


def _frame(event_type: str, payload: dict[str, object]) -> bytes:
    headers = [(":event-type", event_type), (":message-type", "event")]
    return wire.encode_frame(wire.string_headers(headers), json.dumps(payload).encode())


CONVERSE = [
    _frame("messageStart", {"role": "assistant"}),
    _frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}}),
    _frame("contentBlockStop", {"contentBlockIndex": 0}),
    _frame("messageStop", {"stopReason": "end_turn"}),
    _frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}),
]


@pytest.fixture
def frame_server() -> Iterator[ChunkedServer]:
    """Sends ``pieces`` (Converse frames) one HTTP chunk each, then ends cleanly."""
    server = ChunkedServer(wire.CONTENT_TYPE, CONVERSE)
    yield server
    server.stop()


def _end_line(cassette: Path) -> dict[str, object]:
    end: dict[str, object] = json.loads(cassette.read_text().splitlines()[-1])
    return end


def test_a_clean_close_without_message_stop_warns_while_recording(
    tmp_path: Path, frame_server: ChunkedServer
) -> None:
    frame_server.pieces = CONVERSE[:2]
    cassette = tmp_path / "bedrock.jsonl"
    with (
        pytest.warns(IncompleteStreamWarning, match="ConverseStream that ended without"),
        llmcassette.use_cassette(str(cassette), record_mode="all"),
    ):
        _chunks(frame_server.url)
    end = _end_line(cassette)
    assert end["cut_short"] is True
    assert "`messageStop` and `metadata`" in str(end["incomplete"])


def test_the_error_policy_does_not_record_a_cut_stream(
    tmp_path: Path, frame_server: ChunkedServer
) -> None:
    frame_server.pieces = CONVERSE[:3]
    cassette = tmp_path / "bedrock.jsonl"
    with (
        pytest.raises(IncompleteStreamError, match="ConverseStream that ended without"),
        llmcassette.use_cassette(str(cassette), record_mode="all", incomplete_streams="error"),
    ):
        _chunks(frame_server.url)
    assert not cassette.exists()


def test_a_whole_stream_the_caller_closed_early_is_not_cut_short(
    tmp_path: Path, frame_server: ChunkedServer
) -> None:
    # The caller stops at `metadata`, before the chunked encoding's last empty chunk.
    frame_server.linger = 0.5
    cassette = tmp_path / "bedrock.jsonl"
    with (
        llmcassette.use_cassette(str(cassette), record_mode="all"),
        httpx.stream("POST", frame_server.url + PATH, json=BODY, headers=AUTH) as reply,
    ):
        seen = b""
        for chunk in reply.iter_raw():
            seen += chunk
            if len(wire.split_frames(seen)) == len(CONVERSE):
                break
    end = _end_line(cassette)
    assert end["events"] == len(CONVERSE)
    assert "cut_short" not in end


def test_frames_are_timed_and_replay_at_the_recorded_pace(tmp_path: Path) -> None:
    cassette = tmp_path / "bedrock.jsonl"
    with LocalProvider() as provider:
        provider.behaviour.event_delay = 0.05
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            _chunks(provider.url)
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    times = [line["t"] for line in lines if line.get("type") == "event"]
    assert len(times) > 5
    assert times == sorted(times)
    assert times[-1] - times[0] >= 0.05 * (len(times) - 1) * 0.8  # the provider's gaps
    started = time.monotonic()
    with llmcassette.use_cassette(str(cassette), record_mode="none", pace="recorded"):
        replayed = _chunks(provider.url)
    assert time.monotonic() - started >= times[-1] * 0.95
    assert len(replayed) == len(times)
