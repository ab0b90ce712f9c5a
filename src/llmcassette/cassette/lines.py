"""How a cassette record becomes one line of text.

Every line is its record as compact JSON (no space after ``,`` and ``:``, as most JSONL
is written), non-ASCII characters as UTF-8. An event's ``data`` in the compact layout is
then the payload exactly as the stream sent it. ``docs/format.md`` explains why
(determinism rules).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from llmcassette.cassette import jsontext

# One encoder for every line: json.dumps with options builds a new encoder on each call.
_encode_line = jsontext.encoder(",", ":", ensure_ascii=False, allow_nan=False)

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
        line = json.dumps(record, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
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
    if "data" not in fields:
        return dump(_event_record(t, fields))
    # Any layout's value is written compact: the ``layout`` and ``pad`` fields say how to
    # rebuild the stream's text, and the line stays no larger than that text.
    if compact_data is None:
        compact_data = _encode_line(fields["data"])
    if len(fields) > 1 or (t is not None and (type(t) is not float or not math.isfinite(t))):
        others = {name: value for name, value in fields.items() if name != "data"}
        head = _encode_line(_event_record(t, others))[:-1] + ',"data":'
    elif t is None:
        head = '{"type":"event","data":'
    else:  # "t" and "data" only: the head written directly
        head = '{"type":"event","t":' + float.__repr__(t) + ',"data":'
    line = head + compact_data + "}"
    return line if line.isascii() else one_line(line, _event_record(t, fields))


def _event_record(t: Any, fields: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "event"}
    if t is not None:
        record["t"] = t
    record.update(fields)
    return record
