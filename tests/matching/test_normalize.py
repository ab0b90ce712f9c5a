"""What matching leaves out: ignored paths, volatile values, host aliases, normalizers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

import llmcassette
from llmcassette.errors import ConfigError
from llmcassette.matching.normalize import MatchConfig, parse_path
from llmcassette.testing import LocalProvider

AUTH = {"authorization": "Bearer sk-test"}


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def chat(url: str, **extra: Any) -> int:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi", "id": "m-1"}], **extra}
    return httpx2.post(f"{url}/v1/chat/completions", json=body, headers=AUTH).status_code


@pytest.mark.parametrize(
    ("path", "tokens"),
    [
        ("$.metadata.request_id", ("metadata", "request_id")),
        ("$.messages[*].id", ("messages", "*", "id")),
        ("body.messages[2].content", ("messages", 2, "content")),
        ('$["odd key"].x', ("odd key", "x")),
        ("metadata.request_id", ("metadata", "request_id")),
    ],
)
def test_paths(path: str, tokens: tuple[Any, ...]) -> None:
    assert parse_path(path) == tokens


@pytest.mark.parametrize("bad", ["$.a[", "$..a", "$.a[x]"])
def test_bad_paths_and_options_are_reported(bad: str) -> None:
    with pytest.raises(ConfigError, match="cannot read the JSON path"):
        MatchConfig(ignore=(bad,))
    with pytest.raises(ConfigError, match="unknown volatile shape"):
        MatchConfig(volatile=("phase-of-moon",))
    with pytest.raises(ConfigError, match="must be an origin"):
        MatchConfig.from_options({"hosts": {"localhost:4000": "https://api.openai.com"}})
    with pytest.raises(ConfigError, match="unknown match option"):
        MatchConfig.from_options({"ignores": []})


def test_ignored_paths_do_not_count(tmp_path: Path, provider: LocalProvider) -> None:
    match = {"ignore": ["$.metadata.request_id", "$.messages[*].id"]}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once", match=match):
        chat(provider.url, metadata={"request_id": "r-1", "team": "a"})
    provider.stop()
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi", "id": "m-2"}],
        "metadata": {"request_id": "r-2", "team": "a"},
    }
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", match=match):
        assert httpx2.post(
            f"{provider.url}/v1/chat/completions", json=body, headers=AUTH
        ).is_success
    # A field that is not ignored still counts, and the report names it.
    body["metadata"] = {"request_id": "r-3", "team": "b"}
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="none", match=match),
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        httpx2.post(f"{provider.url}/v1/chat/completions", json=body, headers=AUTH)
    assert [d.path for d in caught.value.differences] == ["body.metadata.team"]


def test_volatile_values_are_matched_by_shape(tmp_path: Path, provider: LocalProvider) -> None:
    def ask(url: str) -> int:
        prompt = f"trace {uuid.uuid4()} at 2026-12-01T05:40:{uuid.uuid4().int % 60:02d}Z"
        body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
        return httpx2.post(f"{url}/v1/chat/completions", json=body, headers=AUTH).status_code

    match = {"volatile": ["uuid", "timestamp"]}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once", match=match):
        ask(provider.url)
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", match=match):
        assert ask(provider.url) == 200
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch),
    ):
        ask(provider.url)


def test_a_cassette_recorded_against_one_host_replays_against_another(
    tmp_path: Path, provider: LocalProvider
) -> None:
    recorded_at = {"hosts": {provider.url: "https://api.example.com"}}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once", match=recorded_at):
        chat(provider.url)
    provider.stop()
    assert (
        '"uri":"https://api.example.com/v1/chat/completions"' in (tmp_path / "c.jsonl").read_text()
    )
    replayed_at = {"hosts": {"http://localhost:4000": "https://api.example.com"}}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", match=replayed_at):
        assert chat("http://localhost:4000") == 200


def test_recording_again_under_host_aliases_leaves_the_cassette_byte_identical(
    tmp_path: Path,
) -> None:
    # Two runs of a deterministic server on two ports: the stored URL and host header are
    # the canonical origin's, so nothing in the cassette changes.
    texts = []
    for mode in ("once", "all"):
        with LocalProvider() as live:
            aliases = {"hosts": {live.url: "https://api.example.com"}}
            with llmcassette.use_cassette(tmp_path / "c", record_mode=mode, match=aliases):
                assert chat(live.url) == 200
        texts.append((tmp_path / "c.jsonl").read_text())
    assert '"host":"api.example.com"' in texts[0]
    assert texts[0] == texts[1]


def test_custom_normalizers(tmp_path: Path, provider: LocalProvider) -> None:
    def without_user(body: Any) -> Any:
        return {k: v for k, v in body.items() if k != "user"} if isinstance(body, dict) else body

    match = {"normalizers": [without_user]}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once", match=match):
        chat(provider.url, user="alice")
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", match=match):
        assert chat(provider.url, user="bob") == 200


def test_the_index_answers_each_request_with_its_own_recording(
    tmp_path: Path, provider: LocalProvider
) -> None:
    prompts = ["first", "second", "third"]

    def ask(prompt: str) -> str:
        body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
        response = httpx2.post(f"{provider.url}/v1/chat/completions", json=body, headers=AUTH)
        return str(response.json()["choices"][0]["message"]["content"])

    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        live = {prompt: ask(prompt) for prompt in prompts}
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", allow_playback_repeats=True):
        for prompt in reversed(prompts):
            assert ask(prompt) == live[prompt]
        with pytest.raises(llmcassette.CassetteMismatch):
            ask("fourth")
