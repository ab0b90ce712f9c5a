"""Strands Agents records against the local provider and replays with it stopped.

``BedrockModel`` drives a boto3 ``bedrock-runtime`` client (Converse and ConverseStream), so
its requests go through vcrpy's botocore stubs. An agent runs its event loop in a thread of
its own, and a graph runs its parallel nodes at once: the fan-out below is the one that lost
recordings while vcrpy's stubs put the real connection classes back during a send
(``tests/sessions/test_threads_beside_vcrpy_stubs.py``). Runs in the ``frameworks`` nox
session; skipped where strands-agents is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

from ._bedrock_frameworks import (
    MODEL,
    assert_no_recording_credentials,
    frames,
    recording_then_replaying,
)
from ._record_replay import record_then_replay

strands = pytest.importorskip("strands")
boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402
from strands.models import BedrockModel  # noqa: E402
from strands.multiagent import GraphBuilder  # noqa: E402

QUESTION = "How many words are in 'record once, replay offline'? Use the word_count tool."


@strands.tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def model(provider: LocalProvider, credentials: dict[str, str], *, streaming: bool) -> Any:
    return BedrockModel(
        model_id=MODEL,
        boto_session=boto3.Session(region_name="us-east-1", **credentials),
        endpoint_url=provider.bedrock_endpoint_url,
        boto_client_config=Config(retries={"max_attempts": 1}),
        streaming=streaming,
    )


def requests_in(cassette: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    return [line for line in lines if line.get("type") == "request"]


@pytest.mark.parametrize("streaming", [True, False], ids=["converse-stream", "converse"])
def test_an_agent_calling_a_tool(tmp_path: Path, streaming: bool) -> None:
    def run(provider: LocalProvider, credentials: dict[str, str]) -> tuple[str, Any]:
        agent = strands.Agent(
            model=model(provider, credentials, streaming=streaming),
            tools=[word_count],
            callback_handler=None,
        )
        result = agent(QUESTION)
        return str(result), [m["content"] for m in agent.messages]

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(run))
    assert replayed == recorded
    text, conversation = replayed
    # The model asked for the tool, the tool's answer went back, the model answered.
    uses = [block["toolUse"] for turn in conversation for block in turn if "toolUse" in block]
    assert [use["name"] for use in uses] == ["word_count"]
    results = [b["toolResult"] for turn in conversation for b in turn if "toolResult" in b]
    assert results[0]["content"] == [{"text": str(len(QUESTION.split()))}]
    assert str(len(QUESTION.split())) in text
    assert len(requests_in(cassette)) == 2
    assert_no_recording_credentials(cassette)
    assert len(frames(cassette)) == (2 if streaming else 0)


def test_a_graph_with_parallel_nodes_records_every_node(tmp_path: Path) -> None:
    def run(provider: LocalProvider, credentials: dict[str, str]) -> dict[str, str]:
        def agent(name: str, prompt: str) -> Any:
            return strands.Agent(
                name=name,
                model=model(provider, credentials, streaming=True),
                system_prompt=prompt,
                callback_handler=None,
            )

        builder = GraphBuilder()
        builder.add_node(agent("pros", "You list the advantages."), "pros")
        builder.add_node(agent("cons", "You list the drawbacks."), "cons")
        builder.add_node(agent("judge", "You weigh both lists."), "judge")
        builder.add_edge("pros", "judge")
        builder.add_edge("cons", "judge")
        builder.set_entry_point("pros")
        builder.set_entry_point("cons")
        builder.set_max_node_executions(3)
        graph = builder.build()
        result = graph("Should tests replay recorded model calls?")
        return {name: str(node.result) for name, node in result.results.items()}

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(run))
    assert replayed == recorded
    assert set(replayed) == {"pros", "cons", "judge"}
    assert "From pros" in replayed["judge"]
    assert "From cons" in replayed["judge"]
    systems = sorted(r["body"]["json"]["system"][0]["text"] for r in requests_in(cassette))
    assert systems == [
        "You list the advantages.",
        "You list the drawbacks.",
        "You weigh both lists.",
    ]
    assert_no_recording_credentials(cassette)
