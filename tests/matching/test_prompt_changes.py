"""A change the model would see is never matched away: each case records a request, changes
one thing in it, and replays with record mode ``none``, which must raise a mismatch whose
path points at the change."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
import requests

import llmcassette
from llmcassette.testing import LocalProvider


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def _mismatch(
    tmp_path: Path, send: Any, recorded: Any, changed: Any
) -> llmcassette.CassetteMismatch:
    cassette = tmp_path / "c.jsonl"
    with llmcassette.use_cassette(cassette, record_mode="once"):
        send(recorded)
    with (
        llmcassette.use_cassette(cassette, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as raised,
    ):
        send(changed)
    return raised.value


def _tool_use(tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "find it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "find", "input": tool_input}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "none"}],
        },
    ]


def test_an_empty_tool_argument_is_not_a_missing_one(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """The model reads the earlier call ``find(query="")``, not ``find()``: empty values are
    data inside a tool call's arguments, whatever ``sdk_defaults`` forgives elsewhere."""
    client = anthropic.Anthropic(
        base_url=provider.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    )

    def send(tool_input: dict[str, Any]) -> None:
        client.messages.create(
            model="claude-haiku-4-5", max_tokens=32, messages=_tool_use(tool_input)
        )  # type: ignore[call-overload]

    with client:
        mismatch = _mismatch(tmp_path, send, {"query": ""}, {})
    assert str(mismatch).startswith(
        "body.messages[1].content[0].input: recorded {'query': ''}, incoming {}"
    )


@pytest.mark.parametrize(
    ("recorded", "changed", "path"),
    [
        (  # Gemini: a function call's arguments
            {"contents": [{"parts": [{"functionCall": {"name": "f", "args": {"x": None}}}]}]},
            {"contents": [{"parts": [{"functionCall": {"name": "f", "args": {}}}]}]},
            "body.contents[0].parts[0].functionCall.args",
        ),
        (  # Gemini: a function's result
            {"contents": [{"parts": [{"functionResponse": {"name": "f", "response": {"r": []}}}]}]},
            {"contents": [{"parts": [{"functionResponse": {"name": "f", "response": {}}}]}]},
            "body.contents[0].parts[0].functionResponse.response",
        ),
        (  # a tool's JSON schema: the default the model is told
            {"tools": [{"name": "f", "input_schema": {"properties": {"q": {"default": ""}}}}]},
            {"tools": [{"name": "f", "input_schema": {"properties": {"q": {}}}}]},
            "body.tools[0].input_schema.properties.q.default",
        ),
        (  # a tool's JSON schema: a property that may hold anything
            {"tools": [{"name": "f", "parameters": {"properties": {"q": {}}}}]},
            {"tools": [{"name": "f", "parameters": {"properties": {}}}]},
            "body.tools[0].parameters",
        ),
        (  # OpenAI structured output: a constant null
            {
                "response_format": {
                    "json_schema": {"schema": {"properties": {"a": {"const": None}}}}
                }
            },
            {"response_format": {"json_schema": {"schema": {"properties": {"a": {}}}}}},
            "body.response_format.json_schema.schema.properties.a.const",
        ),
        (  # Bedrock Converse: a tool call's input
            {"messages": [{"content": [{"toolUse": {"toolUseId": "t", "input": {"q": ""}}}]}]},
            {"messages": [{"content": [{"toolUse": {"toolUseId": "t", "input": {}}}]}]},
            "body.messages[0].content[0].toolUse.input",
        ),
        (  # Ollama: a tool call's arguments are an object
            {"messages": [{"tool_calls": [{"function": {"name": "f", "arguments": {"q": ""}}}]}]},
            {"messages": [{"tool_calls": [{"function": {"name": "f", "arguments": {}}}]}]},
            "body.messages[0].tool_calls[0].function.arguments",
        ),
    ],
)
def test_empty_values_the_model_reads_count(
    tmp_path: Path,
    any_server: tuple[str, list[str]],
    recorded: dict[str, Any],
    changed: dict[str, Any],
    path: str,
) -> None:
    def send(body: dict[str, Any]) -> None:
        httpx2.post(f"{any_server[0]}/v1/anything", json=body)

    mismatch = _mismatch(tmp_path, send, recorded, changed)
    assert mismatch.differences[0].path == path


