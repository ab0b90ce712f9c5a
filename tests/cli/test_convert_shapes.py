"""`llmcassette convert` on every cassette shape vcrpy and its forks wrote (issue #25).

Hand-made fixtures, one per shape: vcrpy's early httpx stub (``status_code`` + ``content``),
langchain's gzip-compressed ``requests``/``responses`` YAML with ``!!binary`` bodies, an
Azure OpenAI stream whose first chunk is ``prompt_filter_results``, a Responses API stream
with a tool call, and a streamed tool call whose argument is a test password. Each must
convert with every body kept, show its answer and tool names, and replay through the real
openai SDK with the recorded tool arguments.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

import llmcassette
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.main import main

CHAT_URL = "https://api.openai.com/v1/chat/completions"
AZURE_URL = (
    "https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
    "?api-version=2024-06-01"
)
RESPONSES_URL = "https://api.openai.com/v1/responses"
JSON_HEADERS = {"content-type": ["application/json"]}
SSE_HEADERS = {"content-type": ["text/event-stream; charset=utf-8"]}
LOGIN_ARGUMENTS = '{"username": "frodo", "password": "mellon"}'


def sse(*chunks: dict[str, Any] | str) -> str:
    """An SSE body of ``data:`` events (a string chunk is sent as it is: ``[DONE]``)."""
    return "".join(
        f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}\n\n" for chunk in chunks
    )


def named_sse(*events: dict[str, Any]) -> str:
    """An SSE body of the Responses API: each event named by its ``type``."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


AZURE_STREAM = sse(
    {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [
            {"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}
        ],
    },
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "The answer"}),
    chunk({"content": " is 42."}),
    chunk({}, "stop"),
    "[DONE]",
)

PASSWORD_TOOL_STREAM = sse(
    chunk(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "login", "arguments": ""},
                }
            ],
        }
    ),
    *(
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        for piece in ('{"username": "fro', 'do", "pass', 'word": "mel', 'lon"}')
    ),
    chunk({}, "tool_calls"),
    "[DONE]",
)

_CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "get_weather"}
_RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-4o"}
RESPONSES_STREAM = named_sse(
    {
        "type": "response.created",
        "sequence_number": 0,
        "response": {**_RESPONSE, "output": [], "status": "in_progress"},
    },
    {
        "type": "response.output_item.added",
        "sequence_number": 1,
        "output_index": 0,
        "item": {**_CALL, "arguments": "", "status": "in_progress"},
    },
    {
        "type": "response.function_call_arguments.delta",
        "sequence_number": 2,
        "item_id": "fc_1",
        "output_index": 0,
        "delta": '{"city": ',
    },
    {
        "type": "response.function_call_arguments.delta",
        "sequence_number": 3,
        "item_id": "fc_1",
        "output_index": 0,
        "delta": '"Paris"}',
    },
    {
        "type": "response.function_call_arguments.done",
        "sequence_number": 4,
        "item_id": "fc_1",
        "output_index": 0,
        "arguments": '{"city": "Paris"}',
    },
    {
        "type": "response.output_item.done",
        "sequence_number": 5,
        "output_index": 0,
        "item": {**_CALL, "arguments": '{"city": "Paris"}', "status": "completed"},
    },
    {
        "type": "response.completed",
        "sequence_number": 6,
        "response": {
            **_RESPONSE,
            "status": "completed",
            "output": [{**_CALL, "arguments": '{"city": "Paris"}', "status": "completed"}],
        },
    },
)


def vcrpy_yaml(*interactions: tuple[dict[str, Any], dict[str, Any]]) -> str:
    return yaml.safe_dump(
        {
            "interactions": [{"request": rq, "response": rs} for rq, rs in interactions],
            "version": 1,
        }
    )


def request(uri: str, body: dict[str, Any], method: str = "POST") -> dict[str, Any]:
    return {"method": method, "uri": uri, "body": json.dumps(body), "headers": JSON_HEADERS}


def response(body: str | bytes, headers: dict[str, list[str]]) -> dict[str, Any]:
    return {"status": {"code": 200, "message": "OK"}, "headers": headers, "body": {"string": body}}


def converted(source: Path) -> list[cassette_file.Interaction]:
    assert main(["convert", str(source)]) == 0
    stem = source.name.split(".", 1)[0]
    target = source.with_name(stem + ".jsonl")
    return cassette_file.read(target.read_bytes(), target).interactions


def shown(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["show", str(path)]) == 0
    return capsys.readouterr().out


def client(base_url: str = "https://api.openai.com/v1") -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-not-a-real-key", base_url=base_url, max_retries=0)


# ------------------------------------------------------------------ the shapes


