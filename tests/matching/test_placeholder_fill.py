"""A secret the cassette learnt from another call: its placeholder matches the live value.

Redaction replaces a credential everywhere in a cassette once any call names it: a
password a later tool call sends under ``password`` is also taken out of the earlier
prompt that mentioned it. Replay redacts each live request on its own, so the earlier
request arrives with the value itself; a recorded placeholder must accept it (found on
Mirascope's cassettes, whose tool tests send passwords).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

import llmcassette
from llmcassette.matching.canonical import fills_placeholders
from llmcassette.testing import LocalProvider

AUTH = {"authorization": "Bearer sk-test"}
PLACEHOLDER = "<REDACTED:password>"


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def ask(url: str, prompt: str) -> int:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    return httpx2.post(f"{url}/v1/chat/completions", json=body, headers=AUTH).status_code


def look_up(url: str, password: str) -> int:
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}], "password": password}
    return httpx2.post(f"{url}/v1/chat/completions", json=body, headers=AUTH).status_code


def test_a_prompt_holding_a_password_a_later_call_sends_replays(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "tools.jsonl"
    with llmcassette.use_cassette(path, record_mode="once"):
        assert ask(provider.url, "the passwords: mellon, radiance-gate") == 200
        assert look_up(provider.url, "radiance-gate") == 200
    text = path.read_text()
    assert "radiance-gate" not in text
    assert f"the passwords: mellon, {PLACEHOLDER}" in text  # taken out of the prompt too
    with llmcassette.use_cassette(path, record_mode="none"):
        assert ask(provider.url, "the passwords: mellon, radiance-gate") == 200
        assert look_up(provider.url, "radiance-gate") == 200
    # The placeholder stands for a value; the rest of the prompt is still matched.
    with (
        llmcassette.use_cassette(path, record_mode="none", allow_unused=True),
        pytest.raises(llmcassette.CassetteMismatch, match="mellon"),
    ):
        ask(provider.url, "the passwords: gandalf, radiance-gate")


def test_a_suite_matching_on_vcrpys_body_replays_it_too(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "tools.jsonl"
    options = {"match_on": ["method", "uri", "body"]}  # Mirascope's
    with llmcassette.use_cassette(path, record_mode="once", **options):
        assert ask(provider.url, "the passwords: mellon, radiance-gate") == 200
        assert look_up(provider.url, "radiance-gate") == 200
    with llmcassette.use_cassette(path, record_mode="none", **options):
        assert ask(provider.url, "the passwords: mellon, radiance-gate") == 200
        assert look_up(provider.url, "radiance-gate") == 200
    with (
        llmcassette.use_cassette(path, record_mode="none", allow_unused=True, **options),
        pytest.raises(llmcassette.CassetteMismatch),
    ):
        ask(provider.url, "the passwords: gandalf, radiance-gate")


TEXT = st.text(alphabet="ab<>:", max_size=8)


@given(st.lists(TEXT, min_size=2, max_size=4), st.text(alphabet="ab<>:xy", max_size=20))
def test_fill_is_a_wildcard_of_one_or_more_characters(literals: list[str], incoming: str) -> None:
    recorded = PLACEHOLDER.join(literals)
    plain = "(?s)" + "(.+)".join(re.escape(literal) for literal in literals)
    assert fills_placeholders(recorded, incoming) == bool(re.fullmatch(plain, incoming))


def test_text_without_placeholders_fills_nothing() -> None:
    assert not fills_placeholders("mellon", "mellon2")
    assert fills_placeholders("x<REDACTED:openai-api-key:2>y", "xsk-1y")
