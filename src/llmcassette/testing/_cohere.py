"""Cohere v2 chat: `POST /v2/chat`, whole or as typed server-sent events.

A Cohere stream is `message-start`, `content-start`, one `content-delta` per piece,
`content-end`, then `message-end` carrying the finish reason and usage; every event names
its type both in the `event:` line and in the JSON's `type`.
"""

from __future__ import annotations

from llmcassette.testing._wire import (
    Incoming,
    JsonObject,
    JsonReply,
    Reply,
    StreamReply,
    count_tokens,
    filler,
    has_bearer_token,
    last_user_text,
    split_answer,
    sse,
    text_of,
)

_SSE = "text/event-stream"


def headers(req: Incoming) -> list[tuple[str, str]]:
    """Cohere's response headers: a trace id, no account id."""
    return [("x-debug-trace-id", req.ident("", 32, "cohere-trace"))]


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """Cohere's error body: `{"id", "message"}`."""
    body = {"id": req.ident("", 32, "cohere-error"), "message": message or f"error {status}"}
    return JsonReply(status, body, headers(req))


def check_auth(req: Incoming) -> JsonReply | None:
    """401 unless an `Authorization: Bearer ...` header is present."""
    if has_bearer_token(req):
        return None
    return error(req, 401, "no api key supplied")


def _usage(input_tokens: int, output_tokens: int) -> JsonObject:
    units = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return {"billed_units": units, "tokens": dict(units)}


def chat(req: Incoming) -> Reply:
    """`POST /v2/chat`."""
    history = [m for m in req.payload.get("messages") or [] if isinstance(m, dict)]
    answer = f"You said: {last_user_text(history)}"
    input_tokens = count_tokens(text_of(m.get("content")) for m in history)
    message_id = req.ident("", 8, "cohere") + "-" + req.ident("", 4, "cohere-2")

    if not req.streaming:
        body = {
            "id": message_id,
            "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
            "finish_reason": "COMPLETE",
            "usage": _usage(input_tokens, len(split_answer(answer, None))),
        }
        return JsonReply(200, body, headers(req))

    def event(kind: str, **fields: object) -> bytes:
        return sse({"type": kind, **fields}, event=kind)

    def delta(piece: str) -> bytes:
        return event("content-delta", index=0, delta={"message": {"content": {"text": piece}}})

    pieces = split_answer(answer, req.events)
    start_message = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}
    head = [
        event("message-start", id=message_id, delta={"message": start_message}),
        event(
            "content-start",
            index=0,
            delta={"message": {"content": {"type": "text", "text": ""}}},
        ),
    ]
    tail = [
        event("content-end", index=0),
        event(
            "message-end",
            delta={"finish_reason": "COMPLETE", "usage": _usage(input_tokens, len(pieces))},
        ),
    ]
    return StreamReply(
        _SSE, head, [delta(p) for p in pieces], tail, lambda i: delta(filler(i)), headers(req)
    )
