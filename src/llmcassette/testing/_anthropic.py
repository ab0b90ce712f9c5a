"""Anthropic wire format: the Messages API and its error bodies."""

from __future__ import annotations

import json
from typing import Any

from llmcassette.testing._wire import (
    Incoming,
    JsonObject,
    JsonReply,
    Reply,
    StreamReply,
    count_tokens,
    example_arguments,
    filler,
    has_bearer_token,
    last_user_text,
    split_answer,
    split_json,
    sse,
    text_of,
)

_SSE = "text/event-stream; charset=utf-8"
_ORGANIZATION = "00000000-10ca-4000-8000-000000000001"

_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request (local provider)."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit (local provider)."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def headers(req: Incoming) -> list[tuple[str, str]]:
    """Response headers the Anthropic API sends (deterministic per request)."""
    return [
        ("request-id", req.ident("req_011", 21, "request-id")),
        ("anthropic-organization-id", _ORGANIZATION),
    ]


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """An Anthropic-style error body: `{"type": "error", "error": {"type", "message"}}`."""
    kind, default = _ERRORS.get(
        status, ("api_error" if status >= 500 else "invalid_request_error", "")
    )
    body = {
        "type": "error",
        "error": {"type": kind, "message": message or default or f"Error {status}"},
        "request_id": req.ident("req_011", 21, "request-id"),
    }
    return JsonReply(status, body, headers(req))


def check_auth(req: Incoming) -> JsonReply | None:
    """401 unless an `x-api-key` or `Authorization: Bearer` header is present."""
    # anthropic-python 2.x sends its api_key as a bearer token, older SDKs as x-api-key.
    if req.headers.get("x-api-key", "").strip() or has_bearer_token(req):
        return None
    return error(req, 401, "x-api-key header is required")


def _pick_tool(tools: object, choice: object) -> JsonObject | None:
    if not isinstance(tools, list):
        return None
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "none":
        return None
    wanted = choice.get("name") if isinstance(choice, dict) and kind == "tool" else None
    for tool in tools:
        if (
            isinstance(tool, dict)
            and isinstance(tool.get("name"), str)
            and (wanted is None or tool["name"] == wanted)
        ):
            return tool
    return None


def _answer(messages: list[Any]) -> tuple[str, str, bool]:
    """Returns (answer text, prompt, whether the model may call a tool now)."""
    last = messages[-1] if messages else {}
    blocks = last.get("content")
    results = (
        [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if isinstance(blocks, list)
        else []
    )
    if results:
        return f"The tool returned: {text_of(results[-1])}", "", False
    prompt = last_user_text(messages)
    return f"You said: {prompt}", prompt, last.get("role") == "user"


def messages(req: Incoming) -> Reply:
    """`POST /v1/messages`."""
    history = [m for m in req.payload.get("messages") or [] if isinstance(m, dict)]
    answer, prompt, may_call = _answer(history)
    tool = _pick_tool(req.payload.get("tools"), req.payload.get("tool_choice"))
    if not may_call:
        tool = None
    system = req.payload.get("system")
    input_tokens = count_tokens([text_of(system), *(text_of(m.get("content")) for m in history)])
    message_id = req.ident("msg_01", 22)
    tool_id = req.ident("toolu_01", 22, "tool")
    arguments = example_arguments(tool.get("input_schema"), prompt) if tool else {}
    stop_reason = "end_turn" if tool is None else "tool_use"

    def message(content: list[JsonObject], stop: str | None, output_tokens: int) -> JsonObject:
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": req.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": output_tokens,
                "service_tier": "standard",
            },
        }

    if not req.streaming:
        if tool is None:
            block: JsonObject = {"type": "text", "text": answer}
            count = len(split_answer(answer, None))
        else:
            block = {"type": "tool_use", "id": tool_id, "name": tool["name"], "input": arguments}
            count = len(split_json(json.dumps(arguments), None))
        return JsonReply(200, message([block], stop_reason, count), headers(req))

    def event(name: str, data: JsonObject) -> bytes:
        return sse({"type": name, **data}, event=name)

    if tool is None:
        pieces = split_answer(answer, req.events)
        start: JsonObject = {"type": "text", "text": ""}
        delta_type, delta_field = "text_delta", "text"
        endless_piece = filler
    else:
        pieces = split_json(json.dumps(arguments), req.events)
        if req.events is None:
            # Anthropic opens a tool_use input stream with an empty partial_json.
            pieces.insert(0, "")
        start = {"type": "tool_use", "id": tool_id, "name": tool["name"], "input": {}}
        delta_type, delta_field = "input_json_delta", "partial_json"

        def endless_piece(i: int) -> str:
            return " "

    def delta(piece: str) -> bytes:
        body = {"index": 0, "delta": {"type": delta_type, delta_field: piece}}
        return event("content_block_delta", body)

    head = [
        event("message_start", {"message": message([], None, 1)}),
        event("content_block_start", {"index": 0, "content_block": start}),
        # Anthropic's ping really is written with a space after the colon.
        b'event: ping\ndata: {"type": "ping"}\n\n',
    ]
    content = [delta(piece) for piece in pieces]
    tail = [
        event("content_block_stop", {"index": 0}),
        event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": len(pieces)},
            },
        ),
        event("message_stop", {}),
    ]

    def more(i: int) -> bytes:
        return delta(endless_piece(i))

    return StreamReply(_SSE, head, content, tail, more, headers(req))