def test_the_early_httpx_stub_shape_keeps_its_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello from an old stub"},
                "finish_reason": "stop",
            }
        ],
    }
    text = json.dumps(answer)
    source = tmp_path / "old_stub.yaml"
    source.write_text(
        vcrpy_yaml(
            (
                request(CHAT_URL, {"model": "gpt-4o", "messages": []}, method="post"),
                {
                    "status_code": 200,
                    "http_version": "HTTP/1.1",
                    "headers": {
                        "content-type": ["application/json"],
                        "content-length": [str(len(text))],
                    },
                    "content": text,
                },
            )
        )
    )
    (item,) = converted(source)
    assert (item.method, item.status, item.response_body) == ("POST", 200, text.encode())
    assert "Hello from an old stub" in shown(tmp_path / "old_stub.jsonl", capsys)
    assert main(["check", str(tmp_path / "old_stub.jsonl")]) == 0
    with llmcassette.use_cassette(tmp_path / "old_stub.jsonl", record_mode="none"):
        reply = client().chat.completions.create(model="gpt-4o", messages=[])
    assert reply.choices[0].message.content == "Hello from an old stub"


def test_a_stream_whose_headers_a_hook_dropped_converts_event_by_event(tmp_path: Path) -> None:
    # OpenInference's conftests drop every response header before vcrpy writes: no
    # content-type says "stream", the SSE body still does, and it replays through the SDK.
    body = sse(chunk({"role": "assistant", "content": "Hi"}), chunk({}, "stop"), "[DONE]")
    source = tmp_path / "headerless.yaml"
    source.write_text(
        vcrpy_yaml((request(CHAT_URL, {"model": "gpt-4o", "stream": True}), response(body, {})))
    )
    (item,) = converted(source)
    assert (item.stream, item.response_body) == ("sse", body.encode())
    lines = (tmp_path / "headerless.jsonl").read_text().splitlines()
    assert sum(json.loads(line).get("type") == "event" for line in lines) == 3
    with llmcassette.use_cassette(tmp_path / "headerless.jsonl", record_mode="none"):
        stream = client().chat.completions.create(model="gpt-4o", messages=[], stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream) == "Hi"


def test_a_response_body_in_no_known_shape_is_refused_not_emptied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "odd.yaml"
    source.write_text(
        vcrpy_yaml(
            (
                request(CHAT_URL, {}),
                {"status_code": 200, "headers": JSON_HEADERS, "payload": '{"x": 1}'},
            )
        )
    )
    capsys.readouterr()
    assert main(["convert", str(source)]) == 2
    err = capsys.readouterr().err
    assert "interaction #1: the response has no body this reader knows" in err
    assert "payload" in err  # says what the response has
    assert not (tmp_path / "odd.jsonl").exists()  # nothing written


