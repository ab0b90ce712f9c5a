"""A cassette as a person reads it: each request, the assembled answer, usage and timing.

Streams are assembled the way the SDKs assemble them: OpenAI Chat Completions deltas
(also Mistral, Groq, DeepSeek, OpenRouter: text, reasoning and tool calls), Responses API
events, Anthropic Messages content blocks, Gemini chunks (``alt=sse`` or one JSON array),
Cohere v2 typed events, Bedrock ConverseStream event dicts, Ollama-style NDJSON. A
stream's kind is judged from all of its events. Bodies of other kinds are summarized as
they are.
"""

from __future__ import annotations

import json
import re
import textwrap
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llmcassette.cassette import events, eventstream
from llmcassette.cassette.jsonl import Interaction
from llmcassette.sessions import NO_SESSION


@dataclass
class Answer:
    """What a response said, assembled."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    kind: str = "unknown"
    reasoning: str = ""


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
    # The llmcassette.session the request was made in (None outside any).
    session: str | None = None


def _json(data: bytes | None) -> Any:
    try:
        return json.loads(data or b"")
    except ValueError:
        return None


def event_payloads(item: Interaction) -> list[tuple[str | None, Any]]:
    """The events of a streamed response as ``(event name, parsed data)``; [] for a body."""
    if item.stream is None:
        return []
    if item.stream == eventstream.KIND:  # Bedrock frames, as boto3 hands them to its caller
        return eventstream.payloads(item.response_body)
    return events.payloads(item.stream, item.response_body.decode("utf-8", "replace"))


def _part_text(part: Any) -> str:
    """The words of one content part of any provider, or a short tag for a tool part."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("text"), str):  # OpenAI, Anthropic, Gemini, Bedrock, Cohere
        return str(part["text"])
    # Gemini takes its proto's field names in either spelling (llm-gemini sends snake_case).
    call = part.get("functionCall") or part.get("function_call") or part.get("toolUse")
    if part.get("type") in ("tool_use", "function_call") or isinstance(call, dict):
        return f"[tool call {(call or part).get('name', '?')}]"
    results = ("functionResponse", "function_response", "toolResult")
    if part.get("type") == "tool_result" or any(key in part for key in results):
        return "[tool result]"
    return _media_tag(part)


# Content parts that carry media, by their ``type`` (OpenAI Chat and Responses, Anthropic)
# or their one key (Bedrock), and what they are shown as.
_MEDIA_TYPES = {
    "image": "image", "image_url": "image", "input_image": "image",
    "audio": "audio", "input_audio": "audio", "video": "video",
    "document": "document", "file": "file", "input_file": "file",
}  # fmt: skip


def _media_tag(part: dict[str, Any]) -> str:
    """``[image]``, ``[audio]``, ``[application/pdf]``...: an image or file sent in a turn,
    named, not printed (it is base64 or a URL); "" for a part that is none."""
    kind = part.get("type")
    if isinstance(kind, str) and kind in _MEDIA_TYPES:
        return f"[{_MEDIA_TYPES[kind]}]"
    for key in ("inlineData", "inline_data", "fileData", "file_data"):  # Gemini
        data = part.get(key)
        if isinstance(data, dict):
            mime = data.get("mimeType") or data.get("mime_type")
            return f"[{mime}]" if isinstance(mime, str) else "[file]"
    bedrock = [key for key in ("image", "video", "document", "audio") if key in part]
    return f"[{bedrock[0]}]" if bedrock and kind is None else ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(text for text in map(_part_text, content) if text).strip()
    return ""


