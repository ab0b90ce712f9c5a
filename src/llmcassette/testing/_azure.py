"""Azure OpenAI wire format: OpenAI chat completions under a deployment, with Azure's filters.

`POST /openai/deployments/<deployment>/chat/completions?api-version=...` with an `api-key`
header (or a Microsoft Entra ID token as `Authorization: Bearer`). The answer is OpenAI's,
plus Azure's content-filter verdicts: `prompt_filter_results` on a whole completion, and as
the first chunk of a stream (one with no choices, which clients must skip);
`content_filter_results` on every choice.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs

from llmcassette.testing import _openai
from llmcassette.testing._wire import (
    Incoming,
    JsonObject,
    JsonReply,
    Reply,
    StreamReply,
    has_bearer_token,
    sse,
)

_CHAT = re.compile(r"/openai/deployments/([^/]+)/chat/completions")
_SAFE = {"filtered": False, "severity": "safe"}
_FILTERS: JsonObject = {name: dict(_SAFE) for name in ("hate", "self_harm", "sexual", "violence")}


def is_azure(path: str) -> bool:
    """Whether ``path`` is an Azure OpenAI deployment's endpoint."""
    return path.startswith("/openai/deployments/")


def headers(req: Incoming) -> list[tuple[str, str]]:
    """Azure's response headers: its own request ids and region, OpenAI's rate limits."""
    return [
        ("apim-request-id", req.ident("", 32, "apim")),
        ("x-request-id", req.ident("", 32, "request-id")),
        ("x-ms-region", "Local"),
        ("x-ratelimit-remaining-requests", "9999"),
        ("x-ratelimit-remaining-tokens", "999000"),
    ]


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """Azure's error body: `{"error": {"code": "<status>", "message": ...}}`."""
    text = message or {
        401: "Access denied due to invalid subscription key or wrong API endpoint. Make sure "
        "to provide a valid key for an active subscription and use a correct regional API "
        "endpoint for your resource.",
        404: "Resource not found",
        429: "Requests to the ChatCompletions_Create Operation have exceeded the call rate "
        "limit of your current tier (local provider).",
    }.get(status, f"Error {status} (local provider).")
    return JsonReply(status, {"error": {"code": str(status), "message": text}}, headers(req))


def check_auth(req: Incoming) -> JsonReply | None:
    """401 unless an `api-key` header or an Entra ID bearer token is present."""
    if req.headers.get("api-key", "").strip() or has_bearer_token(req):
        return None
    return error(req, 401)


def route(req: Incoming) -> Reply:
    """Chat completions of a deployment; 404 for anything else or without `api-version`."""
    if not _CHAT.fullmatch(req.path) or not parse_qs(req.query).get("api-version"):
        return error(req, 404)
    reply = _openai.chat_completions(req)
    prompt_filters = [{"prompt_index": 0, "content_filter_results": _FILTERS}]
    if isinstance(reply, JsonReply):
        if isinstance(reply.payload, dict):
            reply.payload["prompt_filter_results"] = prompt_filters
            for choice in reply.payload.get("choices", []):
                choice["content_filter_results"] = _FILTERS
        reply.headers = headers(req)
        return reply
    first = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": prompt_filters,
    }
    head = [sse(first), *(_filtered(event) for event in reply.head)]
    content = [_filtered(event) for event in reply.content]
    tail = [_filtered(event) for event in reply.tail]
    return StreamReply(
        reply.content_type, head, content, tail, lambda i: _filtered(reply.more(i)), headers(req)
    )


def _filtered(event: bytes) -> bytes:
    """A chunk with Azure's verdict on each choice (none on the usage chunk)."""
    text = event.decode()
    if not text.startswith("data: {"):
        return event
    body = json.loads(text.removeprefix("data: "))
    for choice in body.get("choices", []):
        choice["content_filter_results"] = _FILTERS if choice.get("delta") else {}
    return sse(body)