@pytest.mark.parametrize(
    ("first", "said"),
    [
        # gRPC, as pydantic-ai records xAI's SDK: one call per entry...
        (
            {"request_sample": {"model": "grok"}, "response_sample": {"id": "r1"}},
            "a gRPC recording (request_sample)",
        ),
        # ...or nested under the method of xAI's collections client.
        (
            {"collections_method": {"method": "create", "request_json": {}, "response_json": {}}},
            "a gRPC recording (collections_method)",
        ),
        # WebSocket frames, as its realtime tests record them.
        (
            {"kind": "message", "direction": "received", "data": {"type": "session.created"}},
            "a WebSocket message (received)",
        ),
        ({"kind": "close", "code": 1000, "reason": "", "ok": True}, "a WebSocket close"),
    ],
)
def test_grpc_and_websocket_recordings_are_refused_with_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: dict[str, Any], said: str
) -> None:
    (tmp_path / "src").mkdir()
    other = tmp_path / "src" / "other.yaml"
    other.write_text(yaml.safe_dump({"version": 1, "interactions": [first]}))
    http = tmp_path / "src" / "http.yaml"
    http.write_text(vcrpy_yaml((request(CHAT_URL, {}), response(b'{"ok": true}', JSON_HEADERS))))
    capsys.readouterr()
    assert main(["convert", "--out", str(tmp_path / "out"), str(tmp_path / "src")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{other}: interaction #1 is {said}, not an HTTP exchange; llmcassette records HTTP "
        "traffic only"
    ]
    assert (tmp_path / "out" / "http.jsonl").is_file()  # the HTTP cassette beside it converts
    assert not (tmp_path / "out" / "other.jsonl").exists()


def test_langchain_gzip_requests_responses_layout_with_binary_bodies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool_answer = {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_7",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"q": "gzip"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    body = json.dumps(tool_answer).encode()
    source = tmp_path / "langchain.yaml.gz"
    # langchain's CustomSerializer: the requests and responses lists, dumped as they are
    # (bytes become !!binary), gzip-compressed.
    dumped = yaml.safe_dump(
        {
            "requests": [
                {
                    "method": "POST",
                    "uri": CHAT_URL,
                    "body": json.dumps({"model": "gpt-4o", "messages": []}).encode(),
                    "headers": {"content-type": ["application/json"]},
                }
            ],
            "responses": [response(body, JSON_HEADERS)],
        }
    )
    assert "!!binary" in dumped
    source.write_bytes(gzip.compress(dumped.encode(), mtime=0))
    (item,) = converted(source)
    assert item.response_body == body
    out = shown(tmp_path / "langchain.jsonl", capsys)
    assert "lookup" in out
    # the other commands read it too, alone and in a folder
    for command in (["scan"], ["check"]):
        assert main([*command, str(source)]) == 0
        assert main([*command, str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["redact", "--dry-run", str(source)]) == 2  # says it will not rewrite gzip
    assert "gzip-compressed" in capsys.readouterr().err
    with llmcassette.use_cassette(tmp_path / "langchain.jsonl", record_mode="none"):
        reply = client().chat.completions.create(model="gpt-4o", messages=[])
    call = (reply.choices[0].message.tool_calls or [])[0]
    assert (call.function.name, call.function.arguments) == ("lookup", '{"q": "gzip"}')


def test_a_folder_scan_finds_a_secret_in_a_gzip_cassette(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaked = {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": CHAT_URL,
                    "body": None,
                    "headers": {"authorization": ["Bearer sk-proj-" + "a1B2" * 12]},
                },
                "response": response("{}", JSON_HEADERS),
            }
        ]
    }
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "leak.json.gz").write_bytes(
        gzip.compress(json.dumps(leaked).encode(), mtime=0)
    )
    capsys.readouterr()
    assert main(["scan", str(tmp_path)]) == 1
    assert "leak.json.gz" in capsys.readouterr().out


