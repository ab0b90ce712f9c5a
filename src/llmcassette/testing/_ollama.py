"""Ollama wire format: `/api/chat` and `/api/generate` as newline-delimited JSON."""

from __future__ import annotations

from llmcassette.testing._wire import (
    CREATED_ISO,
    Incoming,
    JsonObject,
    JsonReply,
    Reply,
    StreamReply,
    count_tokens,
    filler,
    last_user_text,
    ndjson,
    split_answer,
    text_of,
)

_NDJSON = "application/x-ndjson"


def error(req: Incoming, status: int, message: str | None = None) -> JsonReply:
    """Ollama reports errors as `{"error": "message"}`."""
    return JsonReply(status, {"error": message or f"error {status} (local provider)"})


def check_auth(req: Incoming) -> JsonReply | None:
    """Ollama has no authentication."""
    return None


def _stats(prompt_tokens: int, eval_tokens: int) -> JsonObject:
    # Durations are in nanoseconds, made up but fixed so recordings are stable.
    return {
        "total_duration": 5_000_000 * (prompt_tokens + eval_tokens + 1),
        "load_duration": 1_000_000,
        "prompt_eval_count": prompt_tokens,
        "prompt_eval_duration": 2_000_000 * prompt_tokens,
        "eval_count": eval_tokens,
        "eval_duration": 3_000_000 * eval_tokens,
    }


def _reply(req: Incoming, answer: str, prompt_tokens: int, key: str) -> Reply:
    """Shared by both routes; `key` is where the text goes ("message" or "response")."""

    def line(text: str, done: bool) -> JsonObject:
        body: JsonObject = {"model": req.model, "created_at": CREATED_ISO}
        body[key] = {"role": "assistant", "content": text} if key == "message" else text
        body["done"] = done
        return body

    # Ollama streams unless the request says `"stream": false`.
    if req.payload.get("stream", True) is False:
        final = line(answer, True)
        final.update(done_reason="stop", **_stats(prompt_tokens, len(split_answer(answer, None))))
        return JsonReply(200, final)

    pieces = split_answer(answer, req.events)
    final = line("", True)
    final.update(done_reason="stop", **_stats(prompt_tokens, len(pieces)))
    return StreamReply(
        _NDJSON,
        head=[],
        content=[ndjson(line(piece, False)) for piece in pieces],
        tail=[ndjson(final)],
        more=lambda i: ndjson(line(filler(i), False)),
    )


def chat(req: Incoming) -> Reply:
    """`POST /api/chat`."""
    messages = [m for m in req.payload.get("messages") or [] if isinstance(m, dict)]
    prompt = last_user_text(messages)
    tokens = count_tokens(text_of(m.get("content")) for m in messages)
    return _reply(req, f"You said: {prompt}", tokens, "message")


def generate(req: Incoming) -> Reply:
    """`POST /api/generate`."""
    prompt = text_of(req.payload.get("prompt"))
    return _reply(req, f"You said: {prompt}", count_tokens([prompt]), "response")
