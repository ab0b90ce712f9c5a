"""The comparable form of a request body: parsed JSON, parsed form fields, events, or text."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import parse_qsl

from llmcassette.cassette import events, jsontext

_PLACEHOLDER_NUMBER = re.compile(r"(<REDACTED:[A-Za-z0-9_.\-]+):[0-9]+>")
_PLACEHOLDER = re.compile(r"<REDACTED:[A-Za-z0-9_.\-]+(?::[0-9]+)?>")


def fills_placeholders(recorded: str, incoming: str) -> bool:
    """Whether ``incoming`` is ``recorded`` with a value of one or more characters where
    each of its placeholders stands.

    A cassette replaces a credential everywhere once any call names it (a password that a
    later tool call sends under ``password`` is taken out of the earlier prompt too), but a
    live request redacted on its own does not know that value: it sends it as it is.
    """
    pieces = _PLACEHOLDER.split(recorded)
    if len(pieces) == 1:
        return False  # no placeholder: only equal strings match
    first, *middle, last = pieces
    if not incoming.startswith(first) or not incoming.endswith(last):
        return False
    position, end = len(first), len(incoming) - len(last)
    for literal in middle:  # leftmost placement leaves the most room for what follows
        found = incoming.find(literal, position + 1, end - 1)
        if found < 0:
            return False
        position = found + len(literal)
    return end - position >= 1


class _ParsedBodies:
    """The parses of the bodies read last, kept by their bytes up to ``budget`` bytes of
    bodies in all; a body over ``largest`` bytes is parsed each time.

    A lookup, its mismatch report and the check at a cassette's exit read the same body
    several times. Kept by number (8,192), they held every request body of a suite and its
    parse for the life of the process: 128 MB after opening the 1,289 pydantic-ai
    cassettes, with every one of them closed. Keeping a large body saves little: finding
    it again hashes and compares all of its bytes.
    """

    def __init__(self, budget: int, largest: int) -> None:
        self.budget = budget
        self.largest = largest
        self._kept: OrderedDict[tuple[bytes, bool, str | None], Any] = OrderedDict()
        self._size = 0  # bytes of the bodies kept
        self._lock = threading.Lock()  # requests of several threads are matched at once

    def parse(self, raw: bytes, form: bool, stream: str | None) -> Any:
        """``raw`` parsed as ``_parse_body`` parses it (the same object while kept)."""
        if len(raw) > self.largest:
            return _parse_body(raw, form, stream)
        key = (raw, form, stream)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        value = _parse_body(raw, form, stream)  # outside the lock: others go on matching
        with self._lock:
            if key not in self._kept:
                self._kept[key] = value
                self._size += len(raw)
                while self._size > self.budget:
                    (dropped, _, _), _ = self._kept.popitem(last=False)
                    self._size -= len(dropped)
        return value

    def kept_bytes(self) -> int:
        """The bytes of the bodies whose parses are kept now."""
        return self._size


PARSED = _ParsedBodies(budget=8 * 1024 * 1024, largest=512 * 1024)


def _parse(raw: bytes, form: bool, stream: str | None) -> Any:
    return PARSED.parse(raw, form, stream)


def _parse_body(raw: bytes, form: bool, stream: str | None) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    if "<REDACTED:" in text:
        # Placeholders are numbered in the order secrets are met; that order is not part of
        # the request, so `<REDACTED:openai-api-key:2>` matches `<REDACTED:openai-api-key>`.
        text = _PLACEHOLDER_NUMBER.sub(r"\1>", text)
    if form:
        fields: dict[str, list[str]] = {}
        # A percent-escape that is not UTF-8 (%FF) kept as its byte, not as U+FFFD: with
        # "replace", every such byte would read alike and "%FF" would match "%FE".
        for key, value in parse_qsl(text, keep_blank_values=True, errors="surrogateescape"):
            fields.setdefault(key, []).append(value)
        return fields
    if stream is not None:
        return _events(stream, text)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = jsontext.loads_strict(stripped)
        except (ValueError, RecursionError):
            pass
        else:  # JSON nested past jsontext.MAX_BODY_DEPTH is compared as text
            return text if jsontext.nests_too_deep(stripped, value) else value
        lines = stripped.split("\n")
        if len(lines) > 1 and all(line.lstrip()[:1] in ("{", "[") for line in lines):
            return _events(events.NDJSON, text)  # JSON Lines sent without its content-type
    return text


def _events(kind: str, text: str) -> list[Any]:
    """A streamed request body as its events: NDJSON records, or SSE ``{event, data}``."""
    if kind == events.NDJSON:
        return [data for _, data in events.payloads(kind, text)]
    return [
        {"data": data} if name is None else {"event": name, "data": data}
        for name, data in events.payloads(kind, text)
    ]


def body_value(body: Any, content_type: str | None = None) -> Any:
    """Parse a request body into the value that matching compares.

    JSON becomes Python values (key order no longer matters), form bodies become a mapping
    of field lists, multipart bodies a list of their parts (``_multipart``), NDJSON and SSE
    bodies a list of their events (each parsed), other UTF-8 text stays text, anything else
    stays bytes.
    """
    if body is None:
        return None
    if isinstance(body, (dict, list)):
        return body  # already parsed (vcrpy's aiohttp stub keeps a `json=` argument as is)
    if isinstance(body, str):
        body = body.encode("utf-8")
    if not isinstance(body, bytes):
        body = bytes(body) if isinstance(body, (bytearray, memoryview)) else str(body).encode()
    if not body:
        return None
    boundary = _BOUNDARY.search(str(content_type or ""))
    if boundary is not None:
        parts = _multipart(body, boundary.group(1).strip('"').encode("latin-1"))
        if parts is not None:
            return parts
    form = bool(content_type) and "application/x-www-form-urlencoded" in str(content_type).lower()
    return _parse(body, form, events.stream_kind(content_type))


_BOUNDARY = re.compile(r"multipart/[\w.+-]+\s*;.*?boundary=(\"[^\"]+\"|[^;\s]+)", re.I)


def _multipart(body: bytes, boundary: bytes) -> list[dict[str, Any]] | None:
    """A multipart body (an upload) as its parts, each its headers and its content as
    ``_parse`` reads it; None when ``body`` is not split by ``boundary``.

    Clients make up a new boundary for every request: compared as sent, no recorded upload
    would ever match again.
    """
    delimiter = b"--" + boundary
    pieces = body.split(delimiter)
    if len(pieces) < 3 or not pieces[-1].startswith(b"--"):
        return None  # no closing delimiter: not this body's boundary
    parts = []
    for piece in pieces[1:-1]:
        head, separator, content = piece.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not separator:
            return None
        headers = {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        content = content.removesuffix(b"\r\n")
        kind = headers.get("content-type", "").lower()
        parsed = _parse(content, "x-www-form-urlencoded" in kind, events.stream_kind(kind))
        parts.append({"headers": headers, "content": parsed})
    return parts