def test_an_azure_stream_with_a_filter_results_first_chunk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "azure.yaml"
    source.write_text(
        vcrpy_yaml(
            (
                request(AZURE_URL, {"messages": [], "model": "gpt-4o", "stream": True}),
                response(AZURE_STREAM, SSE_HEADERS),
            )
        )
    )
    (item,) = converted(source)
    assert item.response_body == AZURE_STREAM.encode()
    azure = openai.AzureOpenAI(
        api_key="not-a-real-key",
        api_version="2024-06-01",
        azure_endpoint="https://contoso.openai.azure.com",
        max_retries=0,
    )
    with llmcassette.use_cassette(tmp_path / "azure.jsonl", record_mode="none"):
        stream = azure.chat.completions.create(model="gpt-4o", messages=[], stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "The answer is 42."


def test_a_responses_stream_with_a_tool_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "responses.yaml"
    source.write_text(
        vcrpy_yaml(
            (
                request(RESPONSES_URL, {"model": "gpt-4o", "input": "weather?", "stream": True}),
                response(RESPONSES_STREAM, SSE_HEADERS),
            )
        )
    )
    (item,) = converted(source)
    assert item.response_body == RESPONSES_STREAM.encode()
    with llmcassette.use_cassette(tmp_path / "responses.jsonl", record_mode="none"):
        events = list(client().responses.create(model="gpt-4o", input="weather?", stream=True))
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [e.arguments for e in done] == ['{"city": "Paris"}']


def test_a_streamed_tool_call_with_a_password_argument_replays_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "login.yaml"
    source.write_text(
        vcrpy_yaml(
            (
                request(CHAT_URL, {"model": "gpt-4o", "messages": [], "stream": True}),
                response(PASSWORD_TOOL_STREAM, SSE_HEADERS),
            )
        )
    )
    (item,) = converted(source)
    # The model produced "mellon": it is the recorded answer, not a credential to redact.
    assert item.response_body == PASSWORD_TOOL_STREAM.encode()
    with llmcassette.use_cassette(tmp_path / "login.jsonl", record_mode="none"):
        stream = client().chat.completions.create(model="gpt-4o", messages=[], stream=True)
        arguments = "".join(
            call.function.arguments or ""
            for c in stream
            for call in (c.choices[0].delta.tool_calls or [])
            if call.function is not None
        )
    assert json.loads(arguments) == json.loads(LOGIN_ARGUMENTS)


# ------------------------------------------------------------------ show (issue #25 item 3)


@pytest.mark.parametrize(
    ("name", "uri", "body", "expected"),
    [
        pytest.param("azure", AZURE_URL, AZURE_STREAM, "The answer is 42."),
        pytest.param("responses", RESPONSES_URL, RESPONSES_STREAM, "get_weather"),
        pytest.param("login", CHAT_URL, PASSWORD_TOOL_STREAM, "login"),
    ],
)
def test_show_prints_the_answer_and_tool_names_of_converted_streams(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    uri: str,
    body: str,
    expected: str,
) -> None:
    source = tmp_path / f"{name}.yaml"
    source.write_text(vcrpy_yaml((request(uri, {"stream": True}), response(body, SSE_HEADERS))))
    converted(source)
    assert expected in shown(tmp_path / f"{name}.jsonl", capsys)


# ------------------------------------------------------------------ redaction of responses


def test_words_in_a_credential_named_header_are_kept_a_real_credential_is_not(
    tmp_path: Path,
) -> None:
    message = "Invalid JWT form. A JWT consists of three parts separated by dots."
    token = "Zx81kQ2mP9vT4wR7yL3nQ8sD"
    source = tmp_path / "clerk.yaml"
    source.write_text(
        vcrpy_yaml(
            (
                request(CHAT_URL, {"model": "gpt-4o"}),
                response(
                    '{"error": "unauthorized"}',
                    {
                        **JSON_HEADERS,
                        "x-clerk-auth-message": [message],
                        "x-clerk-auth-token": [token],
                    },
                ),
            )
        )
    )
    (item,) = converted(source)
    assert item.response_headers["x-clerk-auth-message"] == [message]
    assert item.response_headers["x-clerk-auth-token"] == ["<REDACTED:x-clerk-auth-token>"]


def test_the_scan_still_refuses_a_credential_in_a_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What the redactor leaves (the model's password) the fail-closed scan leaves too; what
    # it must replace (an issued token, a key shape in model text) the scan still finds.
    body = {"access_token": "ya29-" + "Tok3nValue" * 3, "note": "mellon is the password"}
    leaked = {
        "interactions": [
            {
                "request": request(CHAT_URL, {}),
                "response": response(json.dumps(body), JSON_HEADERS),
            }
        ]
    }
    (tmp_path / "token.json").write_text(json.dumps(leaked))
    capsys.readouterr()
    assert main(["scan", str(tmp_path / "token.json")]) == 1
    assert "access_token" in capsys.readouterr().out
    stream = tmp_path / "stream.yaml"
    stream.write_text(
        vcrpy_yaml(
            (
                request(CHAT_URL, {"stream": True}),
                response(
                    sse(chunk({"content": "your key: sk-proj-" + "a1B2" * 12}), "[DONE]"),
                    SSE_HEADERS,
                ),
            )
        )
    )
    assert main(["scan", str(stream)]) == 1
    (item,) = converted(stream)
    assert b"a1B2a1B2" not in item.response_body


# ------------------------------------------------------------------ issue #18 item 3


def test_botocore_header_reprs_are_decoded_and_methods_upper_cased(tmp_path: Path) -> None:
    source = tmp_path / "bedrock.yaml"
    source.write_text(
        vcrpy_yaml(
            (
                {
                    "method": "post",
                    "uri": "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse",
                    "body": "{}",
                    "headers": {
                        "Content-Type": ["b'application/json'"],
                        "User-Agent": ['b"Boto3/1.35.0 md/Botocore#1.35.0"'],
                        "amz-sdk-invocation-id": [b"5d1c-binary"],
                    },
                },
                response('{"output": {}}', JSON_HEADERS),
            )
        )
    )
    (item,) = converted(source)
    assert item.method == "POST"
    assert item.request_headers["Content-Type"] == ["application/json"]
    assert item.request_headers["User-Agent"] == ["Boto3/1.35.0 md/Botocore#1.35.0"]
    assert item.request_headers["amz-sdk-invocation-id"] == ["5d1c-binary"]


def test_out_mirrors_the_source_tree(tmp_path: Path) -> None:
    tree = tmp_path / "cassettes"
    for module in ("test_openai", "test_anthropic"):
        (tree / module).mkdir(parents=True)
        (tree / module / "test_hello.yaml").write_text(
            vcrpy_yaml((request(CHAT_URL, {"m": module}), response("{}", JSON_HEADERS)))
        )
    out = tmp_path / "converted"
    assert main(["convert", "--out", str(out), str(tree)]) == 0
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl"))
    assert written == ["test_anthropic/test_hello.jsonl", "test_openai/test_hello.jsonl"]
    for module in ("test_openai", "test_anthropic"):
        (item,) = cassette_file.read(
            (out / module / "test_hello.jsonl").read_bytes(), "x"
        ).interactions
        assert json.loads(item.request_body or b"") == {"m": module}
