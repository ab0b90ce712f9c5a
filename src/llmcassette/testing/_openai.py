"""OpenAI wire formats: Chat Completions, Responses, models, and error bodies."""

from __future__ import annotations

import itertools
import json
from typing import Any

from llmcassette.testing._wire import (
    CREATED,
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

_FINGERPRINT = "fp_local"
_SSE = "text/event-stream; charset=utf-8"
_MODELS = ("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "o4-mini")

_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request (local provider)."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", None, "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached (local provider)."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def headers(req: Incoming) -> list[tuple[str, str]]:
    """Response headers an OpenAI endpoint sends (deterministic per request)."""
    return [
        ("x-request-id", req.ident("req_", 32, "request-id")),
        ("openai-organization", "org-local"),
        ("openai-processing-ms", str(100 + int(req.digest[:4], 16) % 400)),
        ("openai-version", "2020-10-01"),
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-remaining-requests", "9999"),
        ("x-ratelimit-reset-requests", "6ms"),
        ("set-cookie", f"__cf_bm={req.ident('', 43, 'cookie')}; path=/; HttpOnly"),
    ]


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """An OpenAI-style error body: `{"error": {"message", "type", "param", "code"}}`."""
    kind, code, default = _ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "")
    )
    text = message or default or f"Error {status} (local provider)."
    body = {"error": {"message": text, "type": kind, "param": None, "code": code}}
    # Real OpenAI error bodies are indented by four spaces (successes by two).
    return JsonReply(status, body, headers(req), indent=4)


