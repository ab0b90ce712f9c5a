"""``show`` on Bedrock cassettes: event-stream frames (ConverseStream and InvokeModel chunks)
assembled into the answer, tool calls and usage; the last user turn of ``messages``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

import llmcassette
from llmcassette.cassette import jsonl
from llmcassette.cli.show import summarize
from llmcassette.testing import LocalProvider

AUTH = {
    "authorization": "AWS4-HMAC-SHA256 Credential=AKIALOCALPROVIDERAAA/20240301/us-east-1/"
    "bedrock/aws4_request, SignedHeaders=host, Signature=" + "7a" * 32
}
MODEL = "anthropic.claude-3-haiku-20240307-v1%3A0"
HISTORY = [
    {"role": "user", "content": [{"text": "First question"}]},
    {"role": "assistant", "content": [{"text": "First answer"}]},
    {"role": "user", "content": [{"text": "Name three rivers"}]},
]
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "find_rivers",
                "inputSchema": {
                    "json": {"type": "object", "properties": {"region": {"type": "string"}}}
                },
            }
        }
    ]
}
INVOKE = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [
    {"role": "user", "content": "Name three rivers"}
]}  # fmt: skip


def _recorded(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    cassette = tmp_path / "bedrock.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        for operation, body in calls:
            url = f"{provider.url}/model/{MODEL}/{operation}"
            assert httpx.post(url, json=body, headers=AUTH).status_code == 200
    items = jsonl.read(cassette.read_bytes(), cassette).interactions
    return [summarize(number, item) for number, item in enumerate(items, start=1)]


def test_converse_stream_and_converse(tmp_path: Path) -> None:
    streamed, whole = _recorded(
        tmp_path, [("converse-stream", {"messages": HISTORY}), ("converse", {"messages": HISTORY})]
    )
    for shown in (streamed, whole):
        assert shown.model == "anthropic.claude-3-haiku-20240307-v1:0"
        assert shown.prompt[-1] == "user: Name three rivers"
        assert shown.answer.kind == "bedrock-converse"
        assert shown.answer.text == "You said: Name three rivers"
    assert streamed.events == 4 + 6  # messageStart, 6 deltas, stop, messageStop, metadata
    assert streamed.answer.usage == {"inputTokens": 7, "outputTokens": 6, "totalTokens": 13}


def test_converse_stream_tool_call(tmp_path: Path) -> None:
    (shown,) = _recorded(
        tmp_path, [("converse-stream", {"messages": HISTORY, "toolConfig": TOOLS})]
    )
    assert shown.tools == ["find_rivers"]
    assert shown.answer.tool_calls == [
        {"name": "find_rivers", "arguments": '{"region": "Name three rivers"}'}
    ]


def test_invoke_model_with_response_stream(tmp_path: Path) -> None:
    (shown,) = _recorded(tmp_path, [("invoke-with-response-stream", INVOKE)])
    assert shown.answer.kind == "anthropic-messages"
    assert shown.answer.text == "You said: Name three rivers"
    assert shown.prompt == ["user: Name three rivers"]
    assert shown.events > 5


def test_a_model_id_sent_without_percent_encoding(tmp_path: Path) -> None:
    # litellm's bedrock/invoke/ route sends the id's `:` as it is (boto3 sends `%3A`).
    cassette = tmp_path / "bedrock.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        url = f"{provider.url}/model/anthropic.claude-3-haiku-20240307-v1:0/invoke"
        assert httpx.post(url, json=INVOKE, headers=AUTH).status_code == 200
    (item,) = jsonl.read(cassette.read_bytes(), cassette).interactions
    assert item.uri.endswith("-v1:0/invoke")
    assert summarize(1, item).model == "anthropic.claude-3-haiku-20240307-v1:0"
