"""pydantic-ai agents record through ``@pytest.mark.vcr`` and replay with the provider stopped.

A tool-using agent (one ``@agent.tool_plain`` function) runs against OpenAI Chat Completions
(``OpenAIChatModel``), Anthropic Messages (``AnthropicModel``) and Gemini (``GoogleModel``), all
pointed at a LocalProvider, with ``run_sync`` and with ``run_stream``: a whole pytest run of a
project's test module records (``--record-mode=once``), the provider stops, and a second run
replays (``--record-mode=none``; both runs in this process), so a request the cassettes do not
answer fails to connect.
Each agent test writes down what it saw (the tool's arguments, the output, the streamed text
deltas); both runs must have seen the same, and that must be what the cassette holds.

Runs in the ``frameworks`` nox session; skipped where pydantic-ai (or an extra) is missing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from llmcassette.cli.main import main
from llmcassette.testing import LocalProvider

# The model classes import their SDKs (pydantic-ai's extras). Imported here, before the
# in-process pytest runs: pytester forgets the modules first imported during a test.
for _model in ("openai", "anthropic", "google"):
    pytest.importorskip(f"pydantic_ai.models.{_model}")

PROVIDERS = ("openai", "anthropic", "google")
TESTS = [f"{run}[{name}]" for run in ("test_run_sync", "test_run_stream") for name in PROVIDERS]
KEYS = {
    "openai": "sk-proj-agent-0123456789abcdefghij",
    "anthropic": "sk-ant-api03-agent-0123456789",
}
GEMINI_KEY = "AIzaSyD-agent-test-key-00000000000000"
# The project's pytest runs: in this process (pydantic-ai is imported once), without the
# plugins they do not use.
RUN = ("-p", "no:cacheprovider", "-p", "no:asyncio")

AGENT_MODULE = f'''
import asyncio
import json
import os
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider

URL = os.environ["PROVIDER_URL"]
SEEN = Path(os.environ["SEEN_DIR"])
PROVIDERS = pytest.mark.parametrize("name", {list(PROVIDERS)!r})


def model(name):
    if name == "openai":
        provider = OpenAIProvider(base_url=URL + "/v1", api_key={KEYS["openai"]!r})
        return OpenAIChatModel("gpt-4o-mini", provider=provider)
    if name == "anthropic":
        provider = AnthropicProvider(base_url=URL, api_key={KEYS["anthropic"]!r})
        return AnthropicModel("claude-haiku-4-5", provider=provider)
    return GoogleModel(
        "gemini-2.0-flash", provider=GoogleProvider(base_url=URL, api_key={GEMINI_KEY!r})
    )


def weather_agent(name, calls):
    agent = Agent(model(name), retries=0)

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        calls.append({{"city": city}})
        return f"sunny in {{city}}"

    return agent


def write_down(test, name, **seen):
    (SEEN / f"{{test}}[{{name}}].json").write_text(json.dumps(seen))


@pytest.mark.vcr
@PROVIDERS
def test_run_sync(name):
    calls = []
    result = weather_agent(name, calls).run_sync("Paris")
    assert calls, "the agent did not call its tool"
    write_down("test_run_sync", name, calls=calls, output=result.output)


@pytest.mark.vcr
@PROVIDERS
def test_run_stream(name):
    calls = []

    async def run():
        async with weather_agent(name, calls).run_stream("Lyon") as stream:
            # debounce_by=None: one item per text delta the model client yields.
            deltas = [d async for d in stream.stream_text(delta=True, debounce_by=None)]
            return deltas, await stream.get_output()

    deltas, output = asyncio.run(run())
    assert calls, "the agent did not call its tool"
    write_down("test_run_stream", name, calls=calls, output=output, deltas=deltas)
'''

# pydantic-ai makes up the id of a Gemini function call (Gemini sends none), a new one on
# every run, and sends it back with the tool's result: matching leaves tool-call ids out.
CONFTEST = """
import os

import pytest


@pytest.fixture
def vcr_config():
    if os.environ.get("KEEP_TOOL_CALL_IDS") == "1":
        return {}
    return {"match": {"volatile": ["tool_call_id"]}}
"""


def _seen(folder: Path) -> dict[str, Any]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def _cassette(root: Path, test: str) -> Path:
    return root / "test_agents" / f"{test}.jsonl"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The project's cassettes, what its tests saw recording, and the (stopped) provider's URL."""
    return {"copy": tmp_path_factory.mktemp("recorded")}