def test_empty_schema_keywords_are_still_an_sdk_spelling(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    """Inside a schema, ``"required": []``, ``"properties": {}`` and ``"description": ""``
    say what no keyword says: clients that spell them out and clients that don't match."""
    url = f"{any_server[0]}/v1/chat/completions"
    spelt = {"type": "object", "properties": {}, "required": [], "description": ""}
    tool = {"type": "function", "function": {"name": "now", "parameters": spelt}}
    with llmcassette.use_cassette(tmp_path / "c.jsonl", record_mode="once"):
        httpx2.post(url, json={"model": "m", "tools": [tool]})
    bare = {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}
    with llmcassette.use_cassette(tmp_path / "c.jsonl", record_mode="none"):
        httpx2.post(url, json={"model": "m", "tools": [bare]})


def test_a_changed_beta_header_is_a_mismatch(tmp_path: Path, provider: LocalProvider) -> None:
    """``anthropic-beta`` turns on features that change the answer (a longer context,
    thinking between tool calls): compared as the set of features it names."""
    client = anthropic.Anthropic(
        base_url=provider.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    )
    cassette = tmp_path / "c.jsonl"

    def ask(betas: list[str]) -> None:
        client.beta.messages.create(
            model="claude-haiku-4-5",
            max_tokens=16,
            messages=[{"role": "user", "content": "hi"}],
            betas=betas,
        )

    with client:
        with llmcassette.use_cassette(cassette, record_mode="once"):
            ask(["context-1m-2025-08-07", "interleaved-thinking-2025-05-14"])
        with llmcassette.use_cassette(cassette, record_mode="none"):
            ask(["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"])  # the same set
        with (
            llmcassette.use_cassette(cassette, record_mode="none"),
            pytest.raises(llmcassette.CassetteMismatch) as raised,
        ):
            ask(["interleaved-thinking-2025-05-14"])
    assert str(raised.value).startswith(
        "headers.anthropic-beta: recorded 'context-1m-2025-08-07, "
        "interleaved-thinking-2025-05-14', incoming 'interleaved-thinking-2025-05-14'"
    )


def test_openai_beta_counts_through_requests(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    """The same through vcrpy's own stubs (requests): ``openai-beta`` picks the Assistants
    API's generation."""
    url = f"{any_server[0]}/v1/threads/runs"

    def send(beta: dict[str, Any]) -> None:
        requests.post(url, json={"assistant_id": "asst_1"}, headers=beta["headers"], timeout=5)

    mismatch = _mismatch(
        tmp_path,
        send,
        {"headers": {"OpenAI-Beta": "assistants=v2"}},
        {"headers": {"OpenAI-Beta": "assistants=v1"}},
    )
    assert mismatch.differences[0].path == "headers.openai-beta"


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compressed_request_body_is_compared_as_its_json(
    tmp_path: Path, any_server: tuple[str, list[str]], coding: str
) -> None:
    """A body sent with a ``content-encoding`` is compared decoded: gzip stamps the time in
    its header, so the same JSON is other bytes on every run, and a changed prompt is told
    by its path, not as a difference of compressed bytes."""
    cassette = tmp_path / "c.jsonl"
    url = f"{any_server[0]}/v1/chat/completions"
    headers = {"content-type": "application/json", "content-encoding": coding}

    def send(text: bytes, stamp: int) -> None:
        body = gzip.compress(text, mtime=stamp) if coding == "gzip" else zlib.compress(text, 1)
        httpx2.post(url, content=body, headers=headers)

    with llmcassette.use_cassette(cassette, record_mode="once"):
        send(b'{"model":"m","prompt":"hello"}', 1)
    with llmcassette.use_cassette(cassette, record_mode="none"):
        send(b'{"prompt": "hello", "model": "m"}', 2)  # other bytes, the same JSON
    with (
        llmcassette.use_cassette(cassette, record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as raised,
    ):
        send(b'{"model":"m","prompt":"hellO"}', 2)
    assert str(raised.value).startswith("body.prompt: recorded 'hello', incoming 'hellO'")


def test_form_bytes_that_are_not_utf8_count(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    """A form field's percent-escaped bytes are compared as bytes: ``%FF`` is not ``%FE``,
    although neither is UTF-8."""
    url = f"{any_server[0]}/v1/upload"
    form = {"content-type": "application/x-www-form-urlencoded"}

    def send(body: bytes) -> None:
        requests.post(url, data=body, headers=form, timeout=5)

    mismatch = _mismatch(tmp_path, send, b"model=m&data=%01%FF", b"model=m&data=%01%FE")
    assert str(mismatch).startswith(
        "body.data[0]: recorded '\\x01\\udcff', incoming '\\x01\\udcfe'"
    )


def test_a_changed_byte_of_an_upload_is_shown(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    """An audio file sent for transcription (multipart, through the openai SDK) that differs
    in one byte: the message shows the bytes around that one, not the first 80 of a file
    whose start is the same on both sides."""
    audio = bytearray(range(256)) * 1000
    client = openai.OpenAI(base_url=f"{any_server[0]}/v1", api_key="sk-test", max_retries=0)

    def send(data: bytes) -> None:
        client.audio.transcriptions.create(model="whisper-1", file=("a.wav", data))

    changed = bytearray(audio)
    changed[200_000] = 0xFF  # was 0x40 ("@")
    with client:
        mismatch = _mismatch(tmp_path, send, bytes(audio), bytes(changed))
    line = str(mismatch).splitlines()[0]
    assert line.startswith("body[1].content: recorded …b")
    recorded, incoming = line.split(", incoming ")
    assert "=>?@ABCDEFGHIJK" in recorded
    assert "=>?\\xffABCDEFGHIJK" in incoming
    assert len(line) < 300  # two windows, not a file's worth of bytes


def test_a_normalizer_that_changes_its_argument_changes_no_other_cassette(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    """Parsed bodies are cached by their bytes: a normalizer of one cassette that deletes a
    field in place (the usual way to write one) must not delete it for every other
    cassette that reads the same bytes, where ``user`` still counts."""

    def without_user(body: Any) -> Any:
        body.pop("user", None)
        return body

    url = f"{any_server[0]}/v1/chat/completions"
    alice = {"model": "m", "user": "alice", "messages": [{"role": "user", "content": "hi"}]}
    bob = {**alice, "user": "bob"}
    leaves_out_user = {"normalizers": [without_user], "sdk_defaults": False}
    for name, match in (("lenient", leaves_out_user), ("strict", None)):
        with llmcassette.use_cassette(tmp_path / name, record_mode="once", match=match):
            httpx2.post(url, json=alice)
    with llmcassette.use_cassette(tmp_path / "lenient", record_mode="none", match=leaves_out_user):
        httpx2.post(url, json=bob)  # user left out: bob gets alice's recording
    with (
        llmcassette.use_cassette(tmp_path / "strict", record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as raised,
    ):
        httpx2.post(url, json=bob)
    assert raised.value.differences[0].path == "body.user"


def test_another_bedrock_guardrail_is_a_mismatch(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    """InvokeModel takes its guardrail in headers (boto3's ``guardrailIdentifier``): another
    guardrail may block what the recorded one let through."""
    url = f"{any_server[0]}/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke"

    def send(guardrail: dict[str, str]) -> None:
        requests.post(
            url,
            json={"messages": [{"role": "user", "content": "hi"}]},
            headers=guardrail,
            timeout=5,
        )

    mismatch = _mismatch(
        tmp_path,
        send,
        {"X-Amzn-Bedrock-GuardrailIdentifier": "gr-1", "X-Amzn-Bedrock-GuardrailVersion": "1"},
        {"X-Amzn-Bedrock-GuardrailIdentifier": "gr-1", "X-Amzn-Bedrock-GuardrailVersion": "2"},
    )
    assert mismatch.differences[0].path == "headers.x-amzn-bedrock-guardrailversion"
