"""Gemini wire format: `generateContent`, `streamGenerateContent` and embeddings.

Gemini puts the model and the method in the path (`/v1beta/models/gemini-2.0-flash:generateContent`),
so these routes are matched by pattern, not by the exact-path table of `_server`. Vertex AI
serves the same bodies under `/v1beta1/publishers/google/models/...` (express mode, with an
API key) or `/v1beta1/projects/<p>/locations/<l>/publishers/google/models/...` (with an
OAuth access token).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from urllib.parse import parse_qs

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
    has_bearer_token,
    split_answer,
    text_of,
)

#: `/{version}/models/{model}:{method}`; tuned models live under `tunedModels/`; Vertex AI's
#: `/{version}/[projects/{p}/locations/{l}/]publishers/google/models/{model}:{method}`.
PATH = re.compile(
    r"/(v1|v1beta|v1beta1|v1alpha)/"
    r"(?:(?:projects/[^/]+/locations/[^/]+/)?publishers/google/)?"
    r"(?:models|tunedModels)/([^/:]+):(\w+)"
)
_MODEL_ERROR = re.compile(r"error-(\d{3})")
_SSE = "text/event-stream"
_EMBEDDING_SIZE = 8

_STATUSES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def is_gemini(path: str) -> bool:
    """Whether `path` is one of Gemini's `models/...:method` routes."""
    return PATH.fullmatch(path) is not None


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """A Google API error body: `{"error": {"code", "message", "status"}}`."""
    kind = _STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    text = message or f"Error {status} (local provider)."
    return JsonReply(status, {"error": {"code": status, "message": text, "status": kind}})


def check_auth(req: Incoming) -> JsonReply | None:
    """403 unless the key comes as `x-goog-api-key` or as `?key=` (both are Gemini's), or
    an OAuth access token as `Authorization: Bearer` (Vertex AI's)."""
    if req.headers.get("x-goog-api-key", "").strip() or has_bearer_token(req):
        return None
    if any(v.strip() for v in parse_qs(req.query).get("key", [])):
        return None
    return error(req, 403, "Method doesn't allow unregistered callers. Please use an API Key.")


