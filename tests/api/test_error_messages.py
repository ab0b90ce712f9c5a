"""Error messages read as sentences whatever the counts."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette.errors import UnusedInteractionsError
from llmcassette.testing import LocalProvider


@pytest.mark.parametrize(
    ("unused", "total", "expected"),
    [
        (1, 1, "the 1 interaction recorded in c.jsonl was not played:"),
        (1, 3, "1 of the 3 interactions recorded in c.jsonl was not played:"),
        (2, 3, "2 of the 3 interactions recorded in c.jsonl were not played:"),
    ],
)
def test_unused_interactions_count(unused: int, total: int, expected: str) -> None:
    listed = [(position, "GET", "http://h/") for position in range(1, unused + 1)]
    error = UnusedInteractionsError("c.jsonl", listed, total)
    assert str(error).startswith(expected)
    assert error.unused == listed
    assert error.total == total


def test_a_mismatch_numbers_candidates_as_its_message_does(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    auth = {"authorization": "Bearer sk-local"}
    with (
        LocalProvider() as provider,
        llmcassette.use_cassette(path),
        httpx.Client(headers=auth) as client,
    ):
        for word in ("first", "second"):
            client.post(f"{provider.openai_base_url}/chat/completions", json=_chat(word))
        url = f"{provider.openai_base_url}/chat/completions"
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        httpx.Client(headers=auth) as client,
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        client.post(url, json=_chat("secondly"))
    closest = caught.value.candidates[0]
    assert closest.position == 2  # the second interaction, counted from 1
    assert "closest recorded: interaction #2 " in str(caught.value)


def _chat(word: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": word}]}


def test_a_mismatch_shows_no_control_character_of_the_cassette(tmp_path: Path) -> None:
    """pytest prints the message to a terminal: a recorded URL's escape sequence could
    clear it or set its title; it is shown as ``\\x1b``."""
    hostile = "\x1b]0;title\x07\x1b[2J"
    path = tmp_path / "c.jsonl"
    lines = [
        {"format": "llmcassette", "format_version": 2},
        {"type": "request", "method": "GET", "uri": f"http://h.test/v1?q={hostile}"},
        {"type": "response", "status": 200, "body": {"text": "ok"}},
        {"type": "end", "events": 0},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        httpx.get("http://h.test/v1")
    message = str(caught.value)
    assert r"(GET http://h.test/v1?q=\x1b]0;title\x07\x1b[2J)" in message
    assert not any(character in message for character in "\x1b\x07")
