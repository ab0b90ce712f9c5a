"""A cassette as a person reads it: each request, the assembled answer, usage and timing.

Streams are assembled the way the SDKs assemble them: OpenAI Chat Completions deltas
(text and tool-call arguments), Responses API events, Anthropic Messages content blocks,
Ollama-style NDJSON. Bodies of other kinds are summarized as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from llmcassette.cassette import events
from llmcassette.cassette.jsonl import Interaction


@dataclass
class Answer:
    """What a response said, assembled."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    kind: str = "unknown"


@dataclass
class Shown:
    """One interaction, summarized."""

    number: int
    method: str
    uri: str
    status: int
    model: str | None
    prompt: list[str]
    tools: list[str]
    answer: Answer
    events: int
    first_event: float | None
    duration: float | None
    cut_short: bool


def _json(data: bytes | None) -> Any:
    try:
        return json.loads(data or b"")
    except ValueError:
        return None


def event_payloads(item: Interaction) -> list[tuple[str | None, Any]]:
    """The events of a streamed response as ``(event name, parsed data)``; [] for a body."""
    if item.stream is None:
        return []
    return events.payloads(item.stream, item.response_body.decode("utf-8", "replace"))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return ""


def assemble(item: Interaction) -> Answer:
    """The answer of one interaction, as the provider's SDK would assemble it."""
    payloads = event_payloads(item)
    if payloads:
        first = next((data for _, data in payloads if isinstance(data, dict)), {})
        if first.get("object") == "chat.completion.chunk":
            return _openai_chat_stream(payloads)
        if str(first.get("type", "")).startswith("response."):
            return _responses_stream(payloads)
        if first.get("type") == "message_start":
            return _anthropic_stream(payloads)
        if "done" in first:
            return _ndjson_stream(payloads)
        return Answer(kind="stream")
    body = _json(item.response_body)
    if not isinstance(body, dict):
        return Answer(text=item.response_body.decode("utf-8", "replace")[:2000], kind="text")
    if body.get("object") == "chat.completion":
        message = (body.get("choices") or [{}])[0].get("message") or {}
        calls = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in message.get("tool_calls") or []
        ]
        return Answer(str(message.get("content") or ""), calls, body.get("usage"), "openai-chat")
    if body.get("object") == "response":
        return Answer(_responses_output(body), [], body.get("usage"), "openai-responses")
    if body.get("type") == "message":
        text = "".join(
            b.get("text", "") for b in body.get("content", []) if b.get("type") == "text"
        )
        calls = [
            {"name": b["name"], "arguments": json.dumps(b.get("input", {}))}
            for b in body.get("content", [])
            if b.get("type") == "tool_use"
        ]
        return Answer(text, calls, body.get("usage"), "anthropic-messages")
    if "error" in body:
        return Answer(json.dumps(body["error"]), [], None, "error")
    return Answer(json.dumps(body)[:2000], [], None, "json")


def _openai_chat_stream(payloads: list[tuple[str | None, Any]]) -> Answer:
    answer = Answer(kind="openai-chat")
    calls: dict[int, dict[str, Any]] = {}
    for _, data in payloads:
        if not isinstance(data, dict):
            continue
        if data.get("usage"):
            answer.usage = data["usage"]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            answer.text += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
    answer.tool_calls = [calls[index] for index in sorted(calls)]
    return answer


def _responses_output(response: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for item in response.get("output", [])
        if item.get("type") == "message"
        for part in item.get("content", [])
        if part.get("type") == "output_text"
    )


def _responses_stream(payloads: list[tuple[str | None, Any]]) -> Answer:
    answer = Answer(kind="openai-responses")
    deltas = []
    for _, data in payloads:
        if not isinstance(data, dict):
            continue
        if data.get("type") == "response.output_text.delta":
            deltas.append(data.get("delta", ""))
        elif data.get("type") == "response.function_call_arguments.done":
            answer.tool_calls.append({"name": data.get("name", ""), "arguments": data["arguments"]})
        elif data.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            response = data.get("response") or {}
            answer.usage = response.get("usage")
            answer.text = _responses_output(response)
    if not answer.text:
        answer.text = "".join(deltas)
    return answer


def _anthropic_stream(payloads: list[tuple[str | None, Any]]) -> Answer:
    answer = Answer(kind="anthropic-messages")
    tools: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for _, data in payloads:
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if kind == "message_start":
            usage.update((data.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") == "tool_use":
                tools[data.get("index", 0)] = {"name": block.get("name", ""), "arguments": ""}
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                answer.text += delta.get("text", "")
            elif delta.get("type") == "input_json_delta" and data.get("index", 0) in tools:
                tools[data.get("index", 0)]["arguments"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            usage.update(data.get("usage") or {})
    answer.tool_calls = [tools[index] for index in sorted(tools)]
    answer.usage = usage or None
    return answer


def _ndjson_stream(payloads: list[tuple[str | None, Any]]) -> Answer:
    answer = Answer(kind="ndjson")
    for _, data in payloads:
        if not isinstance(data, dict):
            continue
        message = data.get("message") or {}
        answer.text += message.get("content") or data.get("response") or ""
        if data.get("done"):
            answer.usage = {
                k: v for k, v in data.items() if k.endswith("_count") or k.endswith("duration")
            }
    return answer


def summarize(number: int, item: Interaction) -> Shown:
    """One interaction as ``llmcassette show`` prints it."""
    request = _json(item.request_body)
    request = request if isinstance(request, dict) else {}
    prompt: list[str] = []
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            prompt.append(f"{message.get('role', '?')}: {_content_text(message.get('content'))}")
    if isinstance(request.get("input"), str):
        prompt.append(f"user: {request['input']}")
    if isinstance(request.get("prompt"), str):
        prompt.append(f"user: {request['prompt']}")
    tools = []
    for tool in request.get("tools") or []:
        if isinstance(tool, dict):
            tools.append(str((tool.get("function") or tool).get("name", "?")))
    times = item.event_times
    return Shown(
        number=number,
        method=item.method,
        uri=item.uri,
        status=item.status,
        model=request.get("model"),
        prompt=prompt,
        tools=tools,
        answer=assemble(item),
        events=len(event_payloads(item)),
        first_event=times[0] if times else None,
        duration=times[-1] if times else None,
        cut_short=bool(item.end_extra.get("cut_short")),
    )


def render(shown: Shown, width: int = 100) -> str:
    """The text ``llmcassette show`` prints for one interaction."""

    def cut(text: str) -> str:
        text = text.replace("\n", " ")
        return text if len(text) <= width else text[: width - 1] + "…"

    lines = [f"#{shown.number} {shown.method} {shown.uri} -> {shown.status}"]
    if shown.model:
        lines.append(f"  model: {shown.model}")
    lines.extend(f"  {cut(turn)}" for turn in shown.prompt)
    if shown.tools:
        lines.append(f"  tools: {', '.join(shown.tools)}")
    lines.append(f"  answer: {shown.answer.text}")
    for call in shown.answer.tool_calls:
        lines.append(f"  tool call: {call['name']}({call['arguments']})")
    if shown.answer.usage:
        lines.append(f"  usage: {json.dumps(shown.answer.usage, sort_keys=True)}")
    if shown.events:
        timing = ""
        if shown.first_event is not None and shown.duration is not None:
            timing = f", first after {shown.first_event:.3f} s, last after {shown.duration:.3f} s"
        cut_note = ", cut short" if shown.cut_short else ""
        events = "1 event" if shown.events == 1 else f"{shown.events} events"
        lines.append(f"  stream: {events}{timing}{cut_note}")
    return "\n".join(lines)
