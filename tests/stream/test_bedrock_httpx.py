"""A Bedrock event stream fetched with httpx (as litellm does): recorded by llmcassette's own
stubs, replayed one frame per chunk, and a cut one reported on replay."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette import _eventstream as wire
from llmcassette.errors import IncompleteStreamWarning
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
