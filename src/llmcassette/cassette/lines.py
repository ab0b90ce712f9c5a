"""How a cassette record becomes one line of text.

Every line is its record as JSON with ``", "`` and ``": "`` between items, except an
event's ``data`` in the compact layout, which is written compact: it is then the payload
exactly as the stream sent it. ``docs/format.md`` explains why (determinism rules).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from llmcassette.cassette import events, jsontext

# One encoder for every line: json.dumps with options builds a new encoder on each call.
_encode_line = jsontext.encoder(", ", ": ", ensure_ascii=False, allow_nan=False)
_encode_compact = jsontext.encoder(",", ":", ensure_ascii=False, allow_nan=False)

#: Characters that ``str.splitlines()`` and many editors also take for line ends.
LINE_SEPARATORS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def dump(record: Mapping[str, Any]) -> str:
    """``record`` as one line."""
    return one_line(_encode_line(record), record)


def one_line(line: str, record: Mapping[str, Any]) -> str:
    """``line`` (``record`` as JSON text) made one line of UTF-8 for every reader."""
    if line.isascii():
        return line  # no lone surrogate and no line separator can be in it
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from an escaped JSON body: keep it escaped
        line = json.dumps(record, ensure_ascii=True, allow_nan=False)
    # JSON strings are the only place line separators can occur, so escaping them keeps
    # one record per line.
    if any(separator in line for separator in LINE_SEPARATORS):
        for separator, escaped in LINE_SEPARATORS.items():
            line = line.replace(separator, escaped)
    return line


def event_line(t: Any, fields: dict[str, Any], compact_data: str | None) -> str:
    """An event line; ``data`` in the compact layout is written compact, as it was streamed.

    ``compact_data`` is the text of ``fields["data"]`` when known (the stream's own text,
    which redaction left alone): it is copied in, which saves encoding the value again.
    """
    if "data" not in fields or "layout" in fields:
        return dump(_event_record(t, fields))
    if compact_data is None:
        compact_data = _encode_compact(fields["data"])
    if len(fields) > 1 or (t is not None and (type(t) is not float or not math.isfinite(t))):
        others = {name: value for name, value in fields.items() if name != "data"}
        head = _encode_line(_event_record(t, others))[:-1] + ', "data": '
    elif t is None:
        head = '{"type": "event", "data": '
    else:  # "t" and "data" only: the head written directly
        head = '{"type": "event", "t": ' + float.__repr__(t) + ', "data": '
    line = head + compact_data + "}"
    return line if line.isascii() else one_line(line, _event_record(t, fields))


def _event_record(t: Any, fields: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "event"}
    if t is not None:
        record["t"] = t
    record.update(fields)
    return record


# What ``event_line`` writes for data in the compact layout: this head, the payload as
# streamed, "}". Field values without escapes (their text is their value), "t" unsigned.
_NAME = r'"([^"\\]*)"'
_STORED_HEAD = re.compile(
    r'\{"type": "event"(?:, "t": ((?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?))?'
    rf'(?:, "event": {_NAME})?(?:, "id": {_NAME})?(?:, "retry": "([0-9]+)")?, "data": '
)
# JSON text exactly as the compact encoder writes it (json.dumps with separators=(",", ":")
# and ensure_ascii=False): no whitespace, only the escapes it uses, integers as Python
# spells them, no floats (their spelling would need parsing). Arrays and objects nest up
# to _NESTING deep; the pattern tells where each closes, so it matches one whole value.
_STRING = r'"(?:[^"\\\x00-\x1f]++|\\["\\bfnrt]|\\u00(?:0[0-7bef]|1[0-9a-f]))*+"'
_SCALAR = _STRING + r"|0|-?[1-9][0-9]*+|true|false|null"
_NESTING = 12
_value = _SCALAR
for _ in range(_NESTING):
    _value = rf"[\[{{](?:(?:{_STRING}:)?(?:{_value}),?)*+[\]}}]|{_SCALAR}"
_COMPACT_VALUE = re.compile(_value)
del _value


def stored_event(kind: str, line: str) -> tuple[bytes, float | None] | None:
    """An event's bytes and time read straight from its line, when ``event_line`` wrote it
    with compact data; None for any other line, whose record is parsed and rendered instead.

    Replay rebuilds every streamed event from its line. Parsing the line and encoding its
    data again costs about a third of a replay; when the line is in the writer's layout,
    the payload is already there as the stream sent it, and slicing it out gives the same
    bytes as ``bodies.decode_event`` on the parsed record. The pattern accepts only text
    the compact encoder writes, with no key twice anywhere (a duplicated key would be
    dropped by parsing), so nothing else takes this path. The line must have passed the
    loader's checks (valid JSON, valid fields). ``tests/format/test_format_stored_event.py``
    checks it against the plain path.
    """
    head = _STORED_HEAD.match(line)
    if head is None or not line.endswith("}"):
        return None
    data = line[head.end() : -1]
    if _COMPACT_VALUE.fullmatch(data) is None or not _keys_unique(data):
        return None
    t, event, event_id, retry = head.groups()
    time = float(t) if t is not None else None
    if kind == events.NDJSON:
        return (data + "\n").encode(), time
    fields = "".join(
        f"{name}: {value}\n"
        for name, value in (("event", event), ("id", event_id), ("retry", retry))
        if value is not None
    )
    return f"{fields}data: {data}\n\n".encode(), time


def _keys_unique(data: str) -> bool:
    # Compact JSON ends every key with '":'. Each piece before one ends with the key's text
    # from its last '"' on: equal keys give equal tails. Some '":' inside strings add
    # pieces, which can only make this say no more often.
    pieces = data.split('":')
    return len(pieces) <= 2 or len({piece[piece.rfind('"') :] for piece in pieces}) == len(pieces)