def _lower_types(schema: object) -> object:
    # Gemini's own Schema writes types upper-case ("OBJECT"); JSON schema spells them lower.
    if isinstance(schema, dict):
        return {
            k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    return schema


def _first_function(tools: object) -> JsonObject | None:
    if not isinstance(tools, list):
        return None
    for tool in tools:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations if isinstance(declarations, list) else []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                return declaration
    return None


def _parts(content: object) -> list[JsonObject]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def generate(req: Incoming, model: str, streamed: bool) -> Reply:
    """`:generateContent` and `:streamGenerateContent` (SSE with `alt=sse`, else a JSON array)."""
    contents = [c for c in req.payload.get("contents") or [] if isinstance(c, dict)]
    last = contents[-1] if contents else {}
    results = [p["functionResponse"] for p in _parts(last) if "functionResponse" in p]
    prompt = text_of(_parts(last)) if last.get("role", "user") == "user" else ""
    function = None if results else _first_function(req.payload.get("tools"))
    if results:
        answer = f"The tool returned: {compact(results[-1].get('response'))}"
    else:
        answer = f"You said: {prompt}"
    prompt_tokens = count_tokens(text_of(_parts(c)) for c in contents)
    response_id = req.ident("", 22, "gemini")

    def chunk(parts: list[JsonObject], done: bool, output_tokens: int) -> JsonObject:
        candidate: JsonObject = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if done:
            candidate["finishReason"] = "STOP"
        body: JsonObject = {"candidates": [candidate]}
        usage: JsonObject = {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens}
        if output_tokens:
            usage["candidatesTokenCount"] = output_tokens
            usage["totalTokenCount"] = prompt_tokens + output_tokens
        body["usageMetadata"] = usage
        body["modelVersion"] = model
        body["responseId"] = response_id
        return body

    if function is not None:
        # The API reads proto field names in either spelling; google-genai 2.x (under
        # pydantic-ai) writes this one snake_case.
        schema = (
            function.get("parametersJsonSchema")
            or function.get("parameters_json_schema")
            or function.get("parameters")
        )
        call = {"name": function["name"], "args": example_arguments(_lower_types(schema), prompt)}
        # Gemini sends a function call whole, never as argument deltas.
        whole = chunk([{"functionCall": call}], True, len(split_answer(compact(call), None)))
        if not streamed:
            return JsonReply(200, whole)
        return _stream(req, [], [whole], lambda i: whole)

    if not streamed:
        return JsonReply(200, chunk([{"text": answer}], True, len(split_answer(answer, None))))
    pieces = split_answer(answer, req.events)
    content = [chunk([{"text": p}], False, 0) for p in pieces[:-1]]
    final = chunk([{"text": pieces[-1]}], True, len(pieces))
    return _stream(req, content, [final], lambda i: chunk([{"text": filler(i)}], False, 0))


def _stream(
    req: Incoming,
    content: list[JsonObject],
    tail: list[JsonObject],
    more: Callable[[int], JsonObject],
) -> StreamReply:
    if parse_qs(req.query).get("alt") == ["sse"]:
        # Gemini ends its server-sent events with CRLF pairs.
        def event(body: JsonObject) -> bytes:
            return f"data: {compact(body)}\r\n\r\n".encode()

        return StreamReply(
            _SSE,
            [],
            [event(c) for c in content],
            [event(t) for t in tail],
            lambda i: event(more(i)),
        )

    # Without alt=sse the stream is one JSON array written element by element.
    def element(body: JsonObject, first: bool) -> bytes:
        return (("[" if first else ",\r\n") + compact(body)).encode()

    bodies = [*content, *tail]
    if len(bodies) == 1:
        return StreamReply(
            "application/json",
            [],
            [],
            [element(bodies[0], True) + b"]"],
            lambda i: element(more(i), False),
        )
    return StreamReply(
        "application/json",
        [element(bodies[0], True)],
        [element(body, False) for body in bodies[1:-1]],
        [element(bodies[-1], False) + b"]"],
        lambda i: element(more(i), False),
    )


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    # Deterministic values in [-1, 1) with four decimals, like a (short) real embedding.
    return [round((b - 128) / 128, 4) for b in digest[:_EMBEDDING_SIZE]]


def embed(req: Incoming) -> Reply:
    """`:embedContent`: one vector for the request's `content`."""
    return JsonReply(
        200, {"embedding": {"values": _vector(text_of(_parts(req.payload.get("content"))))}}
    )


def batch_embed(req: Incoming) -> Reply:
    """`:batchEmbedContents`: one vector per entry of `requests`."""
    requests = [r for r in req.payload.get("requests") or [] if isinstance(r, dict)]
    vectors = [{"values": _vector(text_of(_parts(r.get("content"))))} for r in requests]
    return JsonReply(200, {"embeddings": vectors})


def route(req: Incoming) -> Reply:
    """Answers a Gemini `models/{model}:{method}` request (auth is checked by the server)."""
    found = PATH.fullmatch(req.path)
    if found is None or req.method != "POST":
        return error(req, 404, f"Invalid URL ({req.method} {req.path})")
    model, method = found.group(2), found.group(3)
    wanted = _MODEL_ERROR.fullmatch(model)
    if wanted:
        return error(req, int(wanted.group(1)))
    if method == "generateContent":
        return generate(req, model, streamed=False)
    if method == "streamGenerateContent":
        return generate(req, model, streamed=True)
    if method == "embedContent":
        return embed(req)
    if method == "batchEmbedContents":
        return batch_embed(req)
    return error(req, 404, f"Method {method} is not supported by the local provider.")
