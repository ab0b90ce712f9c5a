"""Google ADK agents record against the local provider and replay with it stopped.

An ADK ``Agent`` with a function tool runs through google-genai to Gemini: one request
answered with the function call, one with its result. ADK invents an id for each function
call (``adk-`` and a UUID) and keeps it out of what it sends Gemini, so a recording replays
with no matching option. Run plainly and with server-sent events (``StreamingMode.SSE``,
``streamGenerateContent``).

Runs in the ``frameworks`` nox session; skipped where google-adk is missing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay

pytest.importorskip("google.adk")
from google.adk.agents import Agent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.runners import InMemoryRunner
from google.genai import types

KEY = "AIzaSyD-adk-test-key-0000000000000000000"


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def run_agent(provider: LocalProvider, streaming: StreamingMode) -> list[Any]:
    """What the agent's events carried: texts, function calls and their responses."""

    async def run() -> list[Any]:
        agent = Agent(
            name="weather",
            model="gemini-2.0-flash",
            instruction="Answer with the weather tool.",
            tools=[weather],
        )
        runner = InMemoryRunner(agent=agent, app_name="app")
        session = await runner.session_service.create_session(app_name="app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="Paris")])
        seen: list[Any] = []
        async for event in runner.run_async(
            user_id="u",
            session_id=session.id,
            new_message=message,
            run_config=RunConfig(streaming_mode=streaming),
        ):
            for part in (event.content.parts or []) if event.content else []:
                if part.function_call:
                    seen.append(("call", part.function_call.name, part.function_call.args))
                elif part.function_response:
                    seen.append(("result", part.function_response.response))
                elif part.text:
                    seen.append(("text", part.text, bool(event.partial)))
        return seen

    return asyncio.run(run())


@pytest.fixture
def gemini_at_local_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)


@pytest.mark.usefixtures("gemini_at_local_provider")
@pytest.mark.parametrize("streaming", [StreamingMode.NONE, StreamingMode.SSE])
def test_an_agent_run_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streaming: StreamingMode
) -> None:
    def call(provider: LocalProvider) -> list[Any]:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", provider.url)
        return run_agent(provider, streaming)

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    assert ("call", "weather", {"city": "Paris"}) in replayed
    assert ("result", {"result": "sunny in Paris"}) in replayed
    texts = [(text, partial) for kind, text, partial in (i for i in replayed if i[0] == "text")]
    assert texts[-1] == ('The tool returned: {"result":"sunny in Paris"}', False)
    if streaming == StreamingMode.SSE:  # one partial event per recorded text delta
        assert "".join(text for text, partial in texts if partial) == texts[-1][0]
        assert len(texts) > 3
    requests = [json.loads(line) for line in cassette.read_text().splitlines()[1:]]
    uris = [line["uri"] for line in requests if line.get("type") == "request"]
    verb = "streamGenerateContent?alt=sse" if streaming == StreamingMode.SSE else "generateContent"
    assert len(uris) == 2
    assert all(uri.endswith(f"gemini-2.0-flash:{verb}") for uri in uris)
    assert KEY not in cassette.read_text()
