"""Messages name a cassette relative to the current directory when it is under it, as
pytest names files, and by its absolute path otherwise; the error's fields keep the path."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette.errors import UnusedInteractionsError, shown_path
from llmcassette.testing import LocalProvider

AUTH = {"authorization": "Bearer sk-local"}


def _chat(word: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": word}]}


def test_shown_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    inside = os.fspath(tmp_path / "cassettes" / "c.jsonl")
    assert shown_path(inside) == os.path.join("cassettes", "c.jsonl")
    assert shown_path(os.fspath(tmp_path.parent / "c.jsonl")) == os.fspath(
        tmp_path.parent / "c.jsonl"
    )
    assert shown_path(os.path.join("cassettes", "c.jsonl")) == os.path.join("cassettes", "c.jsonl")
    assert shown_path(os.fspath(tmp_path)) == os.fspath(tmp_path)
    # A sibling folder whose name starts like the current one is not under it.
    sibling = os.fspath(tmp_path) + "-other" + os.sep + "c.jsonl"
    assert shown_path(sibling) == sibling
    # Given the directory, no system call: the same answer.
    assert shown_path(inside, os.fspath(tmp_path)) == os.path.join("cassettes", "c.jsonl")


def _record(provider: LocalProvider, path: Path) -> None:
    with llmcassette.use_cassette(path), httpx.Client(headers=AUTH) as client:
        client.post(f"{provider.openai_base_url}/chat/completions", json=_chat("first"))


def test_a_mismatch_names_the_cassette_under_the_current_directory_relatively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: LocalProvider
) -> None:
    path = tmp_path / "cassettes" / "c.jsonl"
    _record(provider, path)
    monkeypatch.chdir(tmp_path)
    with (
        pytest.raises(llmcassette.CassetteMismatch) as raised,
        llmcassette.use_cassette(path, record_mode="none"),
        httpx.Client(headers=AUTH) as client,
    ):
        client.post(f"{provider.openai_base_url}/chat/completions", json=_chat("other"))
    message = str(raised.value)
    assert f"cassette: {os.path.join('cassettes', 'c.jsonl')} (1 interaction" in message
    assert os.fspath(tmp_path) not in message
    assert raised.value.to_dict()["file"] == os.fspath(path)  # the field keeps the path


def test_a_cassette_outside_the_current_directory_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: LocalProvider
) -> None:
    path = tmp_path / "cassettes" / "c.jsonl"
    _record(provider, path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with (
        pytest.raises(UnusedInteractionsError) as raised,
        llmcassette.use_cassette(path, record_mode="none"),
    ):
        pass
    assert f"recorded in {path} was not played" in str(raised.value)


def test_unused_interactions_and_warnings_name_the_cassette_relatively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: LocalProvider
) -> None:
    path = tmp_path / "cassettes" / "c.jsonl"
    _record(provider, path)
    monkeypatch.chdir(tmp_path)
    shown = os.path.join("cassettes", "c.jsonl")
    with (
        pytest.raises(UnusedInteractionsError) as raised,
        llmcassette.use_cassette(path, record_mode="none"),
    ):
        pass
    assert f"the 1 interaction recorded in {shown} was not played" in str(raised.value)
    assert raised.value.path == os.fspath(path)
    provider.queue_error(429)
    with (
        pytest.warns(llmcassette.ErrorResponseNotRecordedWarning) as warned,
        llmcassette.use_cassette(tmp_path / "cassettes" / "new", record_mode="once"),
        httpx.Client(headers=AUTH) as client,
    ):
        client.post(f"{provider.openai_base_url}/chat/completions", json=_chat("x"))
    assert str(warned[0].message).startswith(os.path.join("cassettes", "new.jsonl") + ":")
