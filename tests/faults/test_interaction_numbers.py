"""Interactions and events are numbered from 1 in every message (``#2``), as docs/errors.md
("Counting") says; a sidecar's own values (``at 1``, ``entries[0]``) are shown as written.

A fault's error said ``interaction 1`` for the entry ``at: 1`` while the unplayed-interactions
error of the same sidecar said ``#2`` for it: the two could not be told to be one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

import llmcassette
from llmcassette.errors import FaultError, PlaceholderError, UnusedInteractionsError

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"


def _get(uri: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "request", "method": "GET", "uri": uri},
        {"type": "response", "status": 200, "body": {"json": answer}},
        {"type": "end", "events": 0},
    ]


def _chat_stream(words: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "event", "data": {"choices": [{"index": 0, "delta": {"content": word}}]}}
        for word in words
    ]
    events.append({"type": "event", "text": "[DONE]"})
    return [
        {"type": "request", "method": "POST", "uri": OPENAI_CHAT, "body": {"json": {"a": 1}}},
        {
            "type": "response",
            "status": 200,
            "headers": {"content-type": "text/event-stream"},
            "body": {"stream": "sse"},
        },
        *events,
        {"type": "end", "events": len(events)},
    ]


def _write(path: Path, *interactions: list[dict[str, Any]]) -> Path:
    lines: list[dict[str, Any]] = [{"format": "llmcassette", "format_version": 2}]
    for interaction in interactions:
        lines.extend(interaction)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
def pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return _write(
        tmp_path / "pages.jsonl",
        _get("https://example.com/pages/1", {"page": 1}),
        _get("https://example.com/pages/2", {"page": 2}),
    )


def test_a_faults_error_and_the_unplayed_list_number_an_entry_alike(pages: Path) -> None:
    pages.with_name("pages.overrides.json").write_text(
        json.dumps(
            {"entries": [{"at": 1, "replace": {"no such text": "x"}}, {"at": 2, "status": 503}]}
        )
    )
    with llmcassette.use_cassette("pages.jsonl", record_mode="none", allow_unused=True):
        httpx2.get("https://example.com/pages/1")
        with pytest.raises(FaultError) as raised:
            httpx2.get("https://example.com/pages/2")
    assert str(raised.value).startswith(
        "pages.jsonl: interaction #2 (at 1 in entries[0] of pages.overrides.json): "
    )
    assert raised.value.location == "interaction #2 (at 1 in entries[0] of pages.overrides.json)"

    with (
        pytest.raises(UnusedInteractionsError) as unplayed,
        llmcassette.use_cassette("pages.jsonl", record_mode="none"),
    ):
        httpx2.get("https://example.com/pages/1")
    message = str(unplayed.value)
    assert (
        "#2: GET https://example.com/pages/2 [replace_text(1 text(s)); at 1 in entries[0] of"
        in (message)
    )
    assert "#3: any method any URL [http_error(503); at 2 in entries[1] of" in message


def test_a_replace_lists_entry_is_numbered_by_its_position(pages: Path) -> None:
    pages.with_name("pages.overrides.json").write_text(
        json.dumps({"mode": "replace", "entries": [{"recorded": 1, "replace": {"nothing": "x"}}]})
    )
    with (
        pytest.raises(FaultError) as raised,
        llmcassette.use_cassette("pages.jsonl", record_mode="none"),
    ):
        httpx2.get("https://example.com/pages/2")
    assert raised.value.location == "interaction #1 (entries[0] of pages.overrides.json)"


def test_events_are_numbered_from_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cassette = _write(tmp_path / "chat.jsonl", _chat_stream(["Hello", " there"]))
    sidecar = {"entries": [{"at": 0, "replace": {"there": "{{fromRequest:ticket (\\\\d+)}}"}}]}
    cassette.with_name("chat.overrides.json").write_text(json.dumps(sidecar))
    with (
        pytest.raises(PlaceholderError) as raised,
        llmcassette.use_cassette("chat.jsonl", record_mode="none"),
        httpx2.stream("POST", OPENAI_CHAT, json={"a": 1}) as response,
    ):
        response.read()
    where = "interaction #1 (at 0 in entries[0] of chat.overrides.json), event #2"
    assert raised.value.location == where


def test_hints_name_recorded_interactions_as_show_numbers_them() -> None:
    from llmcassette.errors import OverridesError
    from llmcassette.faults import Overrides

    with pytest.raises(OverridesError) as raised:
        Overrides.parse({"entries": [{"at": 0, "recorded": 3}]}, "x.overrides.json").resolve(2)
    assert raised.value.hint == (
        "recorded counts from 0: use 0-1 for the interactions `llmcassette show` lists as #1-#2"
    )
    with pytest.raises(OverridesError) as raised:
        Overrides.parse({"entries": [{"at": 1, "status": 500}]}, "x.overrides.json").resolve(0)
    assert raised.value.hint == "use at=0"  # there is nothing to patch: no range 0--1
