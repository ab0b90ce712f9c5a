"""`llmcassette show` assembles answers exactly as the SDKs do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import llmcassette
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.main import main
from llmcassette.cli.show import assemble
from llmcassette.testing import LocalProvider

TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def only_interaction(path: Path) -> Any:
    (item,) = cassette_file.read(path.read_bytes(), path).interactions
    return item


def test_openai_chat_stream_text_and_usage(tmp_path: Path) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c"):
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-t", max_retries=0)
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "Name a river"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    answer = assemble(only_interaction(tmp_path / "c.jsonl"))
    assert answer.text == "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage is not None
    assert answer.usage == chunks[-1].usage.model_dump(exclude_none=True)


def test_openai_tool_call_stream(tmp_path: Path) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c"):
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-t", max_retries=0)
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=[TOOL],
            stream=True,
        )
        arguments = "".join(
            c.choices[0].delta.tool_calls[0].function.arguments or ""
            for c in stream
            if c.choices and c.choices[0].delta.tool_calls
        )
    answer = assemble(only_interaction(tmp_path / "c.jsonl"))
    assert answer.tool_calls == [{"name": "get_weather", "arguments": arguments}]


def test_responses_stream(tmp_path: Path) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c"):
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-t", max_retries=0)
        events = list(client.responses.create(model="gpt-4o-mini", input="Say hi", stream=True))
    final = events[-1].response  # type: ignore[union-attr]
    answer = assemble(only_interaction(tmp_path / "c.jsonl"))
    assert answer.text == final.output_text
    assert answer.usage == final.usage.model_dump(exclude_none=True)  # type: ignore[union-attr]


@pytest.mark.parametrize("tools", [False, True])
def test_anthropic_stream(tmp_path: Path, tools: bool) -> None:
    extra: Any = {"tools": [{"name": "lookup", "input_schema": TOOL["function"]["parameters"]}]}
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c"):
        client = anthropic.Anthropic(
            base_url=provider.anthropic_base_url, api_key="sk-ant-t", max_retries=0
        )
        with client.messages.stream(
            model="claude-haiku-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            **(extra if tools else {}),
        ) as stream:
            final = stream.get_final_message()
    answer = assemble(only_interaction(tmp_path / "c.jsonl"))
    assert answer.text == "".join(b.text for b in final.content if b.type == "text")
    blocks = [b for b in final.content if b.type == "tool_use"]
    assert len(blocks) == (1 if tools else 0)
    assert [call["name"] for call in answer.tool_calls] == [b.name for b in blocks]
    for call, block in zip(answer.tool_calls, blocks, strict=True):
        assert json.loads(call["arguments"]) == block.input
    assert answer.usage is not None
    assert answer.usage["output_tokens"] == final.usage.output_tokens


def test_show_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c"):
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-t", max_retries=0)
        list(
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
            )
        )
    assert main(["show", str(tmp_path / "c.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "#1 POST http://127.0.0.1:" in out
    assert "  user: Hi" in out
    assert "  answer: You said: Hi" in out
    assert "  stream: " in out
    assert main(["show", "--json", str(tmp_path / "c.jsonl")]) == 0
    (shown,) = json.loads(capsys.readouterr().out)["interactions"]
    assert shown["answer"]["text"] == "You said: Hi"
    assert shown["model"] == "gpt-4o-mini"
    assert main(["show", "--raw", str(tmp_path / "c.jsonl")]) == 0
    assert capsys.readouterr().out == (tmp_path / "c.jsonl").read_text()
    assert main(["show", str(tmp_path / "missing.jsonl")]) == 2


GEMINI_TOOLS: Any = [
    {
        "functionDeclarations": [
            {
                "name": "get_weather",
                "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
            }
        ]
    }
]


@pytest.mark.parametrize("tools", [None, GEMINI_TOOLS])
def test_gemini_json_array_stream_assembles_as_its_sse_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tools: Any
) -> None:
    import httpx

    ask: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "Paris"}]}]}
    if tools:
        ask["tools"] = tools
    with LocalProvider() as provider, llmcassette.use_cassette(tmp_path / "c"):
        url = f"{provider.gemini_base_url}/v1beta/models/gemini-2.0-flash:streamGenerateContent"
        for query in ("", "?alt=sse"):
            with httpx.stream("POST", url + query, json=ask, headers={"x-goog-api-key": "k"}) as r:
                r.read()
    path = tmp_path / "c.jsonl"
    array, sse = cassette_file.read(path.read_bytes(), path).interactions
    assert (array.stream, sse.stream) == ("json-array", "sse")
    assert assemble(array) == assemble(sse)
    answer = assemble(array)
    assert answer.kind == "gemini"
    if tools:
        assert [call["name"] for call in answer.tool_calls] == ["get_weather"]
        assert json.loads(answer.tool_calls[0]["arguments"]) == {"city": "Paris"}
    else:
        assert answer.text == "You said: Paris"
    assert main(["show", "--json", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)["interactions"]
    assert shown[0]["answer"] == shown[1]["answer"]
    assert shown[0]["model"] == "gemini-2.0-flash"
    assert shown[0]["events"] == shown[1]["events"] >= 1
