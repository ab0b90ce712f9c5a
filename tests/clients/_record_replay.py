"""Record an SDK call against a live LocalProvider, then replay it with the provider stopped.

Used by the provider modules of the ``providers`` client set (google-genai, ollama, groq,
mistralai): the same ``call(base_url)`` runs twice, first recording (record mode ``all``)
through llmcassette's redaction, then offline (record mode ``none``) against a stopped
provider, so any request the cassette did not answer fails to connect.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import llmcassette
from llmcassette.testing import LocalProvider

T = TypeVar("T")


def record_then_replay(tmp_path: Path, call: Callable[[LocalProvider], T]) -> tuple[T, T, Path]:
    """Return (what the SDK got while recording, what it got replaying, the cassette)."""
    cassette = tmp_path / "cassette.jsonl"
    with LocalProvider() as provider:
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            recorded = call(provider)
        assert provider.requests, "recording sent nothing to the provider"
    # Stopped: its port no longer answers, so only the cassette can.
    with llmcassette.use_cassette(str(cassette), record_mode="none") as replay:
        replayed = call(provider)
    assert replay.all_played, "the replay left recorded interactions unplayed"
    return recorded, replayed, cassette


def stored_events(cassette: Path) -> list[list[object]]:
    """The stream events of each streamed response in the cassette, in order."""
    streams: list[list[object]] = []
    for line in cassette.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "response" and "stream" in entry.get("body", {}):
            streams.append([])
        elif entry.get("type") == "event":
            streams[-1].append(entry.get("data"))
    return streams
