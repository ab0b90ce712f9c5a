"""Bedrock Runtime: Converse, ConverseStream, InvokeModel, InvokeModelWithResponseStream.

The model is in the path (`/model/{modelId}/converse`), so these routes are matched by
pattern. Streams are AWS event-stream frames (`application/vnd.amazon.eventstream`, one
frame per HTTP chunk): ConverseStream sends `messageStart`, `contentBlockStart` (tool use
only), one `contentBlockDelta` per piece, `contentBlockStop`, `messageStop`, `metadata`;
InvokeModelWithResponseStream sends `chunk` frames whose `{"bytes": base64}` holds one
Anthropic Messages event each. Like Bedrock, every event payload carries a `p` padding
field (here deterministic). Requests must be SigV4-signed (any credentials will do).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from urllib.parse import unquote

from llmcassette import _eventstream as wire
from llmcassette.testing import _anthropic
from llmcassette.testing._wire import (
    Incoming,
    JsonObject,
    JsonReply,
    Reply,
    StreamReply,
    compact,
    count_tokens,
    example_arguments,
    filler,
    split_answer,
    split_json,
    text_of,
)

#: `/model/{modelId}/{operation}`; the model id arrives percent-encoded (`...-v1%3A0`).
PATH = re.compile(r"/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream)")
_MODEL_ERROR = re.compile(r"error-(\d{3})")
_PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"

_ERRORS: dict[int, str] = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def is_bedrock(path: str) -> bool:
    """Whether `path` is one of the Bedrock Runtime model routes."""
    return path.startswith("/model/")


def headers(req: Incoming) -> list[tuple[str, str]]:
    """Bedrock's response headers: a request id, no account id."""
    raw = req.ident("", 32, "bedrock-request-id")
    return [("x-amzn-requestid", f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}")]


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """A Bedrock error: `{"message"}`, its type in the `x-amzn-errortype` header."""
    kind = _ERRORS.get(
        status, "InternalServerException" if status >= 500 else "ValidationException"
    )
    body = {"message": message or f"{kind} (local provider)"}
    return JsonReply(status, body, [*headers(req), ("x-amzn-errortype", f"{kind}:")])


def check_auth(req: Incoming) -> JsonReply | None:
    """403 unless the request carries a SigV4 `Authorization` header."""
    auth = req.headers.get("authorization", "")
    if auth.startswith("AWS4-HMAC-SHA256 Credential=") and "Signature=" in auth:
        return None
    return error(req, 403, "Missing Authentication Token")


def _padding(index: int) -> str:
    return _PADDING[: 1 + (index * 7) % len(_PADDING)]


def _frame(event_type: str, payload: JsonObject) -> bytes:
    return wire.encode_frame(
        wire.string_headers(
            [
                (":event-type", event_type),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ]
        ),
        compact(payload).encode("utf-8"),
    )


def _tool_results(message: JsonObject) -> list[JsonObject]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b["toolResult"] for b in content if isinstance(b, dict) and "toolResult" in b]


def _result_text(result: JsonObject) -> str:
    parts = result.get("content")
    texts = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and "json" in part:
            texts.append(compact(part["json"]))
        else:
            texts.append(text_of(part))
    return " ".join(t for t in texts if t)


def _pick_tool(config: object) -> JsonObject | None:
    if not isinstance(config, dict):
        return None
    tools = [t.get("toolSpec") for t in config.get("tools") or [] if isinstance(t, dict)]
    choice = config.get("toolChoice")
    wanted = None
    if isinstance(choice, dict) and isinstance(choice.get("tool"), dict):
        wanted = choice["tool"].get("name")
    for spec in tools:
        name = spec.get("name") if isinstance(spec, dict) else None
        if isinstance(spec, dict) and isinstance(name, str) and wanted in (None, name):
            return spec
    return None


