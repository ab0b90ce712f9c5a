"""``llmcassette.use_cassette`` and ``llmcassette.configure`` outside pytest-recording."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import vcr

import llmcassette
from llmcassette.testing import LocalProvider

PROMPT = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
AUTH = {"authorization": "Bearer sk-test"}


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def ask(url: str) -> str:
    response = httpx2.post(f"{url}/v1/chat/completions", json=PROMPT, headers=AUTH)
    return str(response.json()["choices"][0]["message"]["content"])


def ask_and_stop(provider: LocalProvider) -> str:
    answer = ask(provider.url)
    provider.stop()
    return answer


def test_context_manager_adds_the_jsonl_suffix(tmp_path: Path, provider: LocalProvider) -> None:
    with llmcassette.use_cassette(tmp_path / "chat", record_mode="once"):
        live = ask_and_stop(provider)
    assert (tmp_path / "chat.jsonl").exists()
    with llmcassette.use_cassette(tmp_path / "chat", record_mode="none"):
        assert ask(provider.url) == live


def test_decorator_on_a_sync_function(tmp_path: Path, provider: LocalProvider) -> None:
    @llmcassette.use_cassette(str(tmp_path / "sync.jsonl"), record_mode="once")
    def call() -> str:
        return ask(provider.url)

    live = call()
    provider.stop()
    assert call() == live
    assert len((tmp_path / "sync.jsonl").read_text().splitlines()) == 4


async def test_decorator_on_an_async_function(tmp_path: Path, provider: LocalProvider) -> None:
    @llmcassette.use_cassette(str(tmp_path / "async.jsonl"), record_mode="once")
    async def call() -> str:
        async with httpx2.AsyncClient() as client:
            response = await client.post(
                f"{provider.url}/v1/chat/completions", json=PROMPT, headers=AUTH
            )
        return str(response.json()["choices"][0]["message"]["content"])

    live = await call()
    provider.stop()
    assert await call() == live


def test_bare_decorator_names_the_cassette_after_the_function(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # The cassette goes next to the module that defines the function: a module in tmp_path,
    # so the test writes nothing into the repository.
    (tmp_path / "decorated.py").write_text(
        "import httpx2\n"
        "import llmcassette\n\n\n"
        "@llmcassette.use_cassette\n"
        "def named_after_me(url, headers):\n"
        "    return httpx2.get(f'{url}/v1/models', headers=headers).status_code\n"
    )
    spec = importlib.util.spec_from_file_location("decorated", tmp_path / "decorated.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.named_after_me(provider.url, AUTH) == 200
    assert (tmp_path / "named_after_me.jsonl").exists()


def test_configure_installs_llmcassette_on_a_users_vcr(
    tmp_path: Path, provider: LocalProvider
) -> None:
    my_vcr = llmcassette.configure(vcr.VCR(cassette_library_dir=str(tmp_path)))
    with my_vcr.use_cassette("mine.jsonl"):
        live = ask_and_stop(provider)
    header = json.loads((tmp_path / "mine.jsonl").read_text().splitlines()[0])
    assert header["format"] == "llmcassette"
    with my_vcr.use_cassette("mine.jsonl", record_mode="none"):
        assert ask(provider.url) == live


def test_configure_keeps_other_serializers_working(tmp_path: Path, provider: LocalProvider) -> None:
    my_vcr = llmcassette.configure(vcr.VCR(cassette_library_dir=str(tmp_path)))
    with my_vcr.use_cassette("plain.yaml", serializer="yaml"):
        ask_and_stop(provider)
    assert "interactions:" in (tmp_path / "plain.yaml").read_text()
    with my_vcr.use_cassette("plain.yaml", serializer="yaml", record_mode="none"):
        ask(provider.url)


def test_a_changed_body_is_not_replayed(tmp_path: Path, provider: LocalProvider) -> None:
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        ask_and_stop(provider)
    changed = {**PROMPT, "temperature": 0.5}
    with (
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
        pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException) as caught,
    ):
        httpx2.post(f"{provider.url}/v1/chat/completions", json=changed, headers=AUTH)
    assert "body.temperature: recorded (absent), incoming 0.5" in str(caught.value)


def test_json_key_order_and_number_spelling_do_not_matter(
    tmp_path: Path, provider: LocalProvider
) -> None:
    body = b'{"model": "m", "temperature": 1, "messages": [{"role": "user", "content": "ping"}]}'
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        url = f"{provider.url}/v1/chat/completions"
        live = httpx2.post(url, content=body, headers={**AUTH, "content-type": "application/json"})
        provider.stop()
    reordered = b'{"messages":[{"content":"ping","role":"user"}],"temperature":1.0,"model":"m"}'
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replay = httpx2.post(
            url, content=reordered, headers={**AUTH, "content-type": "application/json"}
        )
    assert replay.json() == live.json()


def test_placeholder_numbers_do_not_count_in_matching(tmp_path: Path) -> None:
    from llmcassette.matching.canonical import body_value

    recorded = b'{"q": "use <REDACTED:openai-api-key:2> here"}'
    incoming = b'{"q": "use <REDACTED:openai-api-key> here"}'
    assert body_value(recorded, "application/json") == body_value(incoming, "application/json")
    assert body_value(b'{"q": "<REDACTED:a:2>"}') != body_value(b'{"q": "<REDACTED:b>"}')