def _turn(message: dict[str, Any]) -> str | None:
    """One request turn as ``role: text``; None for an item that says nothing readable."""
    role = str(message.get("role") or "")
    role = "assistant" if role == "model" else role  # Gemini's name would read as the model field
    kind = message.get("type")
    if kind == "function_call":  # a Responses API input item
        return f"assistant: [tool call {message.get('name', '?')}]"
    if kind == "function_call_output":
        return f"tool: {_content_text(message.get('output'))}"
    if kind == "reasoning":  # a reasoning item a Responses API request sends back
        summary = _content_text(message.get("content") or message.get("summary"))
        return f"assistant: [reasoning] {summary}".rstrip()
    text = _content_text(message.get("content", message.get("parts")))
    calls = [
        f"[tool call {(c.get('function') or c).get('name', '?')}]"
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    text = " ".join(piece for piece in [text, *calls] if piece)
    if not role and not text:
        return None
    return f"{role or '?'}: {text}"


def _request_turns(request: dict[str, Any]) -> list[str]:
    """The conversation a request sends: Chat/Messages/Cohere/Bedrock ``messages``,
    Responses ``input``, Gemini ``contents``, completion ``prompt``."""
    turns: list[str] = []
    for key in ("messages", "contents", "input"):
        value = request.get(key)
        if isinstance(value, str):
            turns.append(f"user: {value}")
        elif isinstance(value, list):
            for message in value:
                if isinstance(message, dict) and (turn := _turn(message)) is not None:
                    turns.append(turn)
    if isinstance(request.get("prompt"), str):
        turns.append(f"user: {request['prompt']}")
    return turns


def _request_tools(request: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in request.get("tools") or (request.get("toolConfig") or {}).get("tools") or []:
        if not isinstance(tool, dict):
            continue
        declarations = tool.get("functionDeclarations")  # Gemini: several per tool entry
        if isinstance(declarations, list):
            names.extend(str(d.get("name", "?")) for d in declarations if isinstance(d, dict))
            continue
        spec = tool.get("function") or tool.get("toolSpec") or tool
        if isinstance(spec, dict):
            names.append(str(spec.get("name") or spec.get("type") or next(iter(spec), "?")))
    return names


def stream_family(datas: list[Any]) -> str:
    """Which provider's stream this is, judged from all its events (not only the first:
    Azure OpenAI opens with a ``prompt_filter_results`` chunk whose ``object`` is "")."""
    dicts = [data for data in datas if isinstance(data, dict)]
    types = {str(data.get("type", "")) for data in dicts}
    if any(data.get("object") == "chat.completion.chunk" for data in dicts):
        return "openai-chat"
    if any(t.startswith("response.") for t in types):
        return "openai-responses"
    if "message_start" in types:
        return "anthropic-messages"
    if types & {"message-start", "content-delta", "tool-call-start", "message-end"}:
        return "cohere-chat"
    if any("candidates" in data or "usageMetadata" in data for data in dicts):
        return "gemini"
    if any(key in data for data in dicts for key in _BEDROCK_EVENTS):
        return "bedrock-converse"
    if any("choices" in data for data in dicts):
        return "openai-chat"  # OpenAI-style providers that leave ``object`` out
    if any("done" in data for data in dicts):
        return "ndjson"
    return "stream"


_BEDROCK_EVENTS = ("messageStart", "contentBlockStart", "contentBlockDelta", "messageStop")


def assemble(item: Interaction) -> Answer:
    """The answer of one interaction, as the provider's SDK would assemble it."""
    payloads = event_payloads(item)
    if payloads:
        return assemble_events(payloads)
    body = _json(item.response_body)
    if isinstance(body, list) and any(
        isinstance(chunk, dict) and "candidates" in chunk for chunk in body
    ):  # Gemini's streamGenerateContent without alt=sse: one JSON array of chunks
        return _gemini(body)
    if not isinstance(body, dict):
        return _as_text(item)
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    if body.get("object") == "chat.completion" or "message" in first:
        message = first.get("message") or {}
        calls = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in message.get("tool_calls") or []
        ]
        function = message.get("function_call")  # the functions API, before tool_calls
        if isinstance(function, dict):
            calls.append({"name": function["name"], "arguments": function.get("arguments", "")})
        text = str(message.get("content") or "") or _refused(message.get("refusal"))
        reasoning = str(message.get("reasoning_content") or message.get("reasoning") or "")
        return Answer(text, calls, body.get("usage"), "openai-chat", reasoning)
    if body.get("object") == "text_completion" or "text" in first:  # the Completions API
        return Answer(str(first.get("text") or ""), [], body.get("usage"), "openai-completions")
    if body.get("object") == "response":
        text, calls, reasoning = _responses_output(body)
        return Answer(text, calls, body.get("usage"), "openai-responses", reasoning)
    if body.get("type") == "message":
        blocks = [b for b in body.get("content", []) if isinstance(b, dict)]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        thinking = "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
        calls = [
            {"name": b["name"], "arguments": json.dumps(b.get("input", {}))}
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        return Answer(text, calls, body.get("usage"), "anthropic-messages", thinking)
    if "candidates" in body:
        return _gemini([body])
    output = body.get("output")
    if isinstance(output, dict) and isinstance(output.get("message"), dict):
        return _bedrock_message(body)
    if isinstance(body.get("message"), dict) and "finish_reason" in body:
        return _cohere_message(body)
    if "error" in body:
        return Answer(json.dumps(body["error"]), [], None, "error")
    return Answer(json.dumps(body)[:2000], [], None, "json")


def assemble_events(payloads: list[tuple[str | None, Any]]) -> Answer:
    """The answer of a stream given as ``(event name, parsed data)`` pairs."""
    datas = [data for _, data in payloads]
    family = stream_family(datas)
    if family == "openai-chat":
        return _openai_chat_stream(datas)
    if family == "openai-responses":
        return _responses_stream(datas)
    if family == "anthropic-messages":
        return _anthropic_stream(datas)
    if family == "cohere-chat":
        return _cohere_stream(datas)
    if family == "gemini":
        return _gemini([data for data in datas if isinstance(data, dict)])
    if family == "bedrock-converse":
        return _bedrock_stream(datas)
    if family == "ndjson":
        return _ndjson_stream(datas)
    if any(name == "output" for name, _ in payloads):  # Replicate: `event: output`, plain text
        text = "".join(
            data for name, data in payloads if name == "output" and isinstance(data, str)
        )
        return Answer(text, kind="replicate")
    return Answer(kind="stream")


def _add_name(slot: dict[str, Any], name: str) -> None:
    # OpenAI sends a tool name once; OpenRouter and Novita repeat it whole in every delta,
    # so a piece equal to what is already there is a repeat, not a continuation.
    if name and name != slot["name"]:
        slot["name"] += name


def _openai_chat_stream(datas: list[Any]) -> Answer:
    answer = Answer(kind="openai-chat")
    calls: dict[int, dict[str, Any]] = {}
    refusal = ""
    for data in datas:
        if not isinstance(data, dict):
            continue
        if data.get("usage"):
            answer.usage = data["usage"]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            # ``text``: a chunk of the Completions API, which streams no delta.
            answer.text += delta.get("content") or choice.get("text") or ""
            refusal += delta.get("refusal") or ""
            # DeepSeek and Groq call it reasoning_content, OpenRouter reasoning.
            answer.reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"name": "", "arguments": ""})
                function = call.get("function") or {}
                _add_name(slot, function.get("name") or "")
                slot["arguments"] += function.get("arguments") or ""
            function = delta.get("function_call")  # the functions API, before tool_calls
            if isinstance(function, dict):
                slot = calls.setdefault(-1, {"name": "", "arguments": ""})
                _add_name(slot, function.get("name") or "")
                slot["arguments"] += function.get("arguments") or ""
    answer.tool_calls = [calls[index] for index in sorted(calls)]
    answer.text = answer.text or _refused(refusal)
    return answer