def converse(req: Incoming, model: str, *, streamed: bool) -> Reply:
    """`/converse` and `/converse-stream`: the Converse API's own shapes."""
    history = [m for m in req.payload.get("messages") or [] if isinstance(m, dict)]
    last = history[-1] if history else {}
    results = _tool_results(last)
    prompt = ""
    if results:
        answer = f"The tool returned: {_result_text(results[-1])}"
        tool = None
    else:
        prompt = next(
            (text_of(m.get("content")) for m in reversed(history) if m.get("role") == "user"), ""
        )
        answer = f"You said: {prompt}"
        tool = _pick_tool(req.payload.get("toolConfig"))
    system = req.payload.get("system")
    input_tokens = count_tokens([text_of(system), *(text_of(m.get("content")) for m in history)])
    tool_id = req.ident("tooluse_", 22, "bedrock-tool")
    arguments: JsonObject = {}
    if tool is not None:
        schema = (tool.get("inputSchema") or {}).get("json")
        arguments = example_arguments(schema, prompt)
    stop_reason = "end_turn" if tool is None else "tool_use"

    def usage(output_tokens: int) -> JsonObject:
        total = input_tokens + output_tokens
        return {"inputTokens": input_tokens, "outputTokens": output_tokens, "totalTokens": total}

    if not streamed:
        if tool is None:
            block: JsonObject = {"text": answer}
            count = len(split_answer(answer, None))
        else:
            block = {"toolUse": {"toolUseId": tool_id, "name": tool["name"], "input": arguments}}
            count = len(split_json(json.dumps(arguments), None))
        body = {
            "output": {"message": {"role": "assistant", "content": [block]}},
            "stopReason": stop_reason,
            "usage": usage(count),
            "metrics": {"latencyMs": 1},
        }
        return JsonReply(200, body, headers(req))

    if tool is None:
        pieces = split_answer(answer, req.events)
        start: list[bytes] = []

        def delta(index: int, piece: str) -> bytes:
            payload = {"contentBlockIndex": 0, "delta": {"text": piece}, "p": _padding(index)}
            return _frame("contentBlockDelta", payload)

        def more(i: int) -> bytes:
            return delta(len(pieces) + i, filler(i))
    else:
        pieces = split_json(json.dumps(arguments), req.events)
        begin = {"toolUse": {"toolUseId": tool_id, "name": tool["name"]}}
        start = [_frame("contentBlockStart", {"contentBlockIndex": 0, "start": begin, "p": "ab"})]

        def delta(index: int, piece: str) -> bytes:
            body = {"toolUse": {"input": piece}}
            payload = {"contentBlockIndex": 0, "delta": body, "p": _padding(index)}
            return _frame("contentBlockDelta", payload)

        def more(i: int) -> bytes:
            return delta(len(pieces) + i, " ")

    head = [_frame("messageStart", {"role": "assistant", "p": "abcd"}), *start]
    content = [delta(index, piece) for index, piece in enumerate(pieces)]
    tail = [
        _frame("contentBlockStop", {"contentBlockIndex": 0, "p": "abcdef"}),
        _frame("messageStop", {"stopReason": stop_reason, "p": "abcdefgh"}),
        _frame(
            "metadata",
            {"usage": usage(len(pieces)), "metrics": {"latencyMs": 1}, "p": "abcdefghij"},
        ),
    ]
    return StreamReply(wire.CONTENT_TYPE, head, content, tail, more, headers(req))


def _sse_data(event: bytes) -> JsonObject | None:
    """The JSON data of one Anthropic SSE event (the local provider's own, one data line)."""
    for line in event.decode("utf-8").split("\n"):
        if line.startswith("data: "):
            data = json.loads(line[6:])
            return data if isinstance(data, dict) else None
    return None


def _chunk(data: JsonObject) -> bytes:
    inner = compact(data).encode("utf-8")
    encoded = base64.b64encode(inner).decode("ascii")
    return _frame("chunk", {"bytes": encoded, "p": _padding(len(inner))})


def invoke(req: Incoming, model: str, *, streamed: bool) -> Reply:
    """`/invoke` and `/invoke-with-response-stream` with an Anthropic Messages body."""
    if not isinstance(req.payload.get("messages"), list):
        return error(req, 400, "The local provider invokes Anthropic Messages bodies only.")
    payload = {**req.payload, "model": model, "stream": streamed}
    answer = _anthropic.messages(dataclasses.replace(req, payload=payload))
    own = headers(req)
    if isinstance(answer, JsonReply):
        usage = answer.payload.get("usage", {}) if isinstance(answer.payload, dict) else {}
        answer.headers = [
            *own,
            ("x-amzn-bedrock-input-token-count", str(usage.get("input_tokens", 0))),
            ("x-amzn-bedrock-output-token-count", str(usage.get("output_tokens", 0))),
            ("x-amzn-bedrock-invocation-latency", "1"),
        ]
        return answer

    def chunks(sse_events: list[bytes]) -> list[bytes]:
        out = []
        for event in sse_events:
            data = _sse_data(event)
            if data is None or data.get("type") == "ping":  # Bedrock sends no pings
                continue
            if data.get("type") == "message_stop":
                data["amazon-bedrock-invocationMetrics"] = {
                    "inputTokenCount": 1,
                    "outputTokenCount": len(answer.content),
                    "invocationLatency": 1,
                    "firstByteLatency": 1,
                }
            out.append(_chunk(data))
        return out

    sse_more = answer.more
    return StreamReply(
        wire.CONTENT_TYPE,
        chunks(answer.head),
        chunks(answer.content),
        chunks(answer.tail),
        lambda i: chunks([sse_more(i)])[0],
        [*own, ("x-amzn-bedrock-content-type", "application/json")],
    )


def route(req: Incoming) -> Reply:
    """Answers a `/model/{modelId}/{operation}` request (auth is checked by the server)."""
    found = PATH.fullmatch(req.path)
    if found is None or req.method != "POST":
        return error(req, 404, f"Invalid URL ({req.method} {req.path})")
    model, operation = unquote(found.group(1)), found.group(2)
    wanted = _MODEL_ERROR.fullmatch(model)
    if wanted:
        return error(req, int(wanted.group(1)))
    if operation.startswith("converse"):
        return converse(req, model, streamed=operation == "converse-stream")
    return invoke(req, model, streamed=operation == "invoke-with-response-stream")
