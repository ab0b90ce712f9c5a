"""Split streamed bodies into events and store each event as one readable record.

Three stream kinds are understood:

* ``sse`` (``text/event-stream``): an event is every line up to and including the blank
  line that ends it. An event made only of ``event:``, ``id:``, ``retry:`` and ``data:``
  fields written as ``field: value`` lines with ``\\n`` line ends is stored as
  those fields, with a ``data`` that is JSON stored as JSON. An event whose every line
  ends in ``\r\n`` (Gemini's ``alt=sse`` streams) is stored the same way with
  ``"eol": "\r\n"``. The ``event`` field is left out when it names the ``type`` of the
  JSON object in ``data`` (Anthropic and OpenAI Responses name every event so), and is
  ``null`` when such an event came without an ``event:`` line (``event_name``). Anything
  else (comments, mixed line ends, unusual spacing, a last event without its blank line)
  is kept as ``raw`` text, so rebuilding the stream gives back the exact bytes.
* ``ndjson`` (``application/x-ndjson`` and friends): an event is one line.
* ``json-array`` (``application/json`` answering Gemini's ``:streamGenerateContent``
  without ``alt=sse``): an event is one array element with the ``[`` or comma before it
  (``cassette.jsonarray``).

``stream_kind`` is the one place that tells which kind a response is.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from llmcassette.cassette import jsonarray, jsontext

SSE = "sse"
NDJSON = "ndjson"
JSON_ARRAY = jsonarray.KIND

_NDJSON_TYPES = frozenset(
    {
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/jsonlines",
        "application/json-lines",
    }
)

_EOL = re.compile(r"\r\n|\r|\n")
_SSE_FIELDS = ("event", "id", "retry")
_SSE_OTHER = _SSE_FIELDS[1:]  # the fields after the event name
CRLF = "\r\n"  # the only line end other than "\n" stored as fields (field ``eol``)


def stream_kind(
    content_type: str | None, uri: str | None = None, body: bytes | str | None = None
) -> str | None:
    """Which stream kind a response is, if any.

    SSE and NDJSON are told by the ``content-type`` alone. A streamed JSON array is
    ``application/json`` like any JSON body: it is told by the ``uri`` of its request as
    well (``jsonarray.is_streamed_array``), and by the ``body`` starting with ``[`` when
    the body is given. Without a ``uri`` (a request body), no JSON array is a stream.
    Without a ``content-type``, a ``body`` made only of whole SSE events is SSE: suites
    drop every response header in ``before_record_response`` (OpenInference's do).
    """
    if not content_type:
        return SSE if body is not None and _sse_shaped(body) else None
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "text/event-stream":
        return SSE
    if media in _NDJSON_TYPES:
        return NDJSON
    if jsonarray.is_streamed_array(media, uri, body):
        return JSON_ARRAY
    return None


# Lines of SSE fields (data, event, id, retry) and comments, each event ended by an empty line.
_SSE_BODY = re.compile(r"(?:(?:(?:data|event|id|retry)(?::[^\r\n]*)?|:[^\r\n]*)?(?:\r\n|\r|\n))+")
_SSE_DATA = re.compile(r"^data(?::|$)", re.MULTILINE)
_SSE_END = ("\n\n", "\r\n\r\n", "\r\r")


def _sse_shaped(body: bytes | str) -> bool:
    """Whether ``body`` is whole SSE events, at least one with data: nothing else is."""
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError:
        return False
    return (
        text.endswith(_SSE_END)
        and _SSE_DATA.search(text) is not None
        and _SSE_BODY.fullmatch(text) is not None
    )


# OpenAI-style providers whose chat streams end with the usage chunk, with no ``[DONE]``
# after it. Not a rule for all: OpenAI itself may send more after it (a ``moderation`` chunk).
ENDS_AT_USAGE_HOSTS = frozenset({"api.writer.com"})


def ends_at_usage_chunk(uri: str | None, data: Any) -> bool:
    """Whether ``data``, the last chunk of an OpenAI-style chat stream sent to ``uri``, is
    the end its provider sends: the chunk with the token counts (no ``choices``, a
    ``usage`` object), from a provider that sends nothing after it."""
    return (
        isinstance(data, dict)
        and data.get("choices") == []
        and isinstance(data.get("usage"), dict)
        and uri is not None
        and _hostname(uri) in ENDS_AT_USAGE_HOSTS
    )


def _hostname(uri: str) -> str | None:
    """The host of ``uri``; None when it has none, or when ``urlsplit`` refuses it ("[...]"
    that is no IPv6 address), whose error would quote the text between the brackets."""
    try:
        return urlsplit(uri).hostname
    except ValueError:
        return None


def split_events(kind: str, text: str) -> list[str]:
    """Cut a whole stream into event texts whose concatenation is ``text``."""
    if kind == JSON_ARRAY:
        return jsonarray.split(text)
    if kind == NDJSON:
        # Only "\n" ends an NDJSON record; str.splitlines would also cut at U+2028 and friends.
        lines = [line + "\n" for line in text.split("\n")]
        lines[-1] = lines[-1][:-1]
        return lines if lines[-1] else lines[:-1]
    if "\r" not in text:
        return _split_sse_lf(text)
    blocks: list[str] = []
    block_start = line_start = 0
    for match in _EOL.finditer(text):
        if match.start() == line_start:  # an empty line ends the event
            blocks.append(text[block_start : match.end()])
            block_start = match.end()
        line_start = match.end()
    if block_start < len(text):
        blocks.append(text[block_start:])
    return blocks


def split_body(kind: str | None, body: bytes) -> list[str] | None:
    """``split_events`` for a body as bytes; None for no stream kind or bytes not UTF-8."""
    if kind is None:
        return None
    try:
        return split_events(kind, body.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def _split_sse_lf(text: str) -> list[str]:
    # split_events for text whose lines all end in "\n": an event ends at the first "\n\n"
    # (a line end, then an empty line), or is a lone empty line.
    blocks: list[str] = []
    start = 0
    while True:
        if text.startswith("\n", start):
            blocks.append("\n")
            start += 1
            continue
        end = text.find("\n\n", start)
        if end < 0:
            break
        blocks.append(text[start : end + 2])
        start = end + 2
    if start < len(text):
        blocks.append(text[start:])
    return blocks


def payloads(kind: str, text: str) -> list[tuple[str | None, Any]]:
    """Each event of a stream as ``(event name, data)``, read leniently, for summaries.

    ``data`` is the parsed JSON when it is JSON, else its text (``"[DONE]"``), or None when
    the event has none. Events with neither (blank lines, comments) are left out.
    """
    return [(name, parse_data(data)) for name, data in read_events(kind, text)]


def read_events(kind: str, text: str) -> list[tuple[str | None, str | None]]:
    """Each event of a stream as ``(event name, data text)``, without parsing the data.

    Events with neither (blank lines, comments) are left out.
    """
    out: list[tuple[str | None, str | None]] = []
    for piece in split_events(kind, text):
        name, data_text = read_event(kind, piece)
        if name is not None or data_text is not None:
            out.append((name, data_text))
    return out


def parse_data(data_text: str | None) -> Any:
    """An event's data: the parsed JSON when it is JSON, else its text (None stays None)."""
    try:
        return jsontext.loads_body(data_text) if data_text else data_text
    except ValueError:  # no JSON, or JSON too deep to read as such (jsontext.MAX_BODY_DEPTH)
        return data_text


def read_event(kind: str, piece: str) -> tuple[str | None, str | None]:
    """One event's name and data text, read leniently (both None: a blank line or comment)."""
    if kind == NDJSON:
        return None, piece.strip() or None
    if kind == JSON_ARRAY:
        parsed = jsonarray.parse_piece(piece)
        return None, parsed[1] if parsed is not None else None
    if (
        piece.startswith("data: ")
        and piece.find("\n") == len(piece) - 2
        and piece[-1] == "\n"
        and "\r" not in piece
    ):
        return None, piece[6:-2]  # one data line and the blank line
    name, data_lines = None, []
    for line in piece.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data_lines.append(value)
    return name, "\n".join(data_lines) if data_lines else None


def encode_event(kind: str, text: str) -> dict[str, Any]:
    """The cassette fields for one event (without ``type`` and timing).

    The parsers accept only events that ``render_event`` writes back byte for byte (a
    structured payload is kept only when its layout renders it exactly), so the fields
    are not rendered again to compare: that would cost a second JSON encoding per event.
    """
    return _encode_piece(kind, text)[0]


def encode_events(
    kind: str, text: str, compact_data: list[str | None] | None = None
) -> list[dict[str, Any]]:
    """``encode_event`` for every event of a stream.

    ``compact_data``, when given, receives for each event the text of its ``data`` field
    when that field rebuilds it in the compact layout (the text as streamed), else None:
    the cassette writer copies that text into the line instead of encoding the value again.
    """
    out: list[dict[str, Any]] = []
    for piece in split_events(kind, text):
        fields, compact = _encode_piece(kind, piece)
        out.append(fields)
        if compact_data is not None:
            compact_data.append(compact)
    return out


def _encode_piece(kind: str, piece: str) -> tuple[dict[str, Any], str | None]:
    """One event's fields, and the text of its ``data`` when stored in the compact layout."""
    split = event_fields(kind, piece)
    if split is None:
        return {"raw": piece}, None
    fields, payload = split
    if payload is None:
        return fields, None
    structured = structure_payload(payload)
    fields.update(structured)
    if kind == SSE:
        leave_implied_name_out(fields)
    if len(structured) > 1 or "data" not in structured:  # not compact, or not JSON
        return fields, None
    return fields, payload


def _implied_name(fields: dict[str, Any]) -> str | None:
    data = fields.get("data")
    name = data.get("type") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


def event_name(fields: dict[str, Any]) -> str | None:
    """The name an SSE event's ``event:`` line gives it, None when it has no such line.

    A stored event leaves the name out when it is the ``type`` of the JSON object in its
    ``data``, and says ``"event": null`` when an event with such a ``type`` came without
    an ``event:`` line (``leave_implied_name_out``).
    """
    if "event" in fields:
        name = fields["event"]
        if name is not None and not isinstance(name, str):
            raise TypeError(f"field 'event' must be a string or null, not {type(name).__name__}")
        return name
    return _implied_name(fields)


def leave_implied_name_out(fields: dict[str, Any]) -> None:
    """Store an SSE event's name as ``event_name`` reads it: left out when the ``type`` of
    its data says it, ``null`` when there is no ``event:`` line but the data has a type."""
    implied = _implied_name(fields)
    if implied is None:
        return
    if "event" not in fields:
        fields["event"] = None
    elif fields["event"] == implied:
        del fields["event"]


def event_fields(kind: str, piece: str) -> tuple[dict[str, Any], str | None] | None:
    """An event's fields other than its payload, and the payload text (None: it has none).

    None when the event is kept as ``raw`` text (see the module's docstring).
    """
    if kind == JSON_ARRAY:
        return _parse_array_piece(piece)
    return _parse_sse(piece) if kind == SSE else _parse_ndjson(piece)


def render_event(kind: str, fields: dict[str, Any]) -> str:
    """Rebuild the exact text of one event from its cassette fields."""
    raw = fields.get("raw")
    if raw is not None:
        return str(raw)
    payload = _payload(fields)
    if kind == NDJSON:
        return (payload or "") + "\n"
    if kind == JSON_ARRAY:
        return _string(fields, "before") + (payload or "") + _after(fields)
    eol = CRLF if "eol" in fields else "\n"
    name = event_name(fields)
    out = [f"event: {name}{eol}"] if name is not None else []
    out += [f"{field}: {_string(fields, field)}{eol}" for field in _SSE_OTHER if field in fields]
    if payload is not None:
        out.extend(f"data: {line}{eol}" for line in payload.split("\n"))
    out.append(eol)
    return "".join(out)


def check_fields(kind: str, fields: dict[str, Any]) -> None:
    """Raise what ``render_event`` would raise for these fields, without rendering them.

    Lets a cassette be validated at load while its events are rendered only when played.
    """
    if fields.get("raw") is not None:
        return
    if "data" in fields:
        jsontext.check_layout(jsontext.layout_of(fields))
    elif "text" in fields and "\n" in _string(fields, "text") and kind == NDJSON:
        raise ValueError("an NDJSON event's 'text' is one line: it cannot hold '\\n'")
    if kind == JSON_ARRAY:
        if "before" not in fields:
            raise ValueError("a JSON-array event needs 'before' (the '[' or ',') or 'raw'")
        jsonarray.check_separators(_string(fields, "before"), _after(fields))
        if "text" in fields:
            _string(fields, "text")
    elif kind != NDJSON:
        if "eol" in fields and fields["eol"] != CRLF:
            raise ValueError(f"field 'eol' can only be '\\r\\n', not {fields['eol']!r}")
        event_name(fields)
        for name in _SSE_OTHER:
            if name in fields:
                _string(fields, name)
        if "retry" in fields and not fields["retry"].isdigit():
            raise ValueError(f"field 'retry' must be a string of digits, not {fields['retry']!r}")


def _payload(fields: dict[str, Any]) -> str | None:
    if "data" in fields:
        return jsontext.render(fields["data"], jsontext.layout_of(fields))
    return _string(fields, "text") if "text" in fields else None


def _string(fields: dict[str, Any], name: str) -> str:
    value = fields[name]
    if not isinstance(value, str):  # str() would write e.g. "None" into the replayed stream
        raise TypeError(f"field {name!r} must be a string, not {type(value).__name__}")
    return value


def structure_payload(payload: str) -> dict[str, Any]:
    """The fields that store a payload: ``data`` (and ``layout``) for JSON, else ``text``."""
    parsed = jsontext.parse_exact(payload)
    if parsed is None:
        return {"text": payload}
    value, layout = parsed
    return {**jsontext.stored_layout(layout), "data": value}


def _parse_sse(text: str) -> tuple[dict[str, Any], str | None] | None:
    if text.endswith("\r\n\r\n"):
        # Every line ends in CRLF, and no CR or LF stands alone: parse it as LF, mark it.
        lf = text.replace(CRLF, "\n")
        if "\r" in lf or lf.count("\n") != text.count(CRLF):
            return None
        parsed = _parse_sse_lf(lf)
        if parsed is None:
            return None
        fields, payload = parsed
        return {**fields, "eol": CRLF}, payload
    return _parse_sse_lf(text)


def _parse_sse_lf(text: str) -> tuple[dict[str, Any], str | None] | None:
    # The fields and the data text, or None unless render_event rebuilds ``text`` exactly:
    # "name: value" lines with "\n" ends, event/id/retry at most once each, in that order,
    # before any data line, and the blank line that ends the event.
    if len(text) <= 2 or not text.endswith("\n\n") or "\r" in text:
        return None
    if text.startswith("data: ") and text.find("\n") == len(text) - 2:
        return {}, text[6:-2]  # one data line
    fields: dict[str, Any] = {}
    data_lines: list[str] = []
    order = -1  # position in _SSE_FIELDS of the last field seen
    for line in text[:-2].split("\n"):
        name, sep, value = line.partition(": ")
        if not sep:
            return None
        if name == "data":
            data_lines.append(value)
        elif name in _SSE_FIELDS and _SSE_FIELDS.index(name) > order and not data_lines:
            if name == "retry" and not value.isdigit():
                return None
            fields[name] = value
            order = _SSE_FIELDS.index(name)
        else:
            return None
    if not data_lines:
        return fields, None
    return fields, "\n".join(data_lines)


def _after(fields: dict[str, Any]) -> str:
    return _string(fields, "after") if "after" in fields else ""


def _parse_array_piece(piece: str) -> tuple[dict[str, Any], str] | None:
    parsed = jsonarray.parse_piece(piece)
    if parsed is None:
        return None
    before, element, after = parsed
    return ({"before": before, "after": after} if after else {"before": before}), element


def _parse_ndjson(text: str) -> tuple[dict[str, Any], str] | None:
    if not text.endswith("\n") or "\r" in text:
        return None
    return {}, text[:-1]
