"""OpenAI Agents SDK runs record against the local provider and replay with it stopped.

A tool-using agent runs through the Responses API (``Runner.run_sync`` and
``Runner.run_streamed``): one request answered with the tool call, one with its result.
On api.openai.com, where users record, the SDK adds a ``prompt_cache_key`` it makes up for
every run (``agents-sdk:run:<id>``); matching leaves it out by default (``sdk_defaults``),
or no recording of an agent would ever replay. The model here says it is on
api.openai.com, as the SDK decides from the client's base URL.

Runs in the ``frameworks`` nox session; skipped where openai-agents is missing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import llmcassette
from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay

agents = pytest.importorskip("agents")
from agents.models.openai_responses import OpenAIResponsesModel  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

KEY = "sk-proj-agents-0123456789abcdefghijklmn"
QUESTION = "Paris"


class OnApiOpenAiCom(OpenAIResponsesModel):  # type: ignore[misc]
    """The SDK's Responses model, pointed at the local provider but treated as on
    api.openai.com, where the SDK sends its per-run ``prompt_cache_key``."""

    def _supports_default_prompt_cache_key(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_trace_upload() -> Any:
    # The SDK uploads traces to api.openai.com from a thread of its own (docs/recipes.md).
    agents.set_tracing_disabled(True)
    yield
    agents.set_tracing_disabled(False)


def weather_agent(url: str, calls: list[str]) -> Any:
    @agents.function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    client = AsyncOpenAI(base_url=f"{url}/v1", api_key=KEY)
    model = OnApiOpenAiCom(model="gpt-4o-mini", openai_client=client)
    return agents.Agent(
        name="weather", instructions="Answer briefly.", tools=[weather], model=model
    )


def run_sync(provider: LocalProvider) -> tuple[list[str], str]:
    return run_sync_at(provider.url)


def run_sync_at(url: str) -> tuple[list[str], str]:
    calls: list[str] = []
    result = agents.Runner.run_sync(weather_agent(url, calls), QUESTION)
    return calls, result.final_output


def run_streamed(provider: LocalProvider) -> tuple[list[str], list[str], str]:
    async def run() -> tuple[list[str], list[str], str]:
        calls: list[str] = []
        result = agents.Runner.run_streamed(weather_agent(provider.url, calls), QUESTION)
        deltas = [
            event.data.delta
            async for event in result.stream_events()
            if event.type == "raw_response_event"
            and event.data.type == "response.output_text.delta"
        ]
        return calls, deltas, result.final_output

    return asyncio.run(run())


def cache_keys(cassette: Path) -> list[str]:
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    bodies = [line["body"]["json"] for line in lines if line.get("type") == "request"]
    return [body["prompt_cache_key"] for body in bodies]


def test_run_sync_replays(tmp_path: Path) -> None:
    recorded, replayed, cassette = record_then_replay(tmp_path, run_sync)
    assert replayed == recorded
    calls, output = replayed
    assert calls == ["Paris"]
    assert output == "The tool returned: sunny in Paris"
    keys = cache_keys(cassette)
    assert len(keys) == 2, "the tool call, then its result"
    assert keys[0] == keys[1], "one key for the whole run"
    assert keys[0].startswith("agents-sdk:run:")
    assert KEY not in cassette.read_text()


def test_run_streamed_replays_its_deltas(tmp_path: Path) -> None:
    recorded, replayed, cassette = record_then_replay(tmp_path, run_streamed)
    assert replayed == recorded
    calls, deltas, output = replayed
    assert calls == ["Paris"]
    assert len(deltas) > 1
    assert "".join(deltas) == output
    assert len(cache_keys(cassette)) == 2


def test_without_the_sdk_defaults_each_run_is_a_mismatch(tmp_path: Path) -> None:
    """The key differs from run to run: what ``sdk_defaults`` is there for."""
    _, _, cassette = record_then_replay(tmp_path, run_sync)
    first = json.loads(cassette.read_text().splitlines()[1])
    url = first["uri"].split("/v1/")[0]  # the stopped provider's
    with (
        llmcassette.use_cassette(cassette, record_mode="none", match={"sdk_defaults": False}),
        pytest.raises(llmcassette.CassetteMismatch, match=r"body\.prompt_cache_key: recorded"),
    ):
        run_sync_at(url)
