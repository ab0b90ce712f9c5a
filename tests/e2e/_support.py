"""Helpers for the end-to-end tests: the record/replay driver and cassette inspection.

Every e2e test follows the same pattern: run some client code against the local provider
while recording (``record_mode="once"``), stop the provider, then run the *same* code again
while replaying (``record_mode="none"``) and compare what the client saw both times.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llmcassette
from llmcassette.cassette import FORMAT_VERSION
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.testing import LocalProvider

API_KEY = "sk-test"


def cassette_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a cassette file, parsed as JSON."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def read_cassette(path: Path) -> cassette_file.Cassette:
    """The cassette parsed and validated by llmcassette itself."""
    return cassette_file.read(path.read_bytes(), path)


def header_value(headers: dict[str, Any], name: str) -> Any:
    """A header from a cassette line, looked up without regard to case (None if absent)."""
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


@dataclass
class RoundTrip:
    """What the same client code returned while recording and while replaying."""

    recorded: Any
    replayed: Any
    path: Path


async def run_action(action: Callable[[], Any]) -> Any:
    """Call ``action``; await what it returns when that is awaitable."""
    result = action()
    if inspect.isawaitable(result):
        result = await result
    return result


class Recorder:
    """Runs client code once against the provider and once from the cassette."""

    def __init__(self, provider: LocalProvider, path: Path) -> None:
        self.provider = provider
        self.path = path

    async def record(self, action: Callable[[], Any], **options: Any) -> Any:
        """Run ``action`` (sync or async) with the provider up, recording a new cassette."""
        assert not self.path.exists()
        before = len(self.provider.requests)
        with llmcassette.use_cassette(str(self.path), record_mode="once", **options):
            result = await run_action(action)
        sent = len(self.provider.requests) - before
        assert sent > 0, "nothing reached the provider"
        assert self.path.is_file(), "recording wrote no cassette"
        # One interaction per request the provider answered: none lost, none doubled.
        assert len(read_cassette(self.path).interactions) == sent
        # Every stream here ends properly: none may be marked as cut short (the SDKs close
        # a response at its terminator, before the chunked body's last empty chunk).
        assert all(
            "cut_short" not in item.end_extra for item in read_cassette(self.path).interactions
        )
        return result

    async def replay(self, action: Callable[[], Any], **options: Any) -> Any:
        """Run ``action`` again with the provider stopped, from the cassette only."""
        self.provider.stop()
        before = len(self.provider.requests)
        saved = self.path.read_bytes()
        try:
            with llmcassette.use_cassette(str(self.path), record_mode="none", **options):
                result = await run_action(action)
        finally:
            assert len(self.provider.requests) == before, "a request reached the provider"
        assert self.path.read_bytes() == saved, "replaying changed the cassette file"
        return result

    async def roundtrip(
        self,
        action: Callable[[], Any],
        replay_action: Callable[[], Any] | None = None,
        **options: Any,
    ) -> RoundTrip:
        """Record ``action``, stop the provider, replay (``replay_action`` or the same code).

        ``options`` go to the recording's ``use_cassette``.
        """
        recorded = await self.record(action, **options)
        replayed = await self.replay(replay_action or action)
        # The file must also be readable by llmcassette's own strict reader.
        cassette = read_cassette(self.path)
        assert cassette.header["format_version"] == FORMAT_VERSION
        return RoundTrip(recorded, replayed, self.path)


def assert_header_line(path: Path) -> None:
    """The first line is an llmcassette header of the current format version."""
    first = cassette_lines(path)[0]
    assert first["format"] == "llmcassette"
    assert first["format_version"] == FORMAT_VERSION
    assert isinstance(first.get("recorded_by"), str)


def stream_interactions(path: Path) -> list[list[dict[str, Any]]]:
    """For each interaction, its lines from ``request`` to ``end`` inclusive."""
    groups: list[list[dict[str, Any]]] = []
    for line in cassette_lines(path)[1:]:
        if line["type"] == "request":
            groups.append([])
        groups[-1].append(line)
    return groups


def assert_stream_structure(path: Path, kind: str, *, interaction: int = 0) -> list[dict[str, Any]]:
    """Check one streamed interaction's lines and return its event lines."""
    assert_header_line(path)
    group = stream_interactions(path)[interaction]
    request, response, *events, end = group
    assert request["type"] == "request"
    assert response["type"] == "response"
    assert response["body"] == {"stream": kind}
    assert all(line["type"] == "event" for line in events)
    assert end["type"] == "end"
    assert end["events"] == len(events)
    assert events, "a streamed response stored no events"
    return events
