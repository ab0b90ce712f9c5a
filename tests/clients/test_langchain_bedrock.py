"""langchain-aws records against the local provider and replays with it stopped.

``ChatBedrockConverse`` (the Converse API) and ``ChatBedrock`` (InvokeModel with an
Anthropic Messages body) drive a boto3 ``bedrock-runtime`` client, so their requests go
through vcrpy's botocore stubs: the client is made from ``endpoint_url`` and credentials
here for ``ChatBedrockConverse``, and passed in ready-made for ``ChatBedrock``.
``ainvoke`` and ``astream`` are langchain-core's, running the sync calls in a thread.
Runs in the ``frameworks`` nox session; skipped where langchain-aws is missing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import llmcassette
from llmcassette.testing import LocalProvider

from ._bedrock_frameworks import (
    MODEL,
    RECORDING,
    REPLAYING,
    assert_no_recording_credentials,
    frame_kind,
    frame_text,
    frames,
    recording_then_replaying,
)
from ._record_replay import record_then_replay
from ._support import error_chain_text

langchain_aws = pytest.importorskip("langchain_aws")
boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402
from botocore.exceptions import HTTPClientError  # noqa: E402

PROMPT = "Which chains can replay Bedrock?"
ANSWER = f"You said: {PROMPT}"
NO_RETRIES = Config(retries={"max_attempts": 1})
CALLS = pytest.mark.parametrize("call", ["invoke", "stream", "ainvoke", "astream"])


def converse_model(provider: LocalProvider, credentials: dict[str, str]) -> Any:
    return langchain_aws.ChatBedrockConverse(
        model=MODEL,
        endpoint_url=provider.bedrock_endpoint_url,
        region_name="us-east-1",
        config=NO_RETRIES,
        **credentials,
    )


def invoke_model(provider: LocalProvider, credentials: dict[str, str]) -> Any:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=provider.bedrock_endpoint_url,
        region_name="us-east-1",
        config=NO_RETRIES,
        **credentials,
    )
    # ChatBedrock also makes a control-plane ``bedrock`` client; without credentials of its
    # own it would look for some in boto3's chain, down to the instance metadata service.
    return langchain_aws.ChatBedrock(
        model_id=MODEL, client=client, region_name="us-east-1", **credentials
    )


def ask(model: Any, call: str, prompt: str = PROMPT) -> list[Any]:
    """What one of the chat model's four ways of asking returns: a message, or its chunks."""

    async def asynchronously() -> list[Any]:
        if call == "ainvoke":
            return [await model.ainvoke(prompt)]
        return [chunk async for chunk in model.astream(prompt)]

    if call == "invoke":
        return [model.invoke(prompt)]
    if call == "stream":
        return list(model.stream(prompt))
    return asyncio.run(asynchronously())


def texts(messages: list[Any]) -> list[str]:
    return [message.text for message in messages]


def check_stream(chunks: list[Any], stream: list[dict[str, Any]], *, dropped: set[str]) -> None:
    """One langchain chunk per frame (but the ``dropped`` kinds), in order, then a last one."""
    *per_frame, last = chunks
    assert last.chunk_position == "last"
    assert not last.text
    kept = [frame for frame in stream if frame_kind(frame) not in dropped]
    assert len(per_frame) == len(kept)
    assert texts(per_frame) == [frame_text(frame) or "" for frame in kept]


@CALLS
def test_chat_bedrock_converse(tmp_path: Path, call: str) -> None:
    def run(provider: LocalProvider, credentials: dict[str, str]) -> list[Any]:
        return ask(converse_model(provider, credentials), call)

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(run))
    assert texts(replayed) == texts(recorded)
    assert "".join(texts(replayed)) == ANSWER
    assert_no_recording_credentials(cassette)
    if "stream" not in call:
        assert "/converse" in cassette.read_text()
        assert frames(cassette) == []
        return
    (stream,) = frames(cassette)
    # messageStart, a delta per piece, contentBlockStop, messageStop, metadata: every frame
    # reaches langchain's stream as its own chunk.
    check_stream(replayed, stream, dropped=set())
    assert frame_kind(stream[-1]) == "metadata"
    usage = stream[-1]["data"]["usage"]
    assert replayed[-2].usage_metadata["total_tokens"] == usage["totalTokens"]
    assert replayed[-3].response_metadata["stopReason"] == "end_turn"


@CALLS
def test_chat_bedrock_invoke_model(tmp_path: Path, call: str) -> None:
    def run(provider: LocalProvider, credentials: dict[str, str]) -> list[Any]:
        return ask(invoke_model(provider, credentials), call)

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(run))
    assert texts(replayed) == texts(recorded)
    assert "".join(texts(replayed)) == ANSWER
    assert_no_recording_credentials(cassette)
    if "stream" not in call:
        assert "/invoke" in cassette.read_text()
        assert frames(cassette) == []
        return
    (stream,) = frames(cassette)
    assert frame_kind(stream[0]) == "message_start"
    assert frame_kind(stream[-1]) == "message_stop"
    # ChatBedrock makes no chunk of a content block's start or stop; every other Anthropic
    # event (message_start, the deltas, message_delta, message_stop) is one chunk.
    check_stream(replayed, stream, dropped={"content_block_start", "content_block_stop"})
    assert replayed[-2].usage_metadata["output_tokens"] == len(
        [frame for frame in stream if frame_text(frame)]
    )


def test_tool_call_stream(tmp_path: Path) -> None:
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    def run(provider: LocalProvider, credentials: dict[str, str]) -> list[Any]:
        model = converse_model(provider, credentials).bind_tools([weather])
        return list(model.stream(PROMPT))

    recorded, replayed, cassette = record_then_replay(tmp_path, recording_then_replaying(run))
    pieces = [c.tool_call_chunks for c in replayed]
    assert pieces == [c.tool_call_chunks for c in recorded]
    (stream,) = frames(cassette)
    starts = [f for f in stream if frame_kind(f) == "contentBlockStart"]
    assert starts[0]["data"]["start"]["toolUse"]["name"] == "weather"
    check_stream(replayed, stream, dropped=set())
    merged = replayed[0]
    for chunk in replayed[1:]:
        merged += chunk
    (tool_call,) = merged.tool_calls
    assert tool_call["name"] == "weather"
    assert tool_call["args"] == {"city": PROMPT}
    assert_no_recording_credentials(cassette)


def test_another_prompt_is_not_answered_from_the_cassette(tmp_path: Path) -> None:
    """The mismatch reaches langchain wrapped by botocore, with the report in the message."""
    cassette = tmp_path / "cassette.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        ask(converse_model(provider, RECORDING), "invoke")
    with (
        pytest.raises(HTTPClientError) as raised,
        llmcassette.use_cassette(str(cassette), record_mode="none"),
    ):
        ask(converse_model(provider, REPLAYING), "invoke", "Another question")
    report = error_chain_text(raised.value)
    # llmcassette's mismatch (boto3 goes through vcrpy's stubs), naming the path
    assert "body.messages[0].content[0].text: recorded 'Which chains can replay Bedrock?'" in report
    assert "incoming 'Another question'" in report
