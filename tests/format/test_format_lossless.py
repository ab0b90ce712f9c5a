"""Writing a cassette and reading it back gives the exact bytes, whatever the body looks like.

Also checks the readability promise: ordinary JSON bodies and ordinary OpenAI / Anthropic
style streams are stored structured (JSON as JSON, no ``raw`` event text).
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
from typing import Any

import pytest
import vcr.serialize
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from vcr.request import Request

from llmcassette._vcr import serializer
from llmcassette.cassette import events
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.events import event_name
from llmcassette.cassette.jsonl import Cassette, Interaction

OLD_TIME = "2020-01-01T00:00:00Z"
SETTINGS = settings(max_examples=200, derandomize=True, deadline=None, database=None)
# Whole cassettes are costly to generate: fewer examples, each covering several body shapes.
WHOLE = settings(SETTINGS, max_examples=80)

# ------------------------------------------------------------------ strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
json_containers = st.lists(json_values, max_size=3) | st.dictionaries(
    st.text(max_size=5), json_values, max_size=3
)
# JSON strings that hold the characters that trip JSON-in-JSONL up.
tricky_strings = st.lists(
    st.sampled_from(["a", "é", "\u2028", "\u2029", "\x85", "\x00", "\x1f", "\ud800", "\udfff"])
    | st.sampled_from(["\U0001f600", "\\", '"', "/", "\n", "\r", "\t", "\ufeff", "\x7f"]),
    max_size=8,
).map("".join)


def _render_json(value: Any, style: str) -> str:
    """JSON text the way some server might have written it."""
    if style == "compact":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if style == "compact-ascii":
        return json.dumps(value, separators=(",", ":"))
    if style == "default":
        return json.dumps(value)
    if style == "default-utf8":
        return json.dumps(value, ensure_ascii=False)
    if style == "indent2":
        return json.dumps(value, indent=2)
    if style == "indent2-utf8-nl":
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    if style == "compact-nl":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"
    if style == "indent4":
        return json.dumps(value, indent=4)
    if style == "sorted-tabs":
        return json.dumps(value, indent="\t", sort_keys=True)
    if style == "padded":
        return "  " + json.dumps(value, separators=(" , ", " : ")) + " \r\n"
    raise AssertionError(style)


JSON_STYLES = [
    "compact",
    "compact-ascii",
    "default",
    "default-utf8",
    "indent2",
    "indent2-utf8-nl",
    "compact-nl",
    "indent4",
    "sorted-tabs",
    "padded",
]
STRUCTURED_STYLES = JSON_STYLES[:8]

# Texts that parse as JSON but that no layout rebuilds: they must be kept as text.
ODD_JSON = [
    '{"a":1.0e5}',
    '{"n": 1E+2, "m": -0.0e0}',
    '{"a":1,"a":2}',
    '{ "a" : [ 1 , 2 ] }',
    '{"a":"\\u0041\\/"}',
    "[1,\n2]",
    "\n\n[]\n\n",
    '{"a":"\\ud800"}',
    '{"big": 123456789012345678901234567890.5}',
    '{"x": 1e400}',
]


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(ODD_JSON))
    value = draw(json_containers | st.dictionaries(st.text(max_size=3), tricky_strings, max_size=3))
    return _render_json(value, draw(st.sampled_from(JSON_STYLES)))


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _encodable(text: str) -> bytes:
    # A lone surrogate written without escaping cannot be UTF-8: send the bytes as Python would.
    return text.encode("utf-8", "surrogatepass")


LINE_ENDS = ["\n", "\r\n", "\r"]
line_value = st.text(
    st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12
) | st.sampled_from(["", " ", "x", "\u2028", "é", "[DONE]", "  two spaces", "a: b"])


@st.composite
def sse_event_lines(draw: st.DrawFn) -> list[str]:
    """The lines (without line ends) of one SSE event."""
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(
            st.sampled_from(
                [
                    *("data", "data-json", "data-nospace", "data-empty", "comment", "event"),
                    *("id", "retry", "retry-bad", "unknown", "bare", "data-multi"),
                ]
            )
        )
        if kind == "data":
            lines.append("data: " + draw(line_value))
        elif kind == "data-json":
            value = draw(json_containers | st.dictionaries(st.text(max_size=3), tricky_strings))
            style = draw(st.sampled_from(["compact", "compact-ascii", "default", "default-utf8"]))
            lines.append("data: " + _render_json(value, style))
        elif kind == "data-multi":
            value = draw(json_containers)
            lines.extend("data: " + part for part in json.dumps(value, indent=2).split("\n"))
        elif kind == "data-nospace":
            lines.append("data:" + draw(line_value))
        elif kind == "data-empty":
            lines.append(draw(st.sampled_from(["data:", "data: "])))
        elif kind == "comment":
            lines.append(draw(st.sampled_from([": ping", ":", ": " + draw(line_value)])))
        elif kind in ("event", "id"):
            lines.append(f"{kind}: {draw(line_value)}")
        elif kind == "retry":
            lines.append(f"retry: {draw(st.integers(0, 10**6))}")
        elif kind == "retry-bad":
            lines.append("retry: " + draw(line_value))
        elif kind == "unknown":
            lines.append("foo: bar")
        else:
            lines.append(draw(st.sampled_from(["data", "event", "x"])))
    return lines


@st.composite
def sse_streams(draw: st.DrawFn) -> str:
    mixed = draw(st.booleans())
    stream_eol = draw(st.sampled_from(LINE_ENDS))
    out: list[str] = []
    count = draw(st.integers(0, 5))
    for _ in range(count):
        eol = draw(st.sampled_from(LINE_ENDS)) if mixed else stream_eol
        lines = draw(sse_event_lines())
        out.append("".join(line + eol for line in lines) + eol)
    text = "".join(out)
    ending = draw(st.sampled_from(["complete", "no-blank", "no-eol"]))
    if ending != "complete" and text:
        # the final event lacks its blank line, or even its last line end
        text = text[: -len(stream_eol)] if text.endswith(stream_eol) and not mixed else text
        if ending == "no-eol":
            text = text.rstrip("\r\n")
    return text


@st.composite
def ndjson_streams(draw: st.DrawFn) -> str:
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    records: list[str] = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.integers(0, 5)) == 0:
            records.append("")  # a blank line
        else:
            value = draw(json_containers)
            style = draw(st.sampled_from(["compact", "compact-ascii", "default", "default-utf8"]))
            records.append(_render_json(value, style))
    text = eol.join(records)
    if records and draw(st.booleans()):
        text += eol
    return text


CONTENT_TYPES = [
    None,
    "application/json",
    "application/json; charset=utf-8",
    "application/vnd.api+json",
    "text/plain",
    "text/html; charset=utf-8",
    "application/octet-stream",
    "text/event-stream",
    "application/x-ndjson",
    "application/jsonl",
]


@st.composite
def bodies_with_type(draw: st.DrawFn) -> tuple[bytes, str | None]:
    shape = draw(st.sampled_from(["bytes", "text", "json", "sse", "ndjson"]))
    if shape == "bytes":
        return draw(st.binary(max_size=64)), draw(st.sampled_from(CONTENT_TYPES))
    if shape == "text":
        return draw(st.text(max_size=64)).encode(), draw(st.sampled_from(CONTENT_TYPES))
    if shape == "json":
        content_type = draw(st.sampled_from(["application/json", "application/problem+json", None]))
        return _encodable(draw(json_texts())), content_type
    if shape == "sse":
        return _encodable(draw(sse_streams())), "text/event-stream"
    return _encodable(draw(ndjson_streams())), draw(
        st.sampled_from(["application/x-ndjson", "application/jsonl; charset=utf-8"])
    )


header_names = st.sampled_from(
    ["x-request-id", "X-Trace", "set-cookie", "Set-Cookie", "date", "openai-model", "Via", "a"]
) | st.text(st.sampled_from("abcXYZ-_.!#0"), min_size=1, max_size=6)
header_values = st.lists(st.text(max_size=8), min_size=0, max_size=3)


@st.composite
def headers_for(draw: st.DrawFn, content_type: str | None) -> dict[str, list[str]]:
    headers = draw(st.dictionaries(header_names, header_values, max_size=3))
    if content_type is not None:
        headers[draw(st.sampled_from(["content-type", "Content-Type"]))] = [content_type]
    return headers


@st.composite
def interactions(draw: st.DrawFn) -> Interaction:
    request_body, request_type = draw(bodies_with_type())
    response_body, response_type = draw(bodies_with_type())
    return Interaction(
        method=draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"])),
        uri=draw(
            st.sampled_from(["http://127.0.0.1:8000/v1/chat", "https://api.example.com/x?a=1&b=é"])
        ),
        request_headers=draw(headers_for(request_type)),
        request_body=draw(st.sampled_from([None, request_body])),
        status=draw(st.integers(100, 599)),
        reason=draw(st.text(max_size=12)),
        response_headers=draw(headers_for(response_type)),
        response_body=response_body,
    )


# ------------------------------------------------------------------ helpers


def _wire(item: Interaction) -> tuple[Any, ...]:
    return (
        item.method,
        item.uri,
        item.request_headers,
        item.request_body,
        item.status,
        item.reason,
        item.response_headers,
        item.response_body,
    )


def _round_trip(items: list[Interaction]) -> tuple[str, Cassette]:
    text = cassette_file.write(Cassette(cassette_file.new_header("tests"), items))
    return text, cassette_file.read(text.encode("utf-8"), "prop.jsonl")


def _check_lines(text: str) -> list[dict[str, Any]]:
    assert text.endswith("\n")
    lines = text.split("\n")[:-1]
    # one record per line for any reader, including str.splitlines() (U+2028, U+0085...)
    assert text.splitlines() == lines
    records = []
    for line in lines:
        assert line, "no blank lines are written"
        record = json.loads(line)
        assert isinstance(record, dict)
        records.append(record)
    # the file is valid UTF-8 and each line is one JSON object
    text.encode("utf-8")
    return records


# ------------------------------------------------------------------ properties


@WHOLE
@given(items=st.lists(interactions(), max_size=3))
def test_write_then_read_is_lossless(items: list[Interaction]) -> None:
    text, cassette = _round_trip(items)
    _check_lines(text)
    assert [_wire(item) for item in cassette.interactions] == [_wire(item) for item in items]


@WHOLE
@given(items=st.lists(interactions(), max_size=3))
def test_writing_is_deterministic_and_stable(items: list[Interaction]) -> None:
    header = cassette_file.new_header("tests", "2024-01-01T00:00:00Z")
    text = cassette_file.write(Cassette(header, items))
    assert cassette_file.write(Cassette(header, items)) == text
    # Reading and writing again changes nothing.
    again = cassette_file.read(text.encode(), "x.jsonl")
    assert cassette_file.write(again) == text
    assert cassette_file.write(again, previous=again) == text


@SETTINGS
@given(body=st.binary(max_size=200), content_type=st.sampled_from(CONTENT_TYPES))
def test_arbitrary_bytes_any_type(body: bytes, content_type: str | None) -> None:
    headers = {"content-type": [content_type]} if content_type else {}
    item = Interaction("POST", "http://h/", headers, body, 200, "OK", headers, body)
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    assert _wire(cassette.interactions[0]) == _wire(item)
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        assert records[1]["body"] == {"base64": base64.b64encode(body).decode()}
        assert records[2]["body"] == {"base64": base64.b64encode(body).decode()}


@SETTINGS
@given(text=st.text(max_size=200), content_type=st.sampled_from(CONTENT_TYPES))
def test_arbitrary_text_any_type(text: str, content_type: str | None) -> None:
    body = text.encode()
    headers = {"Content-Type": [content_type]} if content_type else {}
    item = Interaction("POST", "http://h/", headers, body, 201, "Created", headers, body)
    _, cassette = _round_trip([item])
    assert _wire(cassette.interactions[0]) == _wire(item)


@SETTINGS
@given(body=st.one_of(sse_streams(), st.text(max_size=100)))
def test_sse_streams(body: str) -> None:
    raw = _encodable(body)
    headers = {"content-type": ["text/event-stream; charset=utf-8"]}
    item = Interaction("POST", "http://h/", {}, b"{}", 200, "OK", headers, raw)
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    assert cassette.interactions[0].response_body == raw
    if _is_utf8(raw):
        assert cassette.interactions[0].stream == "sse"
        assert records[2]["body"] == {"stream": "sse"}
        assert records[-1] == {"type": "end", "events": len(records) - 4}
    else:  # not text, so not split into events
        assert cassette.interactions[0].stream is None
        assert records[2]["body"] == {"base64": base64.b64encode(raw).decode()}


@SETTINGS
@given(body=st.one_of(sse_streams(), st.text(max_size=100)))
def test_sse_streams_without_a_content_type(body: str) -> None:
    # A suite's before_record_response may drop every header: a body of whole SSE events
    # is still stored event by event, anything else as it was, and both replay unchanged.
    raw = _encodable(body)
    item = Interaction("POST", "http://h/", {}, b"{}", 200, "OK", {}, raw)
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    assert cassette.interactions[0].response_body == raw
    if events.stream_kind(None, "http://h/", raw) == events.SSE:
        assert records[2]["body"] == {"stream": "sse"}
        assert cassette.interactions[0].stream == "sse"
    else:
        assert "stream" not in records[2]["body"]


@SETTINGS
@given(body=st.one_of(ndjson_streams(), st.text(max_size=100)))
def test_ndjson_streams(body: str) -> None:
    raw = _encodable(body)
    headers = {"content-type": ["application/x-ndjson"]}
    item = Interaction("POST", "http://h/", {}, None, 200, "OK", headers, raw)
    _, cassette = _round_trip([item])
    assert cassette.interactions[0].response_body == raw


@SETTINGS
@given(text=json_texts(), content_type=st.sampled_from(["application/json", "text/x-json+json"]))
def test_json_bodies(text: str, content_type: str) -> None:
    raw = _encodable(text)
    headers = {"content-type": [content_type]}
    item = Interaction("POST", "http://h/", headers, raw, 200, "OK", headers, raw)
    _, cassette = _round_trip([item])
    assert _wire(cassette.interactions[0]) == _wire(item)


@SETTINGS
@given(
    value=json_containers | st.dictionaries(st.text(max_size=3), tricky_strings, max_size=3),
    style=st.sampled_from(STRUCTURED_STYLES),
)
def test_common_json_layouts_are_stored_as_json(value: Any, style: str) -> None:
    text = _render_json(value, style)
    raw = _encodable(text)
    assume(_is_utf8(raw))  # an unescaped lone surrogate is not UTF-8: stored as base64
    headers = {"content-type": ["application/json"]}
    item = Interaction("POST", "http://h/", headers, raw, 200, "OK", headers, raw)
    written, cassette = _round_trip([item])
    records = _check_lines(written)
    for record in records[1:3]:
        # json.loads, not value: an escaped surrogate pair reads back as one character
        assert record["body"]["json"] == json.loads(text)
        assert "text" not in record["body"]
    assert cassette.interactions[0].response_body == raw


# ------------------------------------------------------------------ readability


def _openai_stream(chunks: list[str]) -> bytes:
    events = []
    for index, chunk in enumerate(chunks):
        payload = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": chunk}, "finish_reason": None}],
            "n": index,
        }
        events.append("data: " + json.dumps(payload, separators=(",", ":"), ensure_ascii=False))
    events.append("data: [DONE]")
    return "".join(event + "\n\n" for event in events).encode()


def _anthropic_stream(chunks: list[str]) -> bytes:
    parts = [("message_start", {"type": "message_start", "message": {"id": "msg_1"}})]
    parts += [
        ("content_block_delta", {"type": "content_block_delta", "delta": {"text": chunk}})
        for chunk in chunks
    ]
    parts.append(("message_stop", {"type": "message_stop"}))
    return "".join(
        f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
        for name, data in parts
    ).encode()


@SETTINGS
@given(
    chunks=st.lists(
        st.text(max_size=10)
        | tricky_strings.filter(lambda s: "\ud800" not in s and "\udfff" not in s),
        min_size=1,
        max_size=5,
    )
)
def test_openai_stream_is_structured(chunks: list[str]) -> None:
    raw = _openai_stream(chunks)
    headers = {"content-type": ["text/event-stream; charset=utf-8"]}
    item = Interaction("POST", "http://h/", {}, b"{}", 200, "OK", headers, raw)
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    events = records[3:-1]
    assert len(events) == len(chunks) + 1
    for chunk, event in zip(chunks, events[:-1], strict=True):
        assert "raw" not in event
        assert "layout" not in event
        assert event["data"]["choices"][0]["delta"]["content"] == chunk
    assert events[-1] == {"type": "event", "text": "[DONE]"}
    assert cassette.interactions[0].response_body == raw


@SETTINGS
@given(chunks=st.lists(st.text(max_size=10) | tricky_strings, min_size=0, max_size=5))
def test_anthropic_stream_is_structured(chunks: list[str]) -> None:
    raw = _anthropic_stream(chunks)
    headers = {"content-type": ["text/event-stream"]}
    item = Interaction("POST", "http://h/", {}, b"{}", 200, "OK", headers, raw)
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    events = records[3:-1]
    assert [event_name(event) for event in events] == (
        ["message_start"] + ["content_block_delta"] * len(chunks) + ["message_stop"]
    )
    for event in events:
        assert "raw" not in event
        assert isinstance(event["data"], dict)
        assert "event" not in event  # named by the type of its data
    assert cassette.interactions[0].response_body == raw


@SETTINGS
@given(
    payloads=st.lists(
        json_containers | st.dictionaries(st.just("s"), tricky_strings, min_size=1),
        min_size=1,
        max_size=3,
    ),
    name=st.none() | st.sampled_from(["delta", "é"]),
    t=st.none() | st.floats(0, 100) | st.integers(0, 10),
)
def test_compact_event_data_is_written_as_streamed(
    payloads: list[Any], name: str | None, t: float | None
) -> None:
    # Compact data is copied into the line as it came, not encoded again: the line must
    # still be one JSON object per line (U+2028 escaped...) and replay the same bytes.
    texts = [_render_json(payload, "compact") for payload in payloads]
    assume(all("\ud800" not in text and "\udfff" not in text for text in texts))
    prefix = f"event: {name}\n" if name else ""
    raw = "".join(f"{prefix}data: {text}\n\n" for text in texts).encode()
    headers = {"content-type": ["text/event-stream"]}
    times = None if t is None else [t] * len(texts)
    item = Interaction("GET", "http://h/", {}, None, 200, "OK", headers, raw, event_times=times)
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    event_lines = text.split("\n")[3 : 3 + len(texts)]
    for line, record, payload, compact in zip(
        event_lines, records[3:-1], payloads, texts, strict=True
    ):
        assert record["data"] == payload
        assert "layout" not in record
        if not any(separator in compact for separator in ("\x85", "\u2028", "\u2029")):
            assert line.endswith(f',"data":{compact}}}')
        if t is not None:
            assert record["t"] == t
    assert cassette.interactions[0].response_body == raw


def test_ndjson_ollama_style_is_structured() -> None:
    lines = [{"model": "llama", "response": word, "done": False} for word in ("Hi", " there")]
    lines.append({"model": "llama", "response": "", "done": True})
    raw = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
    headers = {"content-type": ["application/x-ndjson"]}
    item = Interaction("POST", "http://h/api/generate", {}, b"{}", 200, "OK", headers, raw)
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    assert records[3:-1] == [{"type": "event", "data": line} for line in lines]
    assert cassette.interactions[0].response_body == raw


def test_readable_layout_of_a_json_exchange() -> None:
    request = b'{"model":"gpt","messages":[{"role":"user","content":"hi"}]}'
    response = b'{\n  "id": "x",\n  "choices": []\n}\n'
    item = Interaction(
        "POST",
        "https://api.example.com/v1/chat",
        {"Content-Type": ["application/json"], "X-Multi": ["a", "b"]},
        request,
        200,
        "OK",
        {"content-type": ["application/json"]},
        response,
    )
    text = cassette_file.write(
        Cassette(cassette_file.new_header("t", "2024-01-01T00:00:00Z"), [item])
    )
    assert text.splitlines() == [
        '{"format":"llmcassette","format_version":2,"recorded_by":"t",'
        '"created_at":"2024-01-01T00:00:00Z"}',
        '{"type":"request","method":"POST","uri":"https://api.example.com/v1/chat",'
        '"headers":{"Content-Type":"application/json","X-Multi":["a","b"]},'
        '"body":{"json":{"model":"gpt","messages":[{"role":"user","content":"hi"}]}}}',
        '{"type":"response","status":200,"reason":"OK","headers":{"content-type":'
        '"application/json"},"body":{"json":{"id":"x","choices":[]},"layout":"indent2+nl"}}',
        '{"type":"end","events":0}',
    ]


def test_event_timing_round_trips() -> None:
    raw = b"data: 1\n\ndata: 2\n\n"
    item = Interaction(
        "GET",
        "http://h/",
        {},
        None,
        200,
        "OK",
        {"content-type": ["text/event-stream"]},
        raw,
        event_times=[0.25, 1.5],
        response_extra={"t_headers": 0.1},
        end_extra={"recorded_at": "2024-01-01T00:00:00Z"},
    )
    text, cassette = _round_trip([item])
    records = _check_lines(text)
    assert records[2]["t_headers"] == 0.1
    assert [r["t"] for r in records[3:5]] == [0.25, 1.5]
    got = cassette.interactions[0]
    assert got.event_times == [0.25, 1.5]
    assert got.response_extra == {"t_headers": 0.1}
    assert got.end_extra == {"recorded_at": "2024-01-01T00:00:00Z"}


def test_lone_surrogate_escapes_stay_escaped_in_the_file() -> None:
    raw = b'{"a":"\\ud800","b":"\xc3\xa9"}'
    headers = {"content-type": ["application/json"]}
    item = Interaction("POST", "http://h/", headers, raw, 200, "OK", headers, raw)
    text, cassette = _round_trip([item])
    text.encode("utf-8")  # a raw lone surrogate would make this fail
    assert "\\ud800" in text
    assert _wire(cassette.interactions[0]) == _wire(item)


# ------------------------------------------------------------------ through vcrpy's serializer


def _vcr_pair(item: Interaction) -> tuple[Request, dict[str, Any]]:
    request = Request(
        item.method,
        item.uri,
        item.request_body,
        {name: values[0] for name, values in item.request_headers.items() if values},
    )
    response = {
        "status": {"code": item.status, "message": item.reason},
        "headers": item.response_headers,
        "body": {"string": item.response_body},
    }
    return request, response


@WHOLE
@given(items=st.lists(interactions(), max_size=3))
def test_through_vcrpy_serializer(items: list[Interaction]) -> None:
    pairs = [_vcr_pair(item) for item in items]
    cassette_dict = {"requests": [p[0] for p in pairs], "responses": [p[1] for p in pairs]}
    saved, serializer.REDACTION = serializer.REDACTION, False  # losslessness, not redaction
    try:
        text = vcr.serialize.serialize(cassette_dict, serializer)
    finally:
        serializer.REDACTION = saved
    requests, responses, *_ = vcr.serialize.deserialize(text, serializer)
    assert len(requests) == len(items)
    for item, (want, _), request, response in zip(items, pairs, requests, responses, strict=True):
        assert request.method == item.method
        assert request.uri == item.uri
        assert request.body == item.request_body
        assert dict(request.headers) == dict(want.headers)
        assert response["status"] == {"code": item.status, "message": item.reason}
        assert response["headers"] == item.response_headers
        assert response["body"]["string"] == item.response_body


def test_serializer_direct_round_trip() -> None:
    raw = b'data: {"a":1}\n\ndata: [DONE]\n\n'
    cassette_dict = {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "http://h/",
                    "body": "{}",
                    "headers": {"a": ["1"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["text/event-stream"]},
                    "body": {"string": raw},
                },
            }
        ]
    }
    text = serializer.serialize(cassette_dict)
    back = serializer.deserialize(text)
    [interaction] = back["interactions"]
    assert interaction["request"]["body"] == b"{}"
    assert interaction["request"]["headers"] == {"a": ["1"]}
    assert interaction["response"]["body"]["string"] == raw
    assert interaction["response"]["headers"] == {"content-type": ["text/event-stream"]}
    assert interaction["response"]["llmcassette"]["stream"] == "sse"
    assert '"data":{"a":1}' in text  # as streamed


@pytest.mark.parametrize(
    "bad", ["", "not json\n", '{"format": "llmcassette", "format_version": 99}\n']
)
def test_serializer_deserialize_reports_bad_text(bad: str) -> None:
    from llmcassette import CassetteFormatError

    with pytest.raises(CassetteFormatError, match="<cassette>"):
        serializer.deserialize(bad)


def test_lone_surrogates_in_strings_vcrpy_may_hold() -> None:
    # e.g. header bytes a client decoded with surrogateescape
    item = Interaction(
        "GET",
        "http://h/\udcff",
        {"x": ["\udcff"]},
        None,
        200,
        "O\ud800K",
        {"y": ["é\udcff"]},
        b"ok",
    )
    text, cassette = _round_trip([item])
    text.encode("utf-8")
    assert _wire(cassette.interactions[0]) == _wire(item)


@WHOLE
@given(
    old=st.lists(interactions(), max_size=3),
    new=st.lists(interactions(), max_size=2),
    reverse=st.booleans(),
)
def test_write_with_previous_reuses_old_lines_and_stays_lossless(
    old: list[Interaction], new: list[Interaction], reverse: bool
) -> None:
    for index, item in enumerate(old):
        item.end_extra = {"recorded_at": OLD_TIME, "n": index}
        item.response_extra = {"t_headers": 0.5}
    header = cassette_file.new_header("t", OLD_TIME)
    old_text = cassette_file.write(Cassette(header, old))
    previous = cassette_file.read(old_text.encode(), "p.jsonl")
    # the same traffic recorded again (fresh timing and stamps), plus some new interactions
    again = [
        dataclasses.replace(
            item, event_times=None, response_extra={}, end_extra={"recorded_at": "new"}
        )
        for item in previous.interactions
    ]
    if reverse:
        again.reverse()
    mixed = again + new
    text = cassette_file.write(Cassette(header, mixed), previous)
    back = cassette_file.read(text.encode(), "p.jsonl")
    # nothing lost or changed; the re-recorded ones are written where they were before
    left = [_wire(item) for item in back.interactions]
    for item in mixed:
        left.remove(_wire(item))
    assert not left
    assert text.splitlines()[: len(old_text.splitlines())] == old_text.splitlines() or any(
        _same_request(a, b) for a, b in itertools.combinations(mixed, 2)
    )
    assert set(old_text.splitlines()) <= set(text.splitlines())

    # requests that answer each other at replay keep the order they were made in now
    def answers(items: list[Interaction], like: Interaction) -> list[Any]:
        return [_wire(item) for item in items if _same_request(item, like)]

    for item in mixed:
        assert answers(back.interactions, item) == answers(mixed, item)

    # every re-recorded old interaction kept its original stamps (identical twins may swap)
    def stamps(items: list[Interaction]) -> list[str]:
        return sorted(json.dumps(item.end_extra, sort_keys=True) for item in items)

    assert stamps(back.interactions[: len(again)]) == stamps(previous.interactions)


def _same_request(a: Interaction, b: Interaction) -> bool:
    return (a.method, a.uri, a.request_body, a.session) == (
        b.method,
        b.uri,
        b.request_body,
        b.session,
    )


def test_unicode_line_separators_are_escaped_in_the_file() -> None:
    body = '{"a":"x\u2028y\u2029z\x85"}'.encode()
    headers = {"content-type": ["application/json"]}
    sse = 'data: {"t":"\u2028"}\n\ndata: \u2029\n\n'.encode()
    items = [
        Interaction("POST", "http://h/\u2028", headers, body, 200, "O\x85K", headers, body),
        Interaction(
            "GET", "http://h/", {}, None, 200, "OK", {"content-type": ["text/event-stream"]}, sse
        ),
    ]
    text, cassette = _round_trip(items)
    records = _check_lines(text)
    assert not any(ch in text for ch in "\u2028\u2029\x85")
    assert records[2]["body"] == {"json": {"a": "x\u2028y\u2029z\x85"}}  # still stored as JSON
    assert [_wire(item) for item in cassette.interactions] == [_wire(item) for item in items]
