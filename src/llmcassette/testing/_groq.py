"""Groq wire format: OpenAI chat completions under `/openai/v1`, with Groq's `x_groq` fields.

Groq answers like OpenAI, plus an `x_groq` object: its request id in the first chunk of a
stream (and on a whole completion), and the usage in the last chunk before `[DONE]`.
"""

from __future__ import annotations

import json

from llmcassette.testing import _openai
from llmcassette.testing._wire import Incoming, JsonObject, JsonReply, Reply, StreamReply, sse

PREFIX = "/openai"


def _request_id(req: Incoming) -> str:
    return req.ident("req_01", 26, "groq")


def headers(req: Incoming) -> list[tuple[str, str]]:
    """Groq's response headers: a request id, no organization."""
    return [("x-request-id", _request_id(req)), ("x-groq-region", "local")]


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """OpenAI's error body, with Groq's headers."""
    reply = _openai.error(req, status, message)
    reply.headers = headers(req)
    return reply


def _with_x_groq(event: bytes, extra: JsonObject) -> bytes:
    text = event.decode()
    if not text.startswith("data: {"):
        return event
    body = json.loads(text.removeprefix("data: "))
    body["x_groq"] = {**extra, **body.get("x_groq", {})}
    return sse(body)


def chat_completions(req: Incoming) -> Reply:
    """`POST /openai/v1/chat/completions`: OpenAI's answer with `x_groq` added."""
    reply = _openai.chat_completions(req)
    ident = {"id": _request_id(req)}
    if isinstance(reply, JsonReply):
        if isinstance(reply.payload, dict):
            reply.payload["x_groq"] = ident
        reply.headers = headers(req)
        return reply
    head = [_with_x_groq(reply.head[0], ident), *reply.head[1:]] if reply.head else []
    tail = list(reply.tail)
    # The chunk that finishes the answer carries the usage under x_groq (before [DONE]).
    finishing = next((i for i, e in enumerate(tail) if e.startswith(b"data: {")), None)
    if finishing is not None:
        body = json.loads(tail[finishing].decode().removeprefix("data: "))
        usage = body.get("usage") or {"completion_tokens": len(reply.content)}
        tail[finishing] = _with_x_groq(tail[finishing], {**ident, "usage": usage})
    return StreamReply(reply.content_type, head, reply.content, tail, reply.more, headers(req))
