"""openai's ``AzureOpenAI`` (sync, async, streamed) records against the local provider's Azure
deployment and replays offline.

Azure puts the deployment in the path and the API version in the query, authenticates with an
``api-key`` header or a Microsoft Entra ID token, and starts every stream with a chunk that
has no choices (its prompt-filter verdict).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import llmcassette
from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay, stored_events

openai = pytest.importorskip("openai")

# openai 3.x lets the mismatch through; openai 2.x, which would retry it, gets a response
# that says not to and holds the report (its APIStatusError, status 460).
MISMATCH = (llmcassette.CassetteMismatch, openai.APIStatusError)

DEPLOYMENT = "gpt-4o-prod"
API_VERSION = "2024-10-21"
MESSAGES: Any = [{"role": "user", "content": "Which clients can replay Azure?"}]
ANSWER = "You said: Which clients can replay Azure?"
# Azure keys have no prefix a scanner could spot: the header they travel in gives them away.
API_KEY = "7f3c9a2e5b8d4f1a" * 2
# An Entra ID access token is a JWT.
ENTRA_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2duaXRpdmUifQ.c2lnbmF0dXJlLWxvY2Fs"


def _client(provider: LocalProvider, **auth: str) -> Any:
    auth = auth or {"api_key": API_KEY}
    return openai.AzureOpenAI(
        azure_endpoint=provider.azure_endpoint, api_version=API_VERSION, max_retries=0, **auth
    )


def test_chat_and_stream(tmp_path: Path) -> None:
    def call(provider: LocalProvider) -> tuple[str, list[Any]]:
        client = _client(provider)
        whole = client.chat.completions.create(model=DEPLOYMENT, messages=MESSAGES)
        stream = client.chat.completions.create(model=DEPLOYMENT, messages=MESSAGES, stream=True)
        return whole.choices[0].message.content, [chunk.model_dump() for chunk in stream]

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    assert replayed[0] == ANSWER
    chunks = replayed[1]
    # Azure's first chunk is the prompt-filter verdict, with no choices.
    assert chunks[0]["choices"] == []
    assert chunks[0]["prompt_filter_results"]
    text = "".join(c["choices"][0]["delta"]["content"] or "" for c in chunks if c["choices"])
    assert text == ANSWER
    assert len(chunks) == len(stored_events(cassette)[0]) - 1  # all but [DONE]
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    requests = [line for line in lines if line.get("type") == "request"]
    endpoint = f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={API_VERSION}"
    assert [request["uri"].endswith(endpoint) for request in requests] == [True, True]
    assert requests[0]["headers"]["api-key"] == "<REDACTED:api-key>"
    assert API_KEY not in cassette.read_text()


def test_async_stream(tmp_path: Path) -> None:
    async def deltas(provider: LocalProvider) -> list[str]:
        client = openai.AsyncAzureOpenAI(
            azure_endpoint=provider.azure_endpoint,
            api_version=API_VERSION,
            api_key=API_KEY,
            max_retries=0,
        )
        stream = await client.chat.completions.create(
            model=DEPLOYMENT, messages=MESSAGES, stream=True
        )
        return [c.choices[0].delta.content or "" async for c in stream if c.choices]

    recorded, replayed, cassette = record_then_replay(tmp_path, lambda p: asyncio.run(deltas(p)))
    assert replayed == recorded
    assert "".join(replayed) == ANSWER
    assert API_KEY not in cassette.read_text()


def test_an_entra_id_token_is_redacted_and_another_one_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "azure.jsonl"
    with (
        LocalProvider() as provider,
        llmcassette.use_cassette(str(cassette), record_mode="all"),
    ):
        live = _client(provider, azure_ad_token=ENTRA_TOKEN).chat.completions.create(
            model=DEPLOYMENT, messages=MESSAGES
        )
    stored = cassette.read_text()
    assert ENTRA_TOKEN not in stored
    assert '"Bearer <REDACTED:' in stored
    # A fresh token every run (as Entra ID issues them), or a key instead: the same answer.
    with llmcassette.use_cassette(str(cassette), record_mode="none"):
        replayed = _client(provider, azure_ad_token=ENTRA_TOKEN[::-1]).chat.completions.create(
            model=DEPLOYMENT, messages=MESSAGES
        )
    assert replayed.choices[0].message.content == live.choices[0].message.content == ANSWER


def test_another_api_version_is_a_mismatch_naming_it(tmp_path: Path) -> None:
    cassette = tmp_path / "azure.jsonl"
    with (
        LocalProvider() as provider,
        llmcassette.use_cassette(str(cassette), record_mode="all"),
    ):
        _client(provider).chat.completions.create(model=DEPLOYMENT, messages=MESSAGES)
    newer = openai.AzureOpenAI(
        azure_endpoint=provider.azure_endpoint,
        api_version="2025-04-01-preview",
        api_key=API_KEY,
        max_retries=0,
    )
    with (
        llmcassette.use_cassette(str(cassette), record_mode="none"),
        pytest.raises(MISMATCH) as caught,
    ):
        newer.chat.completions.create(model=DEPLOYMENT, messages=MESSAGES)
    assert "url.query.api-version[0]: recorded '2024-10-21', incoming '2025-04-01-preview'" in str(
        caught.value
    )


def test_the_local_provider_answers_like_azure() -> None:
    with LocalProvider() as provider:
        bare = openai.AzureOpenAI(
            azure_endpoint=provider.azure_endpoint,
            api_version=API_VERSION,
            api_key="placeholder",
            max_retries=0,
        )
        whole = bare.chat.completions.create(model=DEPLOYMENT, messages=MESSAGES)
        assert whole.model_dump()["prompt_filter_results"][0]["prompt_index"] == 0
        assert whole.choices[0].model_dump()["content_filter_results"]["hate"]["filtered"] is False
        # No key and no token: Azure's 401.
        endpoint = f"/openai/deployments/{DEPLOYMENT}/chat/completions"
        url = f"{provider.azure_endpoint}{endpoint}?api-version={API_VERSION}"
        denied = httpx.post(url, json={"messages": MESSAGES})
        assert denied.status_code == 401
        assert denied.json()["error"]["message"].startswith("Access denied")
        # No api-version: Azure's 404.
        assert httpx.post(url.split("?")[0], headers={"api-key": "k"}, json={}).status_code == 404


def test_langchain_azure_chat_openai(tmp_path: Path) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")

    def call(provider: LocalProvider) -> tuple[Any, str]:
        model = langchain_openai.AzureChatOpenAI(
            azure_endpoint=provider.azure_endpoint,
            azure_deployment=DEPLOYMENT,
            api_version=API_VERSION,
            api_key=API_KEY,
            max_retries=0,
        )
        prompt = MESSAGES[0]["content"]
        return model.invoke(prompt).content, "".join(str(c.content) for c in model.stream(prompt))

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded == (ANSWER, ANSWER)
    assert API_KEY not in cassette.read_text()


def test_pydantic_ai_azure_provider(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.azure import AzureProvider

    def call(provider: LocalProvider) -> str:
        azure = AzureProvider(
            azure_endpoint=provider.azure_endpoint, api_version=API_VERSION, api_key=API_KEY
        )
        agent = Agent(OpenAIChatModel(DEPLOYMENT, provider=azure))
        return str(agent.run_sync(MESSAGES[0]["content"]).output)

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded == ANSWER
    assert API_KEY not in cassette.read_text()