@pytest.fixture
def project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, recording: dict[str, Any]
) -> pytest.Pytester:
    """The agents' test module, recorded once per module against a provider stopped since."""
    pytester.makepyfile(test_agents=AGENT_MODULE)
    pytester.makeconftest(CONFTEST)
    copy: Path = recording["copy"]
    if "url" not in recording:
        seen = copy / "seen"
        seen.mkdir()
        monkeypatch.setenv("SEEN_DIR", str(seen))
        with LocalProvider() as provider:
            monkeypatch.setenv("PROVIDER_URL", provider.url)
            result = pytester.runpytest_inprocess("--record-mode=once", *RUN)
            sent = len(provider.requests)
        result.assert_outcomes(passed=len(TESTS))
        # Each agent run is two requests: one answered with the tool call, one with its result.
        assert sent == 2 * len(TESTS)
        shutil.copytree(pytester.path / "cassettes", copy / "cassettes")
        recording.update(url=provider.url, seen=_seen(seen))
    else:
        shutil.copytree(copy / "cassettes", pytester.path / "cassettes")
    replayed = pytester.path / "seen"
    replayed.mkdir()
    monkeypatch.setenv("SEEN_DIR", str(replayed))
    monkeypatch.setenv("PROVIDER_URL", recording["url"])
    return pytester


def _show(cassette: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["show", "--json", str(cassette)]) == 0
    interactions: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["interactions"]
    return interactions


def _text_deltas(cassette: Path) -> list[str]:
    """The text pieces of the cassette's last stream, read from its event lines."""
    streams: list[list[str]] = []
    for line in cassette.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "response":
            streams.append([])
        data = entry.get("data")
        if entry.get("type") != "event" or not isinstance(data, dict):
            continue
        if data.get("type") == "content_block_delta":  # Anthropic
            streams[-1].append(data["delta"].get("text", ""))
        for choice in data.get("choices", []):  # OpenAI Chat Completions
            streams[-1].append(choice["delta"].get("content") or "")
        for candidate in data.get("candidates", []):  # Gemini
            streams[-1].extend(p.get("text", "") for p in candidate["content"]["parts"])
    return [piece for piece in streams[-1] if piece]


def test_agents_replay_with_the_provider_stopped(
    project: pytest.Pytester, recording: dict[str, Any]
) -> None:
    cassettes = project.path / "cassettes"
    before = {path.name: path.read_bytes() for path in cassettes.rglob("*.jsonl")}
    assert sorted(before) == sorted(f"{test}.jsonl" for test in TESTS)
    result = project.runpytest_inprocess("--record-mode=none", *RUN)
    result.assert_outcomes(passed=len(TESTS))
    replayed = _seen(project.path / "seen")
    assert sorted(replayed) == sorted(TESTS)
    for test in TESTS:
        assert replayed[test] == recording["seen"][test], test
    assert {path.name: path.read_bytes() for path in cassettes.rglob("*.jsonl")} == before


def test_the_tool_got_the_recorded_arguments_and_the_output_is_the_recorded_answer(
    project: pytest.Pytester, recording: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    for test in TESTS:
        seen = recording["seen"][test]
        cassette = _cassette(project.path / "cassettes", test)
        call, answer = _show(cassette, capsys)
        assert [json.loads(c["arguments"]) for c in call["answer"]["tool_calls"]] == seen["calls"]
        assert call["answer"]["text"] == ""
        assert answer["answer"]["tool_calls"] == []
        assert answer["answer"]["text"] == seen["output"], test
        # The second request carries the tool's result back.
        assert "sunny in" in cassette.read_text().split('"type":"request"')[2]
        if "stream" in test:
            # One delta reached the agent per recorded text event: none merged, none lost.
            assert seen["deltas"] == _text_deltas(cassette), test
            assert len(seen["deltas"]) > 1
            assert "".join(seen["deltas"]) == seen["output"]


def test_no_key_reaches_a_cassette(project: pytest.Pytester) -> None:
    text = "".join(path.read_text() for path in (project.path / "cassettes").rglob("*.jsonl"))
    for key in (*KEYS.values(), GEMINI_KEY):
        assert key not in text
    assert text.count("<REDACTED:") >= 2 * len(TESTS)


def test_gemini_agents_need_tool_call_ids_left_out_of_matching(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pydantic-ai's made-up Gemini call id differs on replay, and the report says where."""
    monkeypatch.setenv("KEEP_TOOL_CALL_IDS", "1")
    result = project.runpytest_inprocess(
        "--record-mode=none", *RUN, "-k", "test_run_sync and google"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*functionCall.id: recorded 'pyd_ai_*', incoming 'pyd_ai_*"])
