"""LangChain with LangSmith tracing on: the cassette holds the model's calls, not the traces.

LangSmith's client asks its server for ``/info`` and uploads runs (``/runs/multipart``) from a
background thread. Recorded, those requests made the cassette depend on when a batch left,
and never matched again (LangChain's own suites ignored LangSmith's host for it); llmcassette
leaves them out (``llmcassette._vcr.housekeeping``). Runs in the ``frameworks`` set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay

langchain_openai = pytest.importorskip("langchain_openai")
langsmith = pytest.importorskip("langsmith")

KEY = "sk-proj-" + "LangSmithTracing" * 3
LANGSMITH_KEY = "lsv2_pt_" + "0123456789abcdef" * 2 + "_0123456789"


@pytest.fixture
def langsmith_server(
    any_server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """A stand-in LangSmith API, as LANGSMITH_ENDPOINT; the requests it got."""
    origin, got = any_server
    monkeypatch.setenv("LANGSMITH_ENDPOINT", origin)
    monkeypatch.setenv("LANGSMITH_API_KEY", LANGSMITH_KEY)
    return got


def test_traces_are_sent_but_not_recorded(tmp_path: Path, langsmith_server: list[str]) -> None:
    from langchain_core.tracers.context import tracing_v2_enabled
    from langchain_core.tracers.langchain import wait_for_all_tracers

    def run(provider: LocalProvider) -> str:
        client = langsmith.Client()  # LANGSMITH_ENDPOINT, LANGSMITH_API_KEY
        model = langchain_openai.ChatOpenAI(
            base_url=provider.openai_base_url, api_key=KEY, model="gpt-4o-mini"
        )
        with tracing_v2_enabled(project_name="llmcassette", client=client):
            answer = str(model.invoke("Which clients can replay LangChain?").content)
            wait_for_all_tracers()  # the batch leaves inside the cassette
        client.flush()
        return answer

    recorded, replayed, cassette = record_then_replay(tmp_path, run)
    assert replayed == recorded == "You said: Which clients can replay LangChain?"
    uploads = [request for request in langsmith_server if "/runs" in request]
    assert len(uploads) >= 2, langsmith_server  # traced while recording and replaying
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    uris = [line["uri"] for line in lines if line.get("type") == "request"]
    assert [uri.rsplit("/", 2)[-2:] for uri in uris] == [["chat", "completions"]]
    assert LANGSMITH_KEY not in cassette.read_text()
