"""One cassette, many clients: recorded through an SDK, replayed by raw HTTP clients.

The body is compared as JSON and headers are not matched, so a raw client asking the same
thing gets the SDK's recording, whatever its key order, spacing or telemetry headers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import httpx
import httpx2
import openai
import pytest
import requests

import llmcassette
from llmcassette.testing import LocalProvider

OPENAI_BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi there"}]}
ANTHROPIC_BODY = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Hi there"}],
}


def sse_text(lines: list[str], pick: Callable[[dict[str, Any]], str]) -> str:
    out = []
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(pick(json.loads(line[6:])))
    return "".join(out)


def openai_delta(event: dict[str, Any]) -> str:
    return str(event["choices"][0]["delta"].get("content") or "") if event["choices"] else ""


def anthropic_delta(event: dict[str, Any]) -> str:
    return (
        str(event.get("delta", {}).get("text", ""))
        if event["type"] == "content_block_delta"
        else ""
    )


async def raw_lines(
    client: str, url: str, body: dict[str, Any], headers: dict[str, str]
) -> list[str]:
    """POST ``body`` (with keys in another order than the SDK's) and read the SSE lines."""
    body = dict(reversed(list(body.items())))
    if client in ("httpx", "httpx2"):
        library: Any = httpx if client == "httpx" else httpx2
        with library.Client() as http, http.stream("POST", url, json=body, headers=headers) as r:
            return list(r.iter_lines())
    if client in ("async-httpx", "async-httpx2"):
        library = httpx if client == "async-httpx" else httpx2
        async with (
            library.AsyncClient() as http,
            http.stream("POST", url, json=body, headers=headers) as response,
        ):
            return [line async for line in response.aiter_lines()]
    if client == "requests":
        with requests.post(url, json=body, headers=headers, stream=True, timeout=5) as response:
            return [line.decode() for line in response.iter_lines()]
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers) as response,
    ):
        return [line.decode().rstrip("\n") async for line in response.content]


CLIENTS = ["httpx", "httpx2", "async-httpx", "async-httpx2", "requests", "aiohttp"]


@pytest.mark.parametrize("client", CLIENTS)
async def test_openai_sdk_recording_replays_for_raw_clients(tmp_path: Path, client: str) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        sdk = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0)
        with sdk:
            stream = sdk.chat.completions.create(**OPENAI_BODY, stream=True)  # type: ignore[call-overload]
            recorded = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        url = f"{provider.openai_base_url}/chat/completions"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        lines = await raw_lines(
            client, url, {**OPENAI_BODY, "stream": True}, {"authorization": "Bearer sk-other"}
        )
    assert sse_text(lines, openai_delta) == recorded == "You said: Hi there"


@pytest.mark.parametrize("client", CLIENTS)
async def test_anthropic_sdk_recording_replays_for_raw_clients(tmp_path: Path, client: str) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        sdk = anthropic.Anthropic(
            base_url=provider.anthropic_base_url, api_key="sk-ant-test", max_retries=0
        )
        with sdk, sdk.messages.stream(**ANTHROPIC_BODY) as stream:  # type: ignore[arg-type]
            recorded = "".join(stream.text_stream)
        url = f"{provider.anthropic_base_url}/v1/messages"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        lines = await raw_lines(
            client,
            url,
            {**ANTHROPIC_BODY, "stream": True},
            {"x-api-key": "sk-ant-other", "anthropic-version": "2023-06-01"},
        )
    assert sse_text(lines, anthropic_delta) == recorded == "You said: Hi there"


async def test_raw_recording_replays_for_the_async_openai_sdk(tmp_path: Path) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        url = f"{provider.openai_base_url}/chat/completions"
        httpx.post(url, json={**OPENAI_BODY, "stream": True}, headers={"authorization": "Bearer k"})
        base_url = provider.openai_base_url
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-x", max_retries=0) as sdk:
            stream = await sdk.chat.completions.create(**OPENAI_BODY, stream=True)  # type: ignore[call-overload]
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "You said: Hi there"