def _refused(refusal: Any) -> str:
    """The answer of a model that refused (``refusal`` in place of ``content``)."""
    return f"[refusal] {refusal}" if refusal else ""


def _responses_output(response: dict[str, Any]) -> tuple[str, list[dict[str, Any]], str]:
    """The text, tool calls and reasoning summary of a whole Responses API response."""
    text: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for item in response.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            text.extend(
                part.get("text", "")
                for part in item.get("content") or []
                if part.get("type") == "output_text"
            )
        elif item.get("type") == "function_call":
            calls.append({"name": item.get("name", ""), "arguments": item.get("arguments", "")})
        elif item.get("type") == "image_generation_call":
            text.append("[image]")
        elif item.get("type") == "reasoning":
            for part in (item.get("summary") or []) + (item.get("content") or []):
                if isinstance(part, dict):
                    reasoning.append(str(part.get("text", "")))
    return "".join(text), calls, "".join(reasoning)


def _responses_stream(datas: list[Any]) -> Answer:
    answer = Answer(kind="openai-responses")
    deltas: list[str] = []
    reasoning: list[str] = []
    calls: dict[str, dict[str, Any]] = {}  # by item id: the name comes with the item
    final: dict[str, Any] | None = None
    for data in datas:
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if kind == "response.output_text.delta":
            deltas.append(data.get("delta", ""))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            reasoning.append(str(data.get("delta", "")))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                slot = calls.setdefault(str(item.get("id")), {"name": "", "arguments": ""})
                slot["name"] = item.get("name") or slot["name"]
                slot["arguments"] = item.get("arguments") or slot["arguments"]
        elif kind == "response.function_call_arguments.done":
            slot = calls.setdefault(str(data.get("item_id")), {"name": "", "arguments": ""})
            slot["name"] = data.get("name") or slot["name"]
            slot["arguments"] = data.get("arguments", slot["arguments"])
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            final = data.get("response") or {}
    answer.text, answer.reasoning = "".join(deltas), "".join(reasoning)
    answer.tool_calls = list(calls.values())
    if final is not None:
        answer.usage = final.get("usage")
        text, final_calls, final_reasoning = _responses_output(final)
        answer.text = text or answer.text
        answer.tool_calls = final_calls or answer.tool_calls
        answer.reasoning = answer.reasoning or final_reasoning
    return answer