def check_auth(req: Incoming) -> JsonReply | None:
    """401 unless an `Authorization: Bearer ...` header is present."""
    if has_bearer_token(req):
        return None
    return error(
        req,
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization "
        "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    )


def models(req: Incoming) -> Reply:
    """`GET /v1/models`."""
    data = [{"id": m, "object": "model", "created": CREATED, "owned_by": "system"} for m in _MODELS]
    return JsonReply(200, {"object": "list", "data": data}, headers(req), 2, compressible=True)


# --- Chat Completions -------------------------------------------------------------------


def _pick_tool(tools: object, choice: object) -> JsonObject | None:
    """The function tool the fake model "decides" to call, honouring `tool_choice`."""
    if not isinstance(tools, list) or choice == "none":
        return None
    functions = [
        t for t in tools if isinstance(t, dict) and t.get("type", "function") == "function"
    ]
    wanted = None
    if isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name") or choice.get("name")
    for tool in functions:
        # Chat Completions nests the definition under "function"; Responses keeps it flat.
        spec = tool.get("function", tool)
        if (
            isinstance(spec, dict)
            and isinstance(spec.get("name"), str)
            and (wanted is None or spec["name"] == wanted)
        ):
            return spec
    return None


def _chat_answer(messages: list[Any]) -> tuple[str, str, bool]:
    """Returns (answer text, prompt, last message is a user turn)."""
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if last.get("role") == "tool":
        return f"The tool returned: {text_of(last.get('content'))}", "", False
    prompt = last_user_text(messages)
    return f"You said: {prompt}", prompt, last.get("role") == "user"


def chat_completions(req: Incoming) -> Reply:
    """`POST /v1/chat/completions`."""
    messages = [m for m in req.payload.get("messages") or [] if isinstance(m, dict)]
    answer, prompt, user_turn = _chat_answer(messages)
    tool = _pick_tool(req.payload.get("tools"), req.payload.get("tool_choice"))
    if not user_turn:
        tool = None
    prompt_tokens = count_tokens(text_of(m.get("content")) for m in messages)
    completion_id = req.ident("chatcmpl-", 29)
    call_id = req.ident("call_", 24, "call")
    arguments = json.dumps(example_arguments(tool.get("parameters"), prompt)) if tool else ""

    if not req.streaming:
        text_pieces = split_answer(answer, None) if tool is None else split_json(arguments, None)
        message: JsonObject = {"role": "assistant", "content": answer}
        if tool is not None:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool["name"], "arguments": arguments},
                }
            ]
        message.update(refusal=None, annotations=[])
        body = {
            "id": completion_id,
            "object": "chat.completion",
            "created": CREATED,
            "model": req.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "stop" if tool is None else "tool_calls",
                }
            ],
            "usage": _chat_usage(prompt_tokens, len(text_pieces)),
            "service_tier": "default",
            "system_fingerprint": _FINGERPRINT,
        }
        return JsonReply(200, body, headers(req), indent=2, compressible=True)

    options = req.payload.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True

    def chunk_event(choices: list[JsonObject], **usage: object) -> bytes:
        return sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": req.model,
                "service_tier": "default",
                "system_fingerprint": _FINGERPRINT,
                "choices": choices,
                **usage,
            }
        )

    def chunk(delta: JsonObject, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        # With include_usage, OpenAI adds `"usage": null` to every chunk but the last.
        return chunk_event([choice], **({"usage": None} if include_usage else {}))

    if tool is None:
        pieces = split_answer(answer, req.events)
        head = [chunk({"role": "assistant", "content": "", "refusal": None})]
        content = [chunk({"content": piece}) for piece in pieces]

        def more(i: int) -> bytes:
            return chunk({"content": filler(i)})

        finish = "stop"
    else:
        pieces = split_json(arguments, req.events)
        first_call = {
            "index": 0,
            "id": call_id,
            "type": "function",
            "function": {"name": tool["name"], "arguments": ""},
        }
        head = [
            chunk(
                {"role": "assistant", "content": None, "tool_calls": [first_call], "refusal": None}
            )
        ]
        content = [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces
        ]

        def more(i: int) -> bytes:
            # Whitespace keeps the endless argument string valid JSON.
            return chunk({"tool_calls": [{"index": 0, "function": {"arguments": " "}}]})

        finish = "tool_calls"

    tail = [chunk({}, finish)]
    if include_usage:
        tail.append(chunk_event([], usage=_chat_usage(prompt_tokens, len(pieces))))
    tail.append(sse("[DONE]"))
    return StreamReply(_SSE, head, content, tail, more, headers(req))


def _chat_usage(prompt: int, completion: int) -> JsonObject:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


# --- Responses --------------------------------------------------------------------------


def _responses_answer(items: object) -> tuple[str, str, bool, list[str]]:
    """Returns (answer, prompt, last item is a user turn, all input texts)."""
    if isinstance(items, str):
        return f"You said: {items}", items, True, [items]
    entries = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    texts = [text_of(i) for i in entries]
    last = entries[-1] if entries else {}
    if last.get("type") == "function_call_output":
        return f"The tool returned: {text_of(last)}", "", False, texts
    prompt = next((text_of(i) for i in reversed(entries) if i.get("role") == "user"), "")
    return f"You said: {prompt}", prompt, last.get("role") == "user", texts


def _response_object(
    req: Incoming, status: str, output: list[JsonObject], usage: JsonObject | None
) -> JsonObject:
    payload = req.payload
    return {
        "id": req.ident("resp_", 48),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": payload.get("instructions"),
        "max_output_tokens": payload.get("max_output_tokens"),
        "model": req.model,
        "output": output,
        "parallel_tool_calls": payload.get("parallel_tool_calls", True),
        "previous_response_id": payload.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": payload.get("store", True),
        "temperature": payload.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": payload.get("tool_choice", "auto"),
        "tools": payload.get("tools") or [],
        "top_p": payload.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": payload.get("metadata") or {},
    }


def _responses_usage(prompt: int, completion: int) -> JsonObject:
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def responses(req: Incoming) -> Reply:
    """`POST /v1/responses`."""
    answer, prompt, user_turn, texts = _responses_answer(req.payload.get("input"))
    tool = _pick_tool(req.payload.get("tools"), req.payload.get("tool_choice"))
    if not user_turn:
        tool = None
    prompt_tokens = count_tokens(texts)
    item_id = req.ident("msg_", 48, "item") if tool is None else req.ident("fc_", 48, "item")
    arguments = json.dumps(example_arguments(tool.get("parameters"), prompt)) if tool else ""
    call_id = req.ident("call_", 24, "call")

    def item(status: str, text: str | None) -> JsonObject:
        if tool is not None:
            return {
                "id": item_id,
                "type": "function_call",
                "status": status,
                "arguments": text or "",
                "call_id": call_id,
                "name": tool["name"],
            }
        content = [] if text is None else [_output_text(text)]
        return {
            "id": item_id,
            "type": "message",
            "status": status,
            "content": content,
            "role": "assistant",
        }

    if not req.streaming:
        text = answer if tool is None else arguments
        count = len(split_answer(text, None) if tool is None else split_json(text, None))
        usage = _responses_usage(prompt_tokens, count)
        body = _response_object(req, "completed", [item("completed", text)], usage)
        return JsonReply(200, body, headers(req), indent=2, compressible=True)

    pieces = split_answer(answer, req.events) if tool is None else split_json(arguments, req.events)
    text = "".join(pieces)
    numbers = itertools.count()
    where: dict[str, Any] = {"item_id": item_id, "output_index": 0}

    def event(name: str, number: int | None = None, **fields: object) -> bytes:
        number = next(numbers) if number is None else number
        return sse({"type": name, "sequence_number": number, **fields}, event=name)

    def delta(piece: str, number: int | None = None) -> bytes:
        if tool is None:
            return event(
                "response.output_text.delta",
                number,
                **where,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        return event("response.function_call_arguments.delta", number, **where, delta=piece)

    head = [
        event("response.created", response=_response_object(req, "in_progress", [], None)),
        event("response.in_progress", response=_response_object(req, "in_progress", [], None)),
        event("response.output_item.added", output_index=0, item=item("in_progress", None)),
    ]
    if tool is None:
        empty = _output_text("")
        head.append(event("response.content_part.added", **where, content_index=0, part=empty))
    content = [delta(piece) for piece in pieces]
    if tool is None:
        tail = [
            event("response.output_text.done", **where, content_index=0, text=text, logprobs=[]),
            event("response.content_part.done", **where, content_index=0, part=_output_text(text)),
        ]
    else:
        tail = [event("response.function_call_arguments.done", **where, arguments=text)]
    done = item("completed", text)
    usage = _responses_usage(prompt_tokens, len(pieces))
    tail.append(event("response.output_item.done", output_index=0, item=done))
    tail.append(
        event("response.completed", response=_response_object(req, "completed", [done], usage))
    )

    def more(i: int) -> bytes:
        # Endless streams never send the tail, so numbering simply continues after `content`;
        # whitespace keeps an endless argument string valid JSON.
        return delta(filler(i) if tool is None else " ", len(head) + len(content) + i)

    return StreamReply(_SSE, head, content, tail, more, headers(req))


def _output_text(text: str) -> JsonObject:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
