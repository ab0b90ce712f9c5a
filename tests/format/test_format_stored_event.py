"""``lines.stored_event``: an event read straight from its line gives the plain path's bytes.

The plain path parses the line and renders the record (``bodies.decode_event``). The
shortcut slices the payload out of lines in the writer's layout and returns None for any
other line; where it answers, it must answer exactly what the plain path does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.cassette import bodies, events, lines

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, database=None)

_tricky_text = st.lists(
    st.sampled_from(["a", "é", " ", ":", ",", "{", "]", '"', "\\", "/", "\n", "\r", "\t"])
    | st.sampled_from(["\x00", "\x1f", "\x7f", "\x85", "\u2028", "\u2029", "\ufeff", "\U0001f600"])
    | st.sampled_from(["\ud800", "\udfff", '":', "\\u2028", "[DONE]"]),
    max_size=6,
).map("".join)
_keys = st.sampled_from(["a", "b", "type", "", "é", '"', ":", '":', "a\\"]) | _tricky_text
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([0, -1, 10**30, 1.0, -0.0, 1e5, 1e-7, 0.1, 2.5, 1e300])
    | st.floats(allow_nan=False, allow_infinity=False)
    | _tricky_text
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=10,
)
# Values like most providers stream: integers, strings, distinct keys (they take the shortcut).
_plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "delta", "content", "é", "a b"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)
# Payload texts: compact JSON as most providers send it, JSON spelled otherwise, and text.
_compact = (_values | _plain_values | _plain_values).map(
    lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False)
)
_payloads = (
    _compact
    | _compact
    | _values.map(json.dumps)
    | st.sampled_from(["[DONE]", "1e5", "-0", "1.10", '{"a":1,"a":2}', '{"a":1.0}', "null"])
    | _tricky_text
)
_field_values = st.sampled_from(["message", "message", "é", "", "a b", "x\u2028", '"q"', "a\\b"])
_times = st.none() | st.floats(0, 1000) | st.sampled_from([0.0, 1e-05, 1.5e-07, 123.0, 7])


@st.composite
def sse_events(draw: st.DrawFn) -> str:
    """One SSE event as a server might send it, comments and odd spacing included."""
    out = ""
    if draw(st.integers(0, 9)) == 0:
        out += ": a comment\n"
    for name in ("event", "id", "retry"):
        if draw(st.integers(0, 3)) == 0:
            value = draw(st.from_regex(r"[0-9]{1,4}", fullmatch=True) | _field_values)
            out += f"{name}: {value}\n"
    payload = draw(_payloads)
    if draw(st.integers(0, 9)) > 0:
        out += "".join(f"data: {line}\n" for line in payload.replace("\r", "").split("\n"))
    return out + draw(st.sampled_from(["\n"] * 6 + ["\r\n", ""]))


ndjson_events = _payloads.map(lambda text: text.replace("\n", "") + "\n")


def _plain(kind: str, line: str) -> tuple[bytes, float | None]:
    record = json.loads(line)
    t = record.get("t")
    return bodies.decode_event(kind, record), None if t is None else float(t)


def _writer_lines(kind: str, text: str, t: float | None) -> list[str]:
    compact: list[str | None] = []
    records = events.encode_events(kind, text, compact)
    return [
        lines.event_line(t, fields, data) for fields, data in zip(records, compact, strict=True)
    ]


def _check(kind: str, line: str) -> tuple[bytes, float | None] | None:
    stored = lines.stored_event(kind, line)
    if stored is not None:
        assert stored == _plain(kind, line)
    return stored


@SETTINGS
@given(event=sse_events(), t=_times)
def test_sse_event_lines_read_as_the_plain_path_does(event: str, t: float | None) -> None:
    for line in _writer_lines(events.SSE, event, t):
        _check(events.SSE, line)


@SETTINGS
@given(event=ndjson_events, t=_times)
def test_ndjson_event_lines_read_as_the_plain_path_does(event: str, t: float | None) -> None:
    for line in _writer_lines(events.NDJSON, event, t):
        _check(events.NDJSON, line)


# Edits a person (or another tool) could make to a line, keeping it valid JSON.
_EDITS = [" ", ",", '"a":1,', ',"a":1', '"layout":"spaced",', ".0", "0", "-", "e5", "\\u00e9"]


@SETTINGS
@given(
    kind=st.sampled_from([events.SSE, events.NDJSON]),
    data=st.data(),
    t=_times,
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_EDITS)), max_size=3),
)
def test_edited_lines_read_as_the_plain_path_does(
    kind: str, data: st.DataObject, t: float | None, edits: list[tuple[int, str]]
) -> None:
    event = data.draw(sse_events() if kind == events.SSE else ndjson_events)
    for line in _writer_lines(kind, event, t):
        for position, edit in edits:
            position %= len(line)
            line = line[:position] + edit + line[position:]
        if _loads(kind, line) is not None:
            _check(kind, line)


def _loads(kind: str, line: str) -> dict[str, Any] | None:
    """The record of a line the loader would accept, else None."""
    try:
        record = json.loads(line)
        if not (isinstance(record, dict) and record.get("type") == "event"):
            return None
        events.check_fields(kind, record)
        bodies.decode_event(kind, record)
    except (ValueError, TypeError):
        return None
    t = record.get("t")
    if "t" in record and (isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0):
        return None
    return record


def test_the_benchmark_event_takes_the_shortcut() -> None:
    data = (
        '{"id":"chatcmpl-3f","object":"chat.completion.chunk","created":1764547200,'
        '"choices":[{"index":0,"delta":{"content":"Echo: \\"q\\"\\n"},"finish_reason":null}]}'
    )
    line = lines.event_line(0.0033, events.encode_event(events.SSE, f"data: {data}\n\n"), data)
    assert _check(events.SSE, line) == (f"data: {data}\n\n".encode(), 0.0033)
    named = f'{{"type": "event", "event": "delta", "id": "7", "retry": "10", "data": {data}}}'
    stored = (f"event: delta\nid: 7\nretry: 10\ndata: {data}\n\n".encode(), None)
    assert _check(events.SSE, named) == stored
    assert _check(events.NDJSON, f'{{"type": "event", "data": {data}}}') == (
        f"{data}\n".encode(),
        None,
    )


@pytest.mark.parametrize(
    "line",
    [
        '{"type": "event", "t": 1.0, "data": {"a": 1}}',  # spaces inside the data
        '{"type": "event", "t": 1.0, "data": {"a":1} }',  # a space after it
        '{"type": "event",  "data": {"a":1}}',  # two spaces in the head
        '{"type":"event","data":{"a":1}}',  # a compact head
        '{"t": 1.0, "type": "event", "data": {"a":1}}',  # keys in another order
        '{"type": "event", "data": {"a":1}, "t": 1.0}',
        '{"type": "event", "id": "1", "event": "e", "data": {"a":1}}',
        '{"type": "event", "data": {"a":1},"layout":"spaced"}',  # a field after the data
        '{"type": "event", "data": [1],"data":[2]}',
        '{"type": "event", "data": {"a":1,"a":2}}',  # duplicate keys: parsing keeps one
        '{"type": "event", "data": {"b":{"a":1,"a":2}}}',
        '{"type": "event", "data": {"a":1.10}}',  # numbers Python spells otherwise
        '{"type": "event", "data": {"a":1e5}}',
        '{"type": "event", "data": {"a":-0}}',
        '{"type": "event", "data": {"a":1.0}}',  # a float, spelled as Python does: not read
        '{"type": "event", "data": {"a":"\\u00e9"}}',  # escapes the encoder does not write
        '{"type": "event", "data": {"a":"\\/"}}',
        '{"type": "event", "data": {"a":"\\u000a"}}',
        '{"type": "event", "data": {"a":"\\u001F"}}',
        '{"type": "event", "data": {"a":"\\u2028"}}',  # written escaped, streamed raw
        '{"type": "event", "data": {"a":"\\ud800"}}',  # a lone surrogate
        '{"type": "event", "event": "a\\u2028", "data": {"a":1}}',
        '{"type": "event", "retry": "\\u0031", "data": {"a":1}}',
        '{"type": "event", "t": 1E2, "data": {"a":1}}',
        '{"type": "event", "t": 1.0, "text": "[DONE]"}',
        '{"type": "event", "raw": "data: x\\n\\n"}',
    ],
)
def test_lines_in_another_layout_take_the_plain_path(line: str) -> None:
    json.loads(line)  # valid JSON: the loader would read it
    for kind in (events.SSE, events.NDJSON):
        assert lines.stored_event(kind, line) is None


def test_nested_duplicate_keys_in_different_objects_are_refused_too() -> None:
    # Only a key repeated within one object would change, but the check is global: a key
    # repeated anywhere sends the line down the plain path, which is still right.
    line = '{"type": "event", "data": {"type":"a","delta":{"type":"b"}}}'
    assert lines.stored_event(events.SSE, line) is None
    assert _plain(events.SSE, line)[0] == b'data: {"type":"a","delta":{"type":"b"}}\n\n'
