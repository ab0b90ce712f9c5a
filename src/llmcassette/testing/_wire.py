"""Provider-neutral building blocks: request/reply shapes, ids, tokens, framing."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Every "created" timestamp the fake provider reports (2023-11-14T22:13:20Z).
CREATED = 1_700_000_000
CREATED_ISO = "2023-11-14T22:13:20Z"
#: The HTTP Date header value; fixed so re-recording yields identical headers too.
HTTP_DATE = "Tue, 14 Nov 2023 22:13:20 GMT"

JsonObject = dict[str, Any]

_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")
# Splitting JSON on word/non-word runs gives pieces like '{"', 'city', '": "', 'Paris', '"}',
# which is what OpenAI's and Anthropic's tool-argument deltas look like.
_JSON_PIECE = re.compile(r"\w+|\W+")
_FILLER = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")


@dataclass(frozen=True)
class Incoming:
    """A parsed request as the route builders see it."""

    method: str
    path: str
    headers: Mapping[str, str]
    payload: JsonObject
    digest: str
    events: int | None = None
    #: The raw query string (Gemini sends `alt=sse` and may send `key=` there).
    query: str = ""

    @property
    def model(self) -> str:
        """The requested model name, or a placeholder when none was sent."""
        model = self.payload.get("model")
        return model if isinstance(model, str) and model else "local-model"

    @property
    def streaming(self) -> bool:
        """Whether the client asked for a streamed answer."""
        return self.payload.get("stream") is True

    def ident(self, prefix: str, length: int = 24, salt: str = "") -> str:
        """A stable id for this request: `prefix` + hex derived from the request hash."""
        raw = hashlib.sha256((salt + self.digest).encode()).hexdigest()
        return prefix + raw[:length]


@dataclass
class JsonReply:
    """A complete (non-streamed) JSON answer."""

    status: int
    payload: object
    headers: list[tuple[str, str]] = field(default_factory=list)
    indent: int | None = None
    compressible: bool = False


@dataclass
class StreamReply:
    """A streamed answer; every element of head/content/tail is one wire event (one HTTP chunk).

    `more(i)` builds the i-th extra content event for endless streams (the tail is never sent
    then).
    """

    content_type: str
    head: list[bytes]
    content: list[bytes]
    tail: list[bytes]
    more: Callable[[int], bytes]
    headers: list[tuple[str, str]] = field(default_factory=list)


Reply = JsonReply | StreamReply


def request_digest(method: str, path: str, body: bytes) -> str:
    """Hash of what identifies a request; identical requests get identical ids."""
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).hexdigest()


def compact(obj: object) -> str:
    """JSON the way streaming APIs write it: no spaces, non-ASCII kept as-is."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def sse(data: object | str, event: str | None = None) -> bytes:
    """One server-sent event; `data` objects are written as compact JSON."""
    text = data if isinstance(data, str) else compact(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def ndjson(obj: object) -> bytes:
    """One newline-terminated JSON line."""
    return (compact(obj) + "\n").encode()


def tokens(text: str) -> list[str]:
    """Word-ish tokens with their leading whitespace, so that `"".join(tokens(t)) == t`."""
    return _TOKEN.findall(text)


def filler(i: int) -> str:
    """The i-th padding token (used to lengthen or endlessly continue an answer)."""
    return " " + _FILLER[i % len(_FILLER)]


def split_answer(text: str, events: int | None) -> list[str]:
    """Split `text` into streamed pieces; with `events` set, pad or merge to exactly that many."""
    pieces = tokens(text) or [text]
    if events is None:
        return pieces
    events = max(1, events)
    pieces += [filler(pad) for pad in range(events - len(pieces))]
    return _merge(pieces, events)


def split_json(text: str, events: int | None) -> list[str]:
    """Split a JSON string into argument deltas; with `events` set, exactly that many."""
    pieces = _JSON_PIECE.findall(text) or [text]
    if events is None:
        return pieces
    events = max(1, events)
    if len(text) < events:
        # Trailing whitespace keeps the JSON valid while giving every event a character.
        text += " " * (events - len(text))
    # Too few word/non-word runs: cut the text itself into equal runs of characters.
    return _merge(pieces if len(pieces) >= events else list(text), events)


def _merge(pieces: list[str], groups: int) -> list[str]:
    size, extra = divmod(len(pieces), groups)
    out, start = [], 0
    for i in range(groups):
        end = start + size + (1 if i < extra else 0)
        out.append("".join(pieces[start:end]))
        start = end
    return out


def count_tokens(texts: Iterable[str]) -> int:
    """A deterministic stand-in for a tokenizer's count."""
    return sum(len(tokens(t)) for t in texts)


def text_of(content: object) -> str:
    """Flatten message content: a string, or a list of parts/blocks carrying `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [text_of(part) for part in content]
        return " ".join(p for p in parts if p)
    if isinstance(content, dict):
        text = content.get("text")
        if isinstance(text, str):
            return text
        # Tool results nest their payload under `content` (Anthropic) or `output` (Responses).
        for key in ("content", "output"):
            if key in content:
                return text_of(content[key])
    return ""


def last_user_text(messages: list[JsonObject]) -> str:
    """The content of the latest user turn as text, or "" when there is none."""
    return next(
        (text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
    )


def has_bearer_token(req: Incoming) -> bool:
    """Whether the request carries a non-empty ``Authorization: Bearer ...`` header."""
    auth = req.headers.get("authorization", "")
    return auth.lower().startswith("bearer ") and bool(auth[7:].strip())


def example_arguments(schema: object, prompt: str) -> JsonObject:
    """Deterministic tool arguments for a JSON schema: the first string property gets `prompt`."""
    state = {"prompt_used": False}

    def value(node: object, name: str) -> object:
        if not isinstance(node, dict):
            return name
        if "enum" in node and isinstance(node["enum"], list) and node["enum"]:
            return node["enum"][0]
        if "const" in node:
            return node["const"]
        for key in ("anyOf", "oneOf", "allOf"):
            options = node.get(key)
            if isinstance(options, list) and options:
                return value(options[0], name)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or (kind is None and "properties" in node):
            props = node.get("properties")
            if not isinstance(props, dict):
                return {}
            return {key: value(sub, key) for key, sub in props.items()}
        if kind == "array":
            return [value(node.get("items"), name)]
        if kind == "integer":
            return int(node.get("minimum", 1))
        if kind == "number":
            return float(node.get("minimum", 1.5))
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        if not state["prompt_used"]:
            state["prompt_used"] = True
            return prompt
        return f"example {name}"

    result = value(schema if isinstance(schema, dict) else {"type": "object"}, "value")
    return result if isinstance(result, dict) else {"value": result}
