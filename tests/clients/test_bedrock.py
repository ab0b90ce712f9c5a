"""boto3's bedrock-runtime client records against the local provider and replays offline.

botocore is not on httpx: its requests go through vcrpy's own boto3 stubs. The cassette
stores an event-stream body as one line per frame and rebuilds the frames byte for byte;
SigV4 credentials and signing time are redacted and take no part in matching.
"""

from __future__ import annotations

import base64
import datetime
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

import llmcassette
from llmcassette import _eventstream as wire
from llmcassette.cassette import jsonl
from llmcassette.cli.main import main
from llmcassette.testing import LocalProvider
from llmcassette.transport.integrity import missing_terminator

from ._bedrock_frameworks import frames as _frames
from ._record_replay import record_then_replay

boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402
from botocore.eventstream import EventStreamBuffer  # noqa: E402

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
MESSAGES: Any = [{"role": "user", "content": [{"text": "Which clients can replay Bedrock?"}]}]
ANSWER = "You said: Which clients can replay Bedrock?"
# Two made-up credential sets, in the shapes AWS issues (long-term AKIA, temporary ASIA).
KEY_A, SECRET_A = "AKIA" + "LOCALPROVIDERAAA", "localSecretA/" + "K7MDENG" * 3 + "xyz"
KEY_B, SECRET_B = "ASIA" + "LOCALPROVIDERBBB", "localSecretB/" + "Q2WXZDE" * 3 + "abc"
TOKEN_A = "IQoJb3JpZ2luX2VjEHUaCXVzLWVhc3QtMSJHMEUCIQ" + "LocalSessionTokenA" * 4
TOKEN_B = "IQoJb3JpZ2luX2VjEHUaCXVzLWVhc3QtMSJHMEUCIQ" + "LocalSessionTokenB" * 4
WEATHER = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "inputSchema": {
                    "json": {"type": "object", "properties": {"city": {"type": "string"}}}
                },
            }
        }
    ]
}


def _client(
    provider: LocalProvider, key: str = KEY_A, secret: str = SECRET_A, token: str = TOKEN_A
) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=provider.bedrock_endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        aws_session_token=token,
        config=Config(retries={"max_attempts": 1}),
    )


