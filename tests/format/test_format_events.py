"""``events``: splitting streams into events and storing each event losslessly."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.cassette import events

SETTINGS = settings(max_examples=200, derandomize=True, deadline=None, database=None)

# Text heavy in the characters that matter to the splitters.
TOKENS = ["\n", "\r", "\r\n", ":", " ", "data", "event", "id", "retry", "{", "}", '"', "a", "é"]
TOKENS += ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "1", "[DONE]", ": ", "data: "]
stream_text = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join) | st.text(max_size=60)


@SETTINGS
@given(kind=st.sampled_from([events.SSE, events.NDJSON]), text=stream_text)
def test_split_concatenates_to_input(kind: str, text: str) -> None:
    parts = events.split_events(kind, text)
    assert "".join(parts) == text
    assert all(parts), "no empty event"


@SETTINGS
@given(kind=st.sampled_from([events.SSE, events.NDJSON]), text=stream_text)
def test_every_event_renders_back_exactly(kind: str, text: str) -> None:
    for part in events.split_events(kind, text):
        fields = events.encode_event(kind, part)
        assert events.render_event(kind, fields) == part


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _sse_lines(part: str) -> list[str]:
    return _LINE.findall(part)


@SETTINGS
@given(text=stream_text)
def test_sse_events_end_at_blank_lines_only(text: str) -> None:
    parts = events.split_events(events.SSE, text)
    for index, part in enumerate(parts):
        lines = _sse_lines(part)
        assert "".join(lines) == part
        is_last = index == len(parts) - 1
        # Only the event's last line may be blank, and every event but the last ends with one.
        blank = [line.rstrip("\r\n") == "" and line != "" for line in lines]
        assert not any(blank[:-1]), part
        if not is_last:
            assert blank[-1], part
            # a CRLF pair is never cut in two
            assert not (part.endswith("\r") and parts[index + 1].startswith("\n"))


@SETTINGS
@given(text=stream_text)
def test_ndjson_events_are_lines(text: str) -> None:
    parts = events.split_events(events.NDJSON, text)
    for part in parts[:-1]:
        assert part.endswith("\n")
        assert part.count("\n") == 1
    if parts:
        assert parts[-1].count("\n") <= 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("data: 1\n\n", ["data: 1\n\n"]),
        ("data: 1\n\ndata: 2\n\n", ["data: 1\n\n", "data: 2\n\n"]),
        ("data: 1\r\n\r\ndata: 2\r\n\r\n", ["data: 1\r\n\r\n", "data: 2\r\n\r\n"]),
        ("data: 1\r\rdata: 2\r\r", ["data: 1\r\r", "data: 2\r\r"]),
        ("data: 1\n\ndata: 2", ["data: 1\n\n", "data: 2"]),  # last event without blank line
        ("data: 1\ndata: 2\n\n", ["data: 1\ndata: 2\n\n"]),  # multi-line data
        ("\n\ndata: 1\n\n", ["\n", "\n", "data: 1\n\n"]),  # stray blank lines
        (": ping\n\n", [": ping\n\n"]),
        # U+2028 and friends are not SSE line ends
        ("data: a\u2028b\n\n", ["data: a\u2028b\n\n"]),
    ],
)
def test_split_sse_examples(text: str, expected: list[str]) -> None:
    assert events.split_events(events.SSE, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("{}\n", ["{}\n"]),
        ("{}\n[]\n", ["{}\n", "[]\n"]),
        ("{}\n[]", ["{}\n", "[]"]),  # no final newline
        ("{}\r\n[]\r\n", ["{}\r\n", "[]\r\n"]),
        ("{}\n\n[]\n", ["{}\n", "\n", "[]\n"]),  # blank line
        ('{"a":"\u2028"}\n', ['{"a":"\u2028"}\n']),  # only \n ends a record
        ("\n", ["\n"]),
    ],
)
def test_split_ndjson_examples(text: str, expected: list[str]) -> None:
    assert events.split_events(events.NDJSON, text) == expected


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ('data: {"a":1}\n\n', {"data": {"a": 1}}),
        ("data: [DONE]\n\n", {"text": "[DONE]"}),
        # An event named by its data's type leaves the name out; one without an event
        # line but with a typed data says so; another name is kept.
        (
            'event: message_start\ndata: {"type":"message_start"}\n\n',
            {"data": {"type": "message_start"}},
        ),
        ('data: {"type":"message_start"}\n\n', {"event": None, "data": {"type": "message_start"}}),
        ('event: x\ndata: {"type":"y"}\n\n', {"event": "x", "data": {"type": "y"}}),
        ("id: 7\nevent: x\nretry: 100\n\n", None),  # order differs from render order: raw
        ("event: x\nid: 7\nretry: 100\n\n", {"event": "x", "id": "7", "retry": "100"}),
        ('data: {"a": 1}\n\n', {"data": {"a": 1}, "layout": "spaced"}),
        ('data: {\ndata:   "a": 1\ndata: }\n\n', {"data": {"a": 1}, "layout": "indent2"}),
        ("data: line1\ndata: line2\n\n", {"text": "line1\nline2"}),
        ("data: \n\n", {"text": ""}),
        ('data: "hi"\n\n', {"data": "hi"}),  # a JSON string is stored as JSON
        ("data:  {}\n\n", {"text": " {}"}),  # the second space belongs to the value
    ],
)
def test_encode_sse_event(text: str, fields: dict[str, object] | None) -> None:
    encoded = events.encode_event(events.SSE, text)
    assert encoded == (fields if fields is not None else {"raw": text})
    assert events.render_event(events.SSE, encoded) == text


@pytest.mark.parametrize(
    "text",
    [
        "data:{}\n\n",  # no space after the colon
        "data:\n\n",  # empty data without a space
        ": ping\n\n",  # comment
        'data: {"a":1}\r\n\n',  # mixed line ends
        'data: {"a":1}\r\n\r\r\n',  # a lone CR before the CRLF
        'data: {"a":1}\r\r',  # CR
        'data: {"a":1}\n',  # last event without its blank line
        'data: {"a":1}',
        "retry: soon\n\n",  # retry must be digits to be structured
        "event: a\nevent: b\n\n",  # repeated field
        "data: 1\nevent: a\n\n",  # field after data
        "foo: bar\n\n",  # unknown field
        "\n",  # a lone blank line
        "event\n\n",  # field without a colon
    ],
)
def test_unusual_sse_events_are_raw(text: str) -> None:
    encoded = events.encode_event(events.SSE, text)
    assert encoded == {"raw": text}
    assert events.render_event(events.SSE, encoded) == text


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ('{"a":1}\n', {"data": {"a": 1}}),
        ('{"a": 1}\n', {"data": {"a": 1}, "layout": "spaced"}),
        ("hello\n", {"text": "hello"}),
        ("\n", {"text": ""}),
        ('{"a":1}', {"raw": '{"a":1}'}),  # no final newline
        ('{"a":1}\r\n', {"raw": '{"a":1}\r\n'}),
    ],
)
def test_encode_ndjson_event(text: str, fields: dict[str, object]) -> None:
    encoded = events.encode_event(events.NDJSON, text)
    assert encoded == fields
    assert events.render_event(events.NDJSON, encoded) == text


@pytest.mark.parametrize(
    ("content_type", "kind"),
    [
        ("text/event-stream", events.SSE),
        ("text/event-stream; charset=utf-8", events.SSE),
        ("Text/Event-Stream", events.SSE),
        ("application/x-ndjson", events.NDJSON),
        ("application/jsonl; charset=utf-8", events.NDJSON),
        ("application/json", None),
        ("text/plain", None),
        ("", None),
        (None, None),
    ],
)
def test_stream_kind(content_type: str | None, kind: str | None) -> None:
    assert events.stream_kind(content_type) == kind


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b'data: {"a": 1}\n\ndata: [DONE]\n\n', events.SSE),
        (b"event: ping\ndata: x\r\n\r\n", events.SSE),
        (b": comment\nid: 3\nretry: 10\ndata\n\n", events.SSE),
        (b'data: {"a": 1}\n', None),  # the last event is not ended
        (b": only a comment\n\n", None),  # no data
        (b"data: x\n\nsomething else\n\n", None),  # a line of no SSE field
        (b'{"data": 1}', None),
        (b"\xff\xfedata: x\n\n", None),
        (b"", None),
    ],
)
def test_stream_kind_without_a_content_type(body: bytes, kind: str | None) -> None:
    assert events.stream_kind(None, "http://h/v1/chat/completions", body) == kind
    assert events.stream_kind("", None, body.decode("latin-1")) == kind
    assert events.stream_kind("text/plain", None, body) is None  # a content-type decides


@SETTINGS
@given(text=stream_text.map(lambda t: t.replace("\r", "")))
def test_events_of_a_stream_without_cr_end_at_their_first_empty_line(text: str) -> None:
    # Streams without CR are cut with str.find; each event ends at its first empty line.
    parts = events.split_events(events.SSE, text)
    assert "".join(parts) == text
    for index, part in enumerate(parts):
        if part == "\n":
            continue  # an empty line on its own
        assert not part.startswith("\n")
        assert "\n\n" not in part[:-1]
        assert part.endswith("\n\n") or index == len(parts) - 1


@SETTINGS
@given(kind=st.sampled_from([events.SSE, events.NDJSON]), text=stream_text)
def test_encoding_a_whole_stream_encodes_each_event(kind: str, text: str) -> None:
    pieces = events.split_events(kind, text)
    assert events.encode_events(kind, text) == [events.encode_event(kind, p) for p in pieces]


@SETTINGS
@given(text=stream_text)
def test_reading_events_for_integrity_matches_payloads(text: str) -> None:
    read = events.read_events(events.SSE, text)
    assert [(name, events.parse_data(data)) for name, data in read] == events.payloads(
        events.SSE, text
    )


@SETTINGS
@given(
    payloads=st.lists(
        st.sampled_from(['{"a":1}', "x", "", "[DONE]", " ", "data: y", ": z"]), max_size=6
    )
)
def test_a_stream_of_data_lines_is_cut_into_its_events(payloads: list[str]) -> None:
    pieces = [f"data: {payload}\n\n" for payload in payloads]
    assert events.split_events(events.SSE, "".join(pieces)) == pieces


# ---------------------------------------------------------------- streamed JSON arrays

ARRAY_TOKENS = ["[", "]", ",", "\r\n", "\n", " ", "{}", '{"a":1}', '{"a": [1, 2]}', '"s"', "1"]
ARRAY_TOKENS += ['{"t":"]"}', "{", "}", '"', "é", "null", "x", "[1]", '{\n  "a": 1\n}']
array_text = st.lists(st.sampled_from(ARRAY_TOKENS), max_size=30).map("".join)
wellformed_array = st.lists(
    st.sampled_from(['{"a":1}', '{"a": 1}', '{\n  "b": [\n    1\n  ]\n}', '"é"', "[]"]),
    min_size=1,
    max_size=6,
).flatmap(
    lambda elements: st.tuples(
        st.just(elements),
        st.sampled_from(["[", "[\n", " [ "]),
        st.sampled_from([",", ",\r\n", "\r\n,\r\n", " , "]),
        st.sampled_from(["]", "\r\n]", "]\n", "\n]\n"]),
    )
)


@SETTINGS
@given(text=array_text | stream_text)
def test_json_array_split_and_render_give_back_the_text(text: str) -> None:
    parts = events.split_events(events.JSON_ARRAY, text)
    assert "".join(parts) == text
    assert all(parts), "no empty event"
    fields = events.encode_events(events.JSON_ARRAY, text)
    assert fields == [events.encode_event(events.JSON_ARRAY, part) for part in parts]
    for part, record in zip(parts, fields, strict=True):
        events.check_fields(events.JSON_ARRAY, record)
        assert events.render_event(events.JSON_ARRAY, record) == part


@SETTINGS
@given(array=wellformed_array)
def test_a_json_array_is_one_event_per_element(array: tuple[list[str], str, str, str]) -> None:
    elements, opening, comma, closing = array
    text = opening + comma.join(elements) + closing
    fields = events.encode_events(events.JSON_ARRAY, text)
    assert len(fields) == len(elements)
    assert all("raw" not in record for record in fields)
    assert [record["before"] for record in fields] == [opening] + [comma] * (len(elements) - 1)
    assert fields[-1]["after"] == closing
    assert [data for _, data in events.payloads(events.JSON_ARRAY, text)] == json.loads(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the local provider, as it flushes each element
        ('[{"a":1},\r\n{"b":2}]', [{"before": "["}, {"before": ",\r\n", "after": "]"}]),
        # Google's servers: indented elements, line ends around the commas
        (
            '[{\n  "a": 1\n}\r\n,\r\n{\n  "b": 2\n}\r\n]',
            [
                {"before": "[", "layout": "indent2"},
                {"before": "\r\n,\r\n", "after": "\r\n]", "layout": "indent2"},
            ],
        ),
        ('[{"a":1}]', [{"before": "[", "after": "]"}]),
        ('[{"a":1},\r\n{"b"', [{"before": "["}, {"raw": ',\r\n{"b"'}]),  # cut mid-element
        ('[{"a":1},', [{"before": "["}, {"raw": ","}]),
        ('[{"a":1}] tail', [{"before": "["}, {"raw": "] tail"}]),
        ("[]", [{"raw": "[]"}]),
        ('{"error": 1}', [{"raw": '{"error": 1}'}]),
        ("", []),
    ],
)
def test_json_array_examples(text: str, expected: list[dict[str, object]]) -> None:
    fields = events.encode_events(events.JSON_ARRAY, text)
    assert [{k: v for k, v in f.items() if k not in ("data", "text")} for f in fields] == expected


@pytest.mark.parametrize(
    ("uri", "body", "kind"),
    [
        ("https://g/v1beta/models/gemini-2.0-flash:streamGenerateContent", None, "json-array"),
        ("https://g/v1beta/models/m:streamGenerateContent?alt=json&key=k", b' [{"a', "json-array"),
        (
            "https://g/v1/projects/p/locations/l/publishers/google/models/m:streamGenerateContent",
            "[",
            "json-array",
        ),  # Vertex AI
        ("https://g/v1beta/models/m:streamGenerateContent?alt=sse", None, None),
        ("https://g/v1beta/models/m:streamGenerateContent", b'{"error": {}}', None),
        ("https://g/v1beta/models/m:generateContent", None, None),
        ("https://api.openai.com/v1/chat/completions", b"[", None),
        (None, b"[", None),
    ],
)
def test_which_json_bodies_are_streamed_arrays(
    uri: str | None, body: bytes | str | None, kind: str | None
) -> None:
    assert events.stream_kind("application/json; charset=UTF-8", uri, body) == kind
    assert events.stream_kind("text/plain", uri, body) is None


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"data": {}}, "needs 'before'"),
        ({"before": "x", "data": {}}, "field 'before'"),
        ({"before": "[", "after": "]]", "data": {}}, "field 'after'"),
        ({"before": 1, "data": {}}, "must be a string"),
    ],
)
def test_json_array_event_fields_are_checked(fields: dict[str, object], problem: str) -> None:
    with pytest.raises((ValueError, TypeError), match=problem):
        events.check_fields(events.JSON_ARRAY, fields)
