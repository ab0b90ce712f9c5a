"""``llmcassette convert`` + ``show`` on the shared corpus of real recorded traffic (#20).

Every streamed response's answer text and tool names, as ``show --json`` prints them, are
checked against text assembled here, independently and simply, from the raw SSE of the
original vcrpy YAML. The corpus lives beside the repository (``../shared/corpus``); a fresh
clone has none, and the test skips.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmcassette.cassette import events
from llmcassette.cli.main import main
from llmcassette.transport import integrity

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "pydantic-ai"


def _sse_data(text: str) -> list[Any]:
    """The JSON of every ``data:`` line (each corpus event has a single data line)."""
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            with contextlib.suppress(ValueError):  # [DONE]
                out.append(json.loads(line[5:].strip()))
    return [data for data in out if isinstance(data, dict)]


def _chat(datas: list[Any]) -> tuple[str, list[str]]:
    text, names = "", {}
    for data in datas:
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                name = (call.get("function") or {}).get("name")
                if name:
                    names.setdefault(call.get("index", 0), name)  # first time seen is the name
    return text, [names[i] for i in sorted(names)]


def _responses(datas: list[Any]) -> tuple[str, list[str]]:
    text = "".join(d["delta"] for d in datas if d.get("type") == "response.output_text.delta")
    names = [
        d["item"]["name"]
        for d in datas
        if d.get("type") == "response.output_item.added" and d["item"]["type"] == "function_call"
    ]
    return text, names


def _anthropic(datas: list[Any]) -> tuple[str, list[str]]:
    text = "".join(
        d["delta"]["text"]
        for d in datas
        if d.get("type") == "content_block_delta" and d["delta"].get("type") == "text_delta"
    )
    names = [
        d["content_block"]["name"]
        for d in datas
        if d.get("type") == "content_block_start"
        and d["content_block"]["type"].endswith("tool_use")
    ]
    return text, names


def _gemini(datas: list[Any]) -> tuple[str, list[str]]:
    parts = [
        part
        for d in datas
        for candidate in d.get("candidates") or []
        for part in (candidate.get("content") or {}).get("parts") or []
    ]
    text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    return text, [p["functionCall"]["name"] for p in parts if "functionCall" in p]


def _expected(uri: str, body: str) -> tuple[str, list[str]] | None:
    datas = _sse_data(body)
    if "generativelanguage" in uri or "aiplatform" in uri:
        return _gemini(datas)
    if uri.split("?")[0].endswith("/chat/completions"):
        return _chat(datas)
    if uri.split("?")[0].endswith("/responses"):
        return _responses(datas)
    if uri.split("?")[0].endswith("/messages"):
        return _anthropic(datas)
    return None


def _yaml_streams(path: Path) -> list[tuple[int, str, str] | None]:
    """For each interaction: (position, uri, SSE text) when the response is SSE, else None."""
    out: list[tuple[int, str, str] | None] = []
    for position, interaction in enumerate(yaml.safe_load(path.read_text())["interactions"]):
        response = interaction["response"]
        types = response["headers"].get("content-type") or [""]
        body = (response.get("body") or {}).get("string")
        if "text/event-stream" in types[0] and isinstance(body, str):
            out.append((position, interaction["request"]["uri"], body))
        else:
            out.append(None)
    return out


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared pydantic-ai corpus is not here")
def test_show_assembles_every_streamed_answer_of_the_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = [p for p in sorted(CORPUS.rglob("*.yaml")) if "- request:" in p.read_text()]
    streamed = assembled = 0
    event_stream = sum(p.read_text().count("application/vnd.amazon.eventstream") for p in sources)
    for number, source in enumerate(sources):
        out = tmp_path / str(number)
        assert main(["convert", "--out", str(out), str(source)]) == 0
        (converted,) = out.glob("*.jsonl")
        capsys.readouterr()
        assert main(["show", "--json", str(converted)]) == 0
        shown = json.loads(capsys.readouterr().out)["interactions"]
        for stream in _yaml_streams(source):
            if stream is None:
                continue
            position, uri, body = stream
            expected = _expected(uri, body)
            assert expected is not None, f"{source}: a stream of an unknown provider: {uri}"
            streamed += 1
            answer = shown[position]["answer"]
            where = f"{source.relative_to(CORPUS)} #{position + 1}"
            assert answer["text"] == expected[0], where
            assert [call["name"] for call in answer["tool_calls"]] == expected[1], where
            assembled += 1
    print(
        f"{len(sources)} cassettes, {streamed} SSE streams, {assembled} assembled; "
        f"{event_stream} mentions of Bedrock event-stream (binary, not assembled)"
    )
    assert streamed > 20


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared pydantic-ai corpus is not here")
def test_every_corpus_stream_is_judged_complete_and_cut_without_its_last_event(
    tmp_path: Path,
) -> None:
    sources = [p for p in sorted(CORPUS.rglob("*.yaml")) if "- request:" in p.read_text()]
    judged = 0
    for source in sources:
        for stream in _yaml_streams(source):
            if stream is None:
                continue
            pieces = events.split_events(events.SSE, stream[2])
            assert integrity.judge(events.SSE, pieces) is True, source
            with_data = [
                i
                for i, p in enumerate(pieces)
                if isinstance(events.parse_data(events.read_event(events.SSE, p)[1]), dict)
            ]
            if len(with_data) >= 2:  # cut before the last JSON event (not OpenRouter's [DONE])
                verdict = integrity.judge(events.SSE, pieces[: with_data[-1]])
                assert isinstance(verdict, str), source
                judged += 1
    assert judged > 20


@pytest.mark.parametrize(
    ("events_text", "complete"),
    [
        ('event: message-start\ndata: {"type":"message-start"}\n\n'
         'event: message-end\ndata: {"type":"message-end"}\n\n', True),
        ('event: message-start\ndata: {"type":"message-start"}\n\n'
         'event: content-delta\ndata: {"type":"content-delta"}\n\n', False),
        ('data: {"object":"","choices":[],"prompt_filter_results":[]}\n\n'
         'data: {"object":"chat.completion.chunk","choices":[]}\n\n', False),
        ('data: {"object":"","choices":[],"prompt_filter_results":[]}\n\n'
         "data: [DONE]\n\n", True),
    ],
)  # fmt: skip
def test_cohere_and_azure_stream_endings(events_text: str, complete: bool) -> None:
    verdict = integrity.judge(events.SSE, events.split_events(events.SSE, events_text))
    assert verdict is not None
    assert (verdict is True) == complete
