"""What the Bedrock framework modules (litellm, langchain-aws) share: credentials and frames.

Each call records with one made-up credential set and replays with the other, so a replay
that depended on the key, the session token or the signature would not match. Both sets have
the shapes AWS issues (long-term ``AKIA``, temporary ``ASIA``, each with a session token).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from llmcassette.testing import LocalProvider

T = TypeVar("T")

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
RECORDING = {
    "aws_access_key_id": "AKIA" + "FRAMEWORKSAAAAAA",
    "aws_secret_access_key": "frameworkSecretA/" + "K7MDENG" * 3 + "xyz",
    "aws_session_token": "IQoJb3JpZ2luX2VjEHUaCXVzLWVhc3QtMSJHMEUCIQ" + "FrameworkTokenA" * 4,
}
REPLAYING = {
    "aws_access_key_id": "ASIA" + "FRAMEWORKSBBBBBB",
    "aws_secret_access_key": "frameworkSecretB/" + "Q2WXZDE" * 3 + "abc",
    "aws_session_token": "IQoJb3JpZ2luX2VjEHUaCXVzLWVhc3QtMSJHMEUCIQ" + "FrameworkTokenB" * 4,
}


def recording_then_replaying(
    call: Callable[[LocalProvider, dict[str, str]], T],
) -> Callable[[LocalProvider], T]:
    """``call`` for ``record_then_replay``: the recording credentials first, then the others."""
    sets = iter([RECORDING, REPLAYING])
    return lambda provider: call(provider, next(sets))


def assert_no_recording_credentials(cassette: Path) -> None:
    """Nothing of the recording credentials is stored, and nothing but Bedrock was asked."""
    text = cassette.read_text()
    uris = [json.loads(line).get("uri", "") for line in text.splitlines()]
    assert all("/model/" in uri for uri in uris if uri), uris
    for value in RECORDING.values():
        assert value not in text
    assert "Signature=<REDACTED:aws-sigv4-signature>" in text


def frames(cassette: Path) -> list[list[dict[str, Any]]]:
    """The frame records (event-stream headers, decoded payload) of each stream, in order."""
    streams: list[list[dict[str, Any]]] = []
    for line in cassette.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "response" and "stream" in entry.get("body", {}):
            assert entry["body"] == {"stream": "eventstream"}
            streams.append([])
        elif entry.get("type") == "event":
            streams[-1].append(entry)
    return streams


def frame_kind(frame: dict[str, Any]) -> str:
    """A ConverseStream frame's event type, or the type of the Anthropic event in a chunk."""
    kind = frame["headers"][":event-type"]
    return str(frame["data"]["bytes"]["type"]) if kind == "chunk" else str(kind)


def frame_text(frame: dict[str, Any]) -> str | None:
    """The answer text a frame carries (ConverseStream or InvokeModel), if any."""
    data = frame["data"]
    delta = data.get("bytes", data).get("delta", {})  # an InvokeModel chunk holds an event
    return delta.get("text")