def test_converse_and_converse_stream(tmp_path: Path) -> None:
    def call(provider: LocalProvider) -> tuple[str, list[dict[str, Any]]]:
        client = _client(provider)
        whole = client.converse(modelId=MODEL, messages=MESSAGES)
        events = list(client.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"])
        return whole["output"]["message"]["content"][0]["text"], events

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    text, events = replayed
    assert text == ANSWER
    assert "".join(e["contentBlockDelta"]["delta"]["text"] for e in events[1:-3]) == ANSWER
    # Every frame reaches boto3's EventStream, one event each, messageStart to metadata.
    frames = _frames(cassette)[0]
    assert len(events) == len(frames) == 13  # 9 text deltas and 4 other events
    assert [next(iter(e)) for e in events] == [f["headers"][":event-type"] for f in frames]
    assert frames[1]["data"]["delta"] == {"text": "You"}
    assert events[-1]["metadata"]["usage"]["totalTokens"] > 0


def test_converse_stream_tool_use(tmp_path: Path) -> None:
    def call(provider: LocalProvider) -> list[dict[str, Any]]:
        stream = _client(provider).converse_stream(
            modelId=MODEL, messages=MESSAGES, toolConfig=WEATHER
        )
        return list(stream["stream"])

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    assert replayed[1]["contentBlockStart"]["start"]["toolUse"]["name"] == "get_weather"
    pieces = [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in replayed[2:-3]]
    assert json.loads("".join(pieces)) == {"city": MESSAGES[0]["content"][0]["text"]}
    assert len(replayed) == len(_frames(cassette)[0])


def test_agents_streaming_from_threads_are_each_recorded_and_replayed(tmp_path: Path) -> None:
    # A fan-out as Strands Agents' graphs make it: each agent its own client, all at once.
    # vcrpy's boto3 stub used to put the real connection classes back while it sent, and
    # the other threads' requests went out unrecorded (tests/sessions has the mechanism).
    prompts = [f"Agent {n}: which clients can replay Bedrock?" for n in range(6)]

    def call(provider: LocalProvider) -> dict[str, str]:
        start = threading.Barrier(len(prompts))

        def agent(prompt: str) -> str:
            client = _client(provider)
            start.wait(timeout=10)
            message: Any = [{"role": "user", "content": [{"text": prompt}]}]
            stream = client.converse_stream(modelId=MODEL, messages=message)["stream"]
            return "".join(
                e["contentBlockDelta"]["delta"]["text"] for e in stream if "contentBlockDelta" in e
            )

        with ThreadPoolExecutor(len(prompts)) as pool:
            return dict(zip(prompts, pool.map(agent, prompts), strict=True))

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert recorded == {prompt: f"You said: {prompt}" for prompt in prompts}
    assert replayed == recorded
    assert len(_frames(cassette)) == len(prompts)


def test_agents_in_sessions_replay_their_own_answers(tmp_path: Path) -> None:
    """Identical requests to matching (a run id, volatile), answered differently, made in
    two ``llmcassette.session``s: each replays its own answer, asked in the other order."""
    cassette = str(tmp_path / "sessions.jsonl")
    options: Any = {"match": {"volatile": ["uuid"]}}

    def ask(client: Any) -> str:
        text = f"Review the draft. Run {uuid.uuid4()}"
        messages = [{"role": "user", "content": [{"text": text}]}]
        answer = client.converse(modelId=MODEL, messages=messages)
        return str(answer["output"]["message"]["content"][0]["text"])

    with LocalProvider() as provider:
        recorded = {}
        with llmcassette.use_cassette(cassette, **options):
            for name in ("critic", "editor"):
                with llmcassette.session(name):
                    recorded[name] = ask(_client(provider))
    assert recorded["critic"] != recorded["editor"]
    replayed = {}
    with llmcassette.use_cassette(cassette, record_mode="none", **options):
        for name in ("editor", "critic"):
            with llmcassette.session(name):
                replayed[name] = ask(_client(provider))
    assert replayed == recorded
    lines = [json.loads(line) for line in Path(cassette).read_text().splitlines()]
    assert [line.get("session") for line in lines if line.get("type") == "request"] == [
        "critic",
        "editor",
    ]


def test_invoke_model_with_response_stream(tmp_path: Path) -> None:
    body = json.dumps(
        {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": MESSAGES}
    )

    def call(provider: LocalProvider) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        client = _client(provider)
        streamed = client.invoke_model_with_response_stream(modelId=MODEL, body=body)
        chunks = [json.loads(event["chunk"]["bytes"]) for event in streamed["body"]]
        whole = json.loads(client.invoke_model(modelId=MODEL, body=body)["body"].read())
        return chunks, whole

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded
    chunks, whole = replayed
    assert whole["content"][0]["text"] == ANSWER
    assert chunks[0]["type"] == "message_start"
    assert chunks[-1]["type"] == "message_stop"
    text = "".join(c["delta"]["text"] for c in chunks if c["type"] == "content_block_delta")
    assert text == ANSWER
    # The inner base64 is stored decoded: each line holds the Anthropic event itself.
    frames = _frames(cassette)[0]
    assert len(chunks) == len(frames)
    assert [f["data"]["bytes"] for f in frames] == chunks
    assert all(f["chunk"] == "json" for f in frames)


def test_rebuilt_frames_equal_the_recorded_bytes(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette.jsonl"
    with LocalProvider() as provider:
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            list(_client(provider).converse_stream(modelId=MODEL, messages=MESSAGES)["stream"])
        # The provider is deterministic: the same request gets the bytes the SDK got.
        sent = provider.requests[0]
        live = httpx.post(provider.url + sent.path, content=sent.body, headers=sent.headers)
    recorded = live.content
    assert wire.decode_frames(recorded)  # whole frames, both CRCs good
    item = jsonl.read(cassette.read_bytes(), cassette).interactions[0]
    assert item.stream == "eventstream"
    assert item.response_body == recorded
    # botocore's own parser reads the rebuilt body frame for frame.
    buffer = EventStreamBuffer()
    buffer.add_data(item.response_body)
    parsed = list(buffer)
    frames = _frames(cassette)[0]
    assert len(parsed) == len(frames)
    for message, frame in zip(parsed, frames, strict=True):
        assert message.headers == frame["headers"]
        assert json.loads(message.payload) == frame["data"]


def test_codec_frames_parse_with_botocore() -> None:
    inner = json.dumps({"type": "content_block_delta", "delta": {"text": "é"}}).encode()
    frames = [
        wire.encode_frame(
            wire.string_headers([(":event-type", "chunk"), (":message-type", "event")]),
            json.dumps({"bytes": base64.b64encode(inner).decode()}).encode(),
        ),
        wire.encode_frame(
            (wire.Header("n", wire.INTEGER, -5), wire.Header("ok", wire.BOOL_TRUE, True)), b""
        ),
    ]
    buffer = EventStreamBuffer()
    buffer.add_data(b"".join(frames))
    parsed = list(buffer)
    assert parsed[0].headers == {":event-type": "chunk", ":message-type": "event"}
    assert base64.b64decode(json.loads(parsed[0].payload)["bytes"]) == inner
    assert parsed[1].headers == {"n": -5, "ok": True}
    assert parsed[1].payload == b""


def test_recorded_with_one_credential_set_and_day_replays_with_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "cassette.jsonl"

    def on_day(day: datetime.datetime) -> None:
        monkeypatch.setattr("botocore.auth.get_current_datetime", lambda *a, **k: day)

    on_day(datetime.datetime(2024, 3, 1, 9, 30, 0))
    with LocalProvider() as provider:
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            recorded = _client(provider).converse(modelId=MODEL, messages=MESSAGES)["output"]
            stream = _client(provider).converse_stream(modelId=MODEL, messages=MESSAGES)
            recorded_events = list(stream["stream"])
        signed = [request.headers for request in provider.requests]
    assert all(h["x-amz-date"] == "20240301T093000Z" for h in signed)
    signatures = [h["authorization"].rsplit("Signature=", 1)[1] for h in signed]
    assert all(len(s) == 64 for s in signatures)

    on_day(datetime.datetime(2025, 11, 20, 17, 5, 42))  # another day, other credentials
    with llmcassette.use_cassette(str(cassette), record_mode="none") as replay:
        client = _client(provider, KEY_B, SECRET_B, TOKEN_B)
        assert client.converse(modelId=MODEL, messages=MESSAGES)["output"] == recorded
        stream = client.converse_stream(modelId=MODEL, messages=MESSAGES)
        assert list(stream["stream"]) == recorded_events
    assert replay.all_played

    text = cassette.read_text()
    for secret in (KEY_A, SECRET_A, TOKEN_A, *signatures, "20240301T093000Z"):
        assert secret not in text
    assert "AKIA" not in text
    assert "Signature=<REDACTED:" in text
    headers = json.loads(text.splitlines()[1])["headers"]
    assert headers["X-Amz-Date"].startswith("<REDACTED:")
    assert headers["X-Amz-Security-Token"].startswith("<REDACTED:")


def _cut(cassette: Path, keep: int) -> None:
    """Keep only the first ``keep`` frames of the cassette's stream (a cut-off recording)."""
    records = [json.loads(line) for line in cassette.read_text().splitlines()]
    first = next(i for i, r in enumerate(records) if r.get("type") == "event")
    records = [*records[: first + keep], {**records[-1], "events": keep}]
    cassette.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("operation", ["converse_stream", "invoke_model_with_response_stream"])
def test_a_cut_stream_is_reported_by_check(
    tmp_path: Path, operation: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "cassette.jsonl"
    body = json.dumps({"anthropic_version": "x", "max_tokens": 9, "messages": MESSAGES})
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        client = _client(provider)
        if operation == "converse_stream":
            list(client.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"])
        else:
            list(client.invoke_model_with_response_stream(modelId=MODEL, body=body)["body"])
    assert main(["check", str(cassette)]) == 0
    _cut(cassette, 4)
    assert main(["check", str(cassette)]) == 1
    expected = {
        "converse_stream": "a Bedrock ConverseStream that ended without `messageStop` and "
        "`metadata`",
        "invoke_model_with_response_stream": "a Bedrock InvokeModel stream that ended without "
        "`message_stop`",
    }[operation]
    assert expected in capsys.readouterr().out


def test_a_frame_cut_in_the_middle_is_reported() -> None:
    frame = wire.encode_frame(wire.string_headers([(":event-type", "messageStart")]), b"{}")
    assert missing_terminator("eventstream", frame + frame[:7]) == (
        "a Bedrock event stream whose last frame is cut off"
    )
    error = wire.encode_frame(
        wire.string_headers(
            [(":message-type", "exception"), (":exception-type", "throttlingException")]
        ),
        b'{"message":"slow down"}',
    )
    assert missing_terminator("eventstream", frame + error) is None  # ended by the service


def test_recording_a_cut_stream_fails_the_call_and_stores_nothing(tmp_path: Path) -> None:
    # vcrpy's boto3 stub reads the whole body before botocore sees a byte: the cut reaches
    # the SDK as a failed request, not as a partial stream.
    from botocore.exceptions import ConnectionClosedError

    cassette = tmp_path / "cassette.jsonl"
    with LocalProvider() as provider:
        provider.behaviour.cut_after = 3
        with (
            pytest.raises(ConnectionClosedError),
            llmcassette.use_cassette(str(cassette), record_mode="all"),
        ):
            _client(provider).converse_stream(modelId=MODEL, messages=MESSAGES)
    assert not cassette.exists() or '"type":"request"' not in cassette.read_text()


def test_anthropic_bedrock_client_over_httpx(tmp_path: Path) -> None:
    # anthropic's AnthropicBedrock signs with botocore but sends through httpx: the same
    # AWS event-stream frames, stored one line each, replayed under other credentials.
    anthropic = pytest.importorskip("anthropic")
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    question = [{"role": "user", "content": "Which clients can replay Bedrock?"}]

    def call(provider: LocalProvider) -> tuple[str, str]:
        client = anthropic.AnthropicBedrock(
            aws_access_key=KEY_A,
            aws_secret_key=SECRET_A,
            aws_session_token=TOKEN_A,
            aws_region="us-east-1",
            base_url=provider.bedrock_endpoint_url,
            max_retries=0,
        )
        whole = client.messages.create(model=model, max_tokens=64, messages=question)
        with client.messages.stream(model=model, max_tokens=64, messages=question) as stream:
            streamed = "".join(stream.text_stream)
        return str(whole.content[0].text), streamed

    recorded, replayed, cassette = record_then_replay(tmp_path, call)
    assert replayed == recorded == (ANSWER, ANSWER)
    stored = cassette.read_text()
    assert all(secret not in stored for secret in (KEY_A, SECRET_A, TOKEN_A))
    assert stored.count('"type":"event"') > 2