def _anthropic_stream(datas: list[Any]) -> Answer:
    answer = Answer(kind="anthropic-messages")
    tools: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for data in datas:
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if kind == "message_start":
            usage.update((data.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                tools[data.get("index", 0)] = {"name": block.get("name", ""), "arguments": ""}
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                answer.text += delta.get("text", "")
            elif delta.get("type") == "thinking_delta":
                answer.reasoning += delta.get("thinking", "")
            elif delta.get("type") == "input_json_delta" and data.get("index", 0) in tools:
                tools[data.get("index", 0)]["arguments"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            usage.update(data.get("usage") or {})
    answer.tool_calls = [tools[index] for index in sorted(tools)]
    answer.usage = usage or None
    return answer


def _gemini(chunks: list[dict[str, Any]]) -> Answer:
    """Gemini ``generateContent`` responses, or the chunks of a stream, in order."""
    answer = Answer(kind="gemini")
    for chunk in chunks:
        if chunk.get("usageMetadata"):
            answer.usage = chunk["usageMetadata"]
        candidates = chunk.get("candidates") or [{}]
        for part in (candidates[0].get("content") or {}).get("parts") or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                arguments = json.dumps(call.get("args", {}), ensure_ascii=False)
                answer.tool_calls.append({"name": call.get("name", ""), "arguments": arguments})
            elif part.get("thought"):
                answer.reasoning += str(part.get("text", ""))
            else:
                answer.text += str(part.get("text", "")) or _media_tag(part)  # an image made
    return answer


def _cohere_message(body: dict[str, Any]) -> Answer:
    message = body["message"]
    calls = [
        {"name": c["function"].get("name", ""), "arguments": c["function"].get("arguments", "")}
        for c in message.get("tool_calls") or []
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    ]
    text = _content_text(message.get("content"))
    thinking = "".join(
        str(part.get("thinking", ""))
        for part in message.get("content") or []
        if isinstance(part, dict) and part.get("type") == "thinking"
    )
    return Answer(text, calls, body.get("usage"), "cohere-chat", thinking)


def _cohere_stream(datas: list[Any]) -> Answer:
    answer = Answer(kind="cohere-chat")
    for data in datas:
        if not isinstance(data, dict):
            continue
        delta = data.get("delta") or {}
        message = delta.get("message") or {}
        kind = data.get("type")
        if kind == "content-delta":
            content = message.get("content") or {}
            answer.text += str(content.get("text") or "")
            answer.reasoning += str(content.get("thinking") or "")
        elif kind in ("tool-call-start", "tool-call-delta"):
            function = (message.get("tool_calls") or {}).get("function") or {}
            if kind == "tool-call-start":
                answer.tool_calls.append({"name": function.get("name", ""), "arguments": ""})
            if answer.tool_calls:
                answer.tool_calls[-1]["arguments"] += function.get("arguments") or ""
        elif kind == "message-end":
            answer.usage = delta.get("usage")
    return answer


def _bedrock_message(body: dict[str, Any]) -> Answer:
    answer = Answer(kind="bedrock-converse", usage=body.get("usage"))
    for block in body["output"]["message"].get("content") or []:
        if not isinstance(block, dict):
            continue
        answer.text += str(block.get("text") or "")
        reasoning = (block.get("reasoningContent") or {}).get("reasoningText") or {}
        answer.reasoning += str(reasoning.get("text") or "")
        if isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            arguments = json.dumps(use.get("input", {}), ensure_ascii=False)
            answer.tool_calls.append({"name": use.get("name", ""), "arguments": arguments})
    return answer


def _bedrock_stream(datas: list[Any]) -> Answer:
    """ConverseStream events as dicts keyed by their event type (``contentBlockDelta``...)."""
    answer = Answer(kind="bedrock-converse")
    tools: dict[int, dict[str, Any]] = {}
    for data in datas:
        if not isinstance(data, dict):
            continue
        start = (data.get("contentBlockStart") or {}).get("start") or {}
        index = (data.get("contentBlockStart") or data.get("contentBlockDelta") or {}).get(
            "contentBlockIndex", 0
        )
        if isinstance(start.get("toolUse"), dict):
            tools[index] = {"name": start["toolUse"].get("name", ""), "arguments": ""}
        delta = (data.get("contentBlockDelta") or {}).get("delta") or {}
        answer.text += str(delta.get("text") or "")
        answer.reasoning += str((delta.get("reasoningContent") or {}).get("text") or "")
        if isinstance(delta.get("toolUse"), dict) and index in tools:
            tools[index]["arguments"] += str(delta["toolUse"].get("input") or "")
        if isinstance(data.get("metadata"), dict) and data["metadata"].get("usage"):
            answer.usage = data["metadata"]["usage"]
    answer.tool_calls = [tools[index] for index in sorted(tools)]
    return answer


def _ndjson_stream(datas: list[Any]) -> Answer:
    answer = Answer(kind="ndjson")
    for data in datas:
        if not isinstance(data, dict):
            continue
        message = data.get("message") or {}
        answer.text += message.get("content") or data.get("response") or ""
        answer.reasoning += message.get("thinking") or data.get("thinking") or ""
        for call in message.get("tool_calls") or []:
            function = (call.get("function") or {}) if isinstance(call, dict) else {}
            arguments = function.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            answer.tool_calls.append({"name": function.get("name", ""), "arguments": arguments})
        if data.get("done"):
            answer.usage = {
                k: v for k, v in data.items() if k.endswith("_count") or k.endswith("duration")
            }
    return answer


def summarize(number: int, item: Interaction) -> Shown:
    """One interaction as ``llmcassette show`` prints it."""
    request = _json(item.request_body)
    request = request if isinstance(request, dict) else {}
    model = request.get("model")
    if not isinstance(model, str):  # Gemini, Bedrock and Azure name the model in the URL
        found = _MODEL_IN_URL.search(item.uri)
        model = urllib.parse.unquote(next(g for g in found.groups() if g)) if found else None
    times = item.event_times
    return Shown(
        number=number,
        method=item.method,
        uri=item.uri,
        status=item.status,
        model=model,
        prompt=_request_turns(request),
        tools=_request_tools(request),
        answer=_assemble_or_summary(item),
        events=len(event_payloads(item)),
        first_event=times[0] if times else None,
        duration=times[-1] if times else None,
        cut_short=bool(item.end_extra.get("cut_short")),
        session=item.session,
    )


def _assemble_or_summary(item: Interaction) -> Answer:
    # A body shaped like a known provider's but not quite (a field of another type) is
    # shown as its text: show reads any cassette, it never fails on one.
    try:
        return assemble(item)
    except (AttributeError, KeyError, TypeError, IndexError):
        return _as_text(item)


# Characters no text body holds: a body with them is binary, whatever decodes.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def _as_text(item: Interaction) -> Answer:
    """A response that is no provider's answer, as its first 2,000 characters; a binary
    one (an image or a PDF a test downloaded) by its type and size, not its bytes."""
    body = item.response_body
    if not body:
        return Answer(text="[no body]", kind="text")  # a 204, or a HEAD request's answer
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and not _CONTROL.search(text[:2000]):
        return Answer(text=text[:2000], kind="text")
    types = [v for k, v in item.response_headers.items() if k.lower() == "content-type"]
    kind = types[0][0].split(";")[0].strip() if types and types[0] else "binary data"
    return Answer(text=f"[{len(body):,} bytes of {kind}]", kind="binary")


# Replicate's `/models/{owner}/{name}/predictions`; Gemini's `/models/{model}:method`;
# Bedrock's `/model/{modelId}/operation`, whose id keeps its `:` when a client does not
# percent-encode it (litellm: `...-v1:0/invoke`).
_MODEL_IN_URL = re.compile(
    r"/models/([^/:?]+/[^/:?]+)/predictions|/models/([^/:?]+)|/model/([^/?]+)"
    r"|/openai/deployments/([^/?]+)/"  # Azure OpenAI: the deployment stands for the model
)


def _block(label: str, text: str, width: int = 80) -> list[str]:
    """``  label: text`` wrapped to ``width`` columns, its continuation lines indented under
    the text's first column, so a many-line answer stays apart from the field after it.
    Words longer than a line are not broken (a URL stays whole); blank lines are kept."""
    head = f"  {label}: "
    room = max(width - len(head), 20)
    wrapped: list[str] = []
    for line in text.split("\n"):
        pieces = textwrap.wrap(
            line, room, break_long_words=False, break_on_hyphens=False, drop_whitespace=True
        )
        wrapped.extend(pieces or [""])
    return [head + wrapped[0]] + [" " * len(head) + line if line else "" for line in wrapped[1:]]


def render(shown: Shown, width: int = 80, *, session_line: bool = True) -> str:
    """The text ``llmcassette show`` prints for one interaction.

    Request turns and the URL are cut to ``width`` columns; the answer, reasoning, tool
    arguments and usage are printed whole (they are what one reads a cassette for),
    wrapped to ``width`` and indented under their field. ``session_line=False`` leaves out
    the ``session:`` line (under a session heading it would say the heading again).
    """

    def cut(text: str, room: int) -> str:
        text = text.replace("\n", " ")
        return text if len(text) <= room else text[: room - 1] + "…"

    lines = [cut(f"#{shown.number} {shown.method} {shown.uri} -> {shown.status}", width)]
    if shown.session and session_line:
        lines.append(cut(f"  session: {shown.session}", width))
    if shown.model:
        lines.append(f"  model: {shown.model}")
    lines.extend(f"  {cut(turn, width - 2)}" for turn in shown.prompt)
    if shown.tools:
        lines.append(cut(f"  tools: {', '.join(shown.tools)}", width))
    # Blank lines a model begins or ends its text with say nothing to a reader.
    reasoning = shown.answer.reasoning.lstrip("\n").rstrip()
    text = shown.answer.text.lstrip("\n").rstrip()
    if reasoning:
        lines.extend(_block("reasoning", reasoning, width))
    if text or not shown.answer.tool_calls:  # an answer of tool calls only: those say it
        lines.extend(_block("answer", text, width))
    for call in shown.answer.tool_calls:
        lines.extend(_block("tool call", f"{call['name']}({call['arguments']})", width))
    if shown.answer.usage:
        lines.extend(_block("usage", json.dumps(shown.answer.usage, sort_keys=True), width))
    if shown.events:
        timing = ""
        if shown.first_event is not None and shown.duration is not None:
            timing = f", first after {shown.first_event:.3f} s, last after {shown.duration:.3f} s"
        cut_note = ", cut short" if shown.cut_short else ""
        events = "1 event" if shown.events == 1 else f"{shown.events} events"
        lines.append(f"  stream: {events}{timing}{cut_note}")
    return "\n".join(lines)


def session_heading(label: str | None) -> str:
    """How a session is named above its interactions: ``session 'a/b'``, or ``(no session)``
    (the name is quoted so that a session called "(no session)" cannot pass for none)."""
    return NO_SESSION if label is None else f"session {label!r}"


def by_session(shown: list[Shown]) -> list[tuple[str | None, list[Shown]]] | None:
    """The interactions grouped by session, sessions in order of first appearance and each
    one's interactions in recorded order; None when none was recorded in a session."""
    if not any(item.session is not None for item in shown):
        return None
    groups: dict[str | None, list[Shown]] = {}
    for item in shown:
        groups.setdefault(item.session, []).append(item)
    return list(groups.items())


def _plain(text: str, style: str) -> str:
    return text


def render_cassette(
    shown: list[Shown], paint: Callable[[str, str], str] = _plain, width: int = 80
) -> str:
    """The text ``llmcassette show`` prints for a cassette: the interactions one after the
    other, or, when some were recorded in a session, under one heading per session.

    ``paint(text, style)`` may add colour: ``"header"`` for each interaction's first line,
    ``"path"`` for a session heading.
    """

    def block(item: Shown, session_line: bool) -> str:
        first, _, rest = render(item, width, session_line=session_line).partition("\n")
        return paint(first, "header") + ("\n" + rest if rest else "")

    groups = by_session(shown)
    if groups is None:
        return "\n\n".join(block(item, True) for item in shown)
    parts: list[str] = []
    for label, items in groups:
        count = "1 interaction" if len(items) == 1 else f"{len(items)} interactions"
        parts.append(paint(f"== {session_heading(label)}: {count} ==", "path"))
        parts.extend(block(item, False) for item in items)
    return "\n\n".join(parts)


def sessions_json(shown: list[Shown]) -> list[dict[str, Any]] | None:
    """``show --json``'s ``sessions``: each session (None for none) with the numbers of its
    interactions, in the order of ``render_cassette``; None when there are no sessions."""
    groups = by_session(shown)
    if groups is None:
        return None
    return [
        {"session": label, "interactions": [item.number for item in items]}
        for label, items in groups
    ]
