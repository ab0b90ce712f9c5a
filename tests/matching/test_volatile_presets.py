"""Volatile presets for what clients generate: undashed hex ids, tool-call ids, epoch times."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

import llmcassette
from llmcassette.matching.normalize import VOLATILE_PRESETS, MatchConfig
from llmcassette.testing import LocalProvider

AUTH = {"authorization": "Bearer sk-test"}


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def normalized(volatile: tuple[str, ...], body: Any) -> Any:
    return MatchConfig(volatile=volatile).body(body)


def test_hex_id_replaces_undashed_hex_also_after_a_prefix() -> None:
    body = {"id": f"call_{uuid.uuid4().hex}", "note": f"trace {uuid.uuid4().hex} done"}
    assert normalized(("hex_id",), body) == {"id": "call_<hex_id>", "note": "trace <hex_id> done"}


def test_hex_id_leaves_shorter_and_longer_hex_alone() -> None:
    body = {"sha1": "a" * 40, "short": "deadbeef", "word": "x" + "a" * 32}
    assert normalized(("hex_id",), body) == body


def test_epoch_presets_replace_numbers_and_digit_strings_in_range() -> None:
    now = time.time()
    body = {"s": int(now), "f": now, "ms": int(now * 1000), "text": str(int(now)), "n": 8192}
    assert normalized(("epoch_seconds",), body) == {
        "s": "<epoch_seconds>",
        "f": "<epoch_seconds>",
        "ms": int(now * 1000),
        "text": "<epoch_seconds>",
        "n": 8192,
    }
    assert normalized(("epoch_ms",), body)["ms"] == "<epoch_ms>"
    assert normalized(("epoch_ms",), body)["s"] == int(now)
    assert normalized(("epoch_seconds",), {"flag": True}) == {"flag": True}


def test_tool_call_id_replaces_the_ids_of_openai_anthropic_and_gemini_tool_calls() -> None:
    openai = {
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function"}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "4"},
            {"role": "user", "id": "msg-1", "content": "hi"},
        ]
    }
    anthropic = {
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
        ]
    }
    gemini = {
        "contents": [
            {"parts": [{"functionCall": {"name": "f", "id": "call_2"}}]},
            {"parts": [{"functionResponse": {"name": "f", "id": "call_2"}}]},
        ]
    }
    responses = {"input": [{"type": "function_call_output", "call_id": "call_3"}]}
    volatile = ("tool_call_id",)
    got = normalized(volatile, openai)["messages"]
    assert got[0]["tool_calls"][0]["id"] == "<tool_call_id>"
    assert got[1]["tool_call_id"] == "<tool_call_id>"
    assert got[2]["id"] == "msg-1", "a message id is not a tool call's"
    got = normalized(volatile, anthropic)["messages"]
    assert got[0]["content"][0]["id"] == "<tool_call_id>"
    assert got[1]["content"][0]["tool_use_id"] == "<tool_call_id>"
    got = normalized(volatile, gemini)["contents"]
    assert got[0]["parts"][0]["functionCall"]["id"] == "<tool_call_id>"
    assert got[1]["parts"][0]["functionResponse"]["id"] == "<tool_call_id>"
    assert normalized(volatile, responses)["input"][0]["call_id"] == "<tool_call_id>"


def test_tool_call_id_takes_gemini_parts_in_snake_case_too() -> None:
    # The Gemini API takes both spellings; llm-gemini sends this one, with an id it makes
    # anew on every run (f"call_{uuid4().hex}").
    tool_id = f"call_{uuid.uuid4().hex}"
    gemini = {
        "contents": [
            {"parts": [{"function_call": {"name": "f", "args": {}, "id": tool_id}}]},
            {"parts": [{"function_response": {"name": "f", "response": {}, "id": tool_id}}]},
        ]
    }
    got = normalized(("tool_call_id",), gemini)["contents"]
    assert got[0]["parts"][0]["function_call"]["id"] == "<tool_call_id>"
    assert got[1]["parts"][0]["function_response"]["id"] == "<tool_call_id>"


def test_no_preset_is_on_by_default() -> None:
    body = {"id": f"call_{uuid.uuid4().hex}", "at": int(time.time()), "tool_call_id": "x"}
    assert MatchConfig().body(body) == body


def test_every_preset_is_documented() -> None:
    page = (Path(__file__).parents[2] / "docs" / "matching.md").read_text()
    for name in VOLATILE_PRESETS:
        assert f"`{name}`" in page, name


def test_a_client_made_call_id_replays_under_hex_id(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # What llm-gemini does: a tool call id made on the client with uuid4().hex, sent back.
    def ask(url: str) -> int:
        call_id = f"call_{uuid.uuid4().hex}"
        body = {
            "model": "m",
            "created": int(time.time() * 1000) - int(uuid.uuid4().int % 5000),
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function"}]},
                {"role": "tool", "tool_call_id": call_id, "content": "4"},
            ],
        }
        return httpx2.post(f"{url}/v1/chat/completions", json=body, headers=AUTH).status_code

    match = {"volatile": ["hex_id", "epoch_ms"]}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once", match=match):
        ask(provider.url)
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", match=match):
        assert ask(provider.url) == 200
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        ask(provider.url)
    assert "body.messages[0].tool_calls[0].id" in str(caught.value)
