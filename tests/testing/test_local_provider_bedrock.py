"""Bedrock Runtime from the local provider, over raw HTTP (boto3's own view: tests/clients)."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from llmcassette import _eventstream as wire
from llmcassette.testing import LocalProvider

# Any SigV4-looking header will do: the provider checks the scheme, not the signature.
AUTH = {
    "authorization": "AWS4-HMAC-SHA256 Credential=AKIDLOCAL/20231114/us-east-1/bedrock/"
    "aws4_request, SignedHeaders=host, Signature=00"
}
MODEL = "anthropic.claude-3-haiku-20240307-v1%3A0"
CONVERSE = {"messages": [{"role": "user", "content": [{"text": "Hello there"}]}]}
INVOKE = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 50, "messages": [
    {"role": "user", "content": "Hello there"}
]}  # fmt: skip


def _post(provider: LocalProvider, operation: str, body: object) -> httpx.Response:
    url = f"{provider.bedrock_endpoint_url}/model/{MODEL}/{operation}"
    return httpx.post(url, json=body, headers=AUTH)


def _frames(reply: httpx.Response) -> list[wire.Frame]:
    assert reply.headers["content-type"] == wire.CONTENT_TYPE
    return wire.decode_frames(reply.content)


def test_converse_whole_and_streamed(provider: LocalProvider) -> None:
    whole = _post(provider, "converse", CONVERSE).json()
    assert whole["output"]["message"]["content"] == [{"text": "You said: Hello there"}]
    assert whole["stopReason"] == "end_turn"
    frames = _frames(_post(provider, "converse-stream", CONVERSE))
    kinds = [f.header(":event-type") for f in frames]
    assert kinds == ["messageStart", *["contentBlockDelta"] * 5, "contentBlockStop",
                     "messageStop", "metadata"]  # fmt: skip
    payloads = [json.loads(f.payload) for f in frames]
    assert "".join(p["delta"]["text"] for p in payloads[1:6]) == "You said: Hello there"
    assert all(f.header(":message-type") == "event" for f in frames)
    assert all("p" in p for p in payloads)  # Bedrock's padding field


def test_converse_stream_tool_use(provider: LocalProvider) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools = {"tools": [{"toolSpec": {"name": "weather", "inputSchema": {"json": schema}}}]}
    frames = _frames(_post(provider, "converse-stream", {**CONVERSE, "toolConfig": tools}))
    payloads = [json.loads(f.payload) for f in frames]
    assert payloads[1]["start"]["toolUse"]["name"] == "weather"
    arguments = "".join(p["delta"]["toolUse"]["input"] for p in payloads if "delta" in p)
    assert json.loads(arguments) == {"city": "Hello there"}
    assert payloads[-2]["stopReason"] == "tool_use"


def test_invoke_with_response_stream_chunks_hold_anthropic_events(provider: LocalProvider) -> None:
    frames = _frames(_post(provider, "invoke-with-response-stream", INVOKE))
    assert {f.header(":event-type") for f in frames} == {"chunk"}
    inner = [json.loads(base64.b64decode(json.loads(f.payload)["bytes"])) for f in frames]
    assert inner[0]["type"] == "message_start"
    assert inner[-1]["type"] == "message_stop"
    assert "ping" not in {e["type"] for e in inner}
    text = "".join(e["delta"]["text"] for e in inner if e["type"] == "content_block_delta")
    assert text == "You said: Hello there"
    whole = _post(provider, "invoke", INVOKE)
    assert whole.json()["content"] == [{"type": "text", "text": "You said: Hello there"}]
    assert whole.headers["x-amzn-bedrock-output-token-count"] == "5"


def test_the_same_request_gets_the_same_bytes(provider: LocalProvider) -> None:
    first = _post(provider, "converse-stream", CONVERSE)
    assert _post(provider, "converse-stream", CONVERSE).content == first.content


def test_unsigned_requests_errors_and_cut_streams(provider: LocalProvider) -> None:
    url = f"{provider.url}/model/{MODEL}/converse"
    denied = httpx.post(url, json=CONVERSE, headers={"authorization": "Bearer x"})
    assert denied.status_code == 403
    assert denied.headers["x-amzn-errortype"].startswith("AccessDeniedException")
    throttled = httpx.post(f"{provider.url}/model/error-429/converse", json=CONVERSE, headers=AUTH)
    assert throttled.status_code == 429
    assert throttled.headers["x-amzn-errortype"].startswith("ThrottlingException")
    provider.queue_error(503)
    assert _post(provider, "converse-stream", CONVERSE).status_code == 503

    provider.behaviour.cut_after = 3
    received: list[bytes] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream(
            "POST", f"{provider.url}/model/{MODEL}/converse-stream", json=CONVERSE, headers=AUTH
        ) as reply,
    ):
        received.extend(reply.iter_raw())
    assert len(wire.decode_frames(b"".join(received))) == 3  # three whole frames, then nothing
