"""Hand-damaged cassettes: every problem is a ``CassetteFormatError`` naming the file and line."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette import FORMAT_VERSION, CassetteFormatError, CassetteVersionError, __version__
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette import migrations
from llmcassette.cassette.jsonl import Cassette, Interaction

PATH = "cassettes/test_chat.jsonl"


def good_lines() -> list[str]:
    """A valid cassette; line numbers below refer to this layout.

    1 header | 2 request | 3 response (json) | 4 end | 5 request | 6 response (sse)
    7 event | 8 event | 9 end
    """
    items = [
        Interaction(
            "POST",
            "http://h/a",
            {"content-type": ["application/json"]},
            b'{"q":1}',
            200,
            "OK",
            {"content-type": ["application/json"]},
            b'{"a":1}',
        ),
        Interaction(
            "POST",
            "http://h/b",
            {},
            b"{}",
            200,
            "OK",
            {"content-type": ["text/event-stream"]},
            b'data: {"x":1}\n\ndata: [DONE]\n\n',
        ),
    ]
    text = cassette_file.write(
        Cassette(cassette_file.new_header("t", "2024-01-01T00:00:00Z"), items)
    )
    lines = text.split("\n")[:-1]
    assert [json.loads(line).get("type") for line in lines] == [
        None,
        "request",
        "response",
        "end",
        "request",
        "response",
        "event",
        "event",
        "end",
    ]
    return lines


def _join(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _replace(number: int, new: str) -> Callable[[list[str]], bytes]:
    def corrupt(lines: list[str]) -> bytes:
        lines[number - 1] = new
        return _join(lines)

    return corrupt


def _edit(number: int, **changes: object) -> Callable[[list[str]], bytes]:
    def corrupt(lines: list[str]) -> bytes:
        record = json.loads(lines[number - 1])
        record.update(changes)
        lines[number - 1] = json.dumps(record)
        return _join(lines)

    return corrupt


def _truncate(keep: int) -> Callable[[list[str]], bytes]:
    return lambda lines: _join(lines[:keep])


def _read_fully(data: bytes) -> cassette_file.Cassette:
    """Read, and build every body: streamed bodies may be rebuilt only when first used."""
    cassette = cassette_file.read(data, PATH)
    for item in cassette.interactions:
        assert isinstance(item.response_body, bytes)
    return cassette


def _check(data: bytes, line: int, *fragments: str) -> CassetteFormatError:
    with pytest.raises(CassetteFormatError) as info:
        _read_fully(data)
    error = info.value
    assert error.line == line
    assert error.path == PATH
    message = str(error)
    assert f"{PATH}:{line}:" in message
    for fragment in fragments:
        assert fragment in message
    assert error.hint
    assert "how to fix:" in message
    return error


def test_good_cassette_reads() -> None:
    cassette = cassette_file.read(_join(good_lines()), PATH)
    assert [item.line for item in cassette.interactions] == [2, 5]
    assert cassette.interactions[1].response_body == b'data: {"x":1}\n\ndata: [DONE]\n\n'


@pytest.mark.parametrize(
    ("corrupt", "line", "fragments"),
    [
        pytest.param(
            _replace(3, '{"type": "response", "status": 200,'), 3, ["not valid JSON"], id="bad-json"
        ),
        pytest.param(
            _replace(7, '{"type": "event", "data": {"x":1}'),
            7,
            ["not valid JSON"],
            id="bad-json-event",
        ),
        pytest.param(_replace(5, "<<<<<<< HEAD"), 5, ["not valid JSON"], id="merge-conflict"),
        pytest.param(_replace(4, "[1, 2]"), 4, ["must be a JSON object", "list"], id="array-line"),
        pytest.param(_replace(6, '"text"'), 6, ["must be a JSON object", "str"], id="string-line"),
        pytest.param(_replace(2, "null"), 2, ["must be a JSON object"], id="null-line"),
        pytest.param(
            _truncate(8), 8, ["no end line", "line 5", "truncated"], id="no-end-after-event"
        ),
        pytest.param(
            _truncate(3), 3, ["no end line", "line 2", "truncated"], id="no-end-after-response"
        ),
        pytest.param(_truncate(2), 2, ["no response line", "truncated"], id="no-response"),
        pytest.param(_truncate(6), 6, ["no end line", "line 5"], id="no-events-no-end"),
        pytest.param(
            _edit(9, events=3), 9, ["says 3 events", "line 5", "has 2"], id="end-count-high"
        ),
        pytest.param(_edit(9, events=1), 9, ["says 1 events", "has 2"], id="end-count-low"),
        pytest.param(
            _edit(4, events=1), 4, ["says 1 events", "line 2", "has 0"], id="end-count-nostream"
        ),
        pytest.param(
            _edit(9, events="2"), 9, ["'events' must be int", "a str"], id="end-count-type"
        ),
        pytest.param(
            _edit(7, type="chunk"), 7, ["unknown line type 'chunk'"], id="unknown-type-event"
        ),
        pytest.param(
            _edit(5, type="exchange"), 5, ["unknown line type 'exchange'"], id="unknown-type-start"
        ),
        pytest.param(_edit(4, type="annotation"), 4, ["unknown line type"], id="unknown-type-end"),
        pytest.param(_replace(7, '{"data": 1}'), 7, ["unknown line type None"], id="missing-type"),
        pytest.param(
            _edit(3, type="request"), 3, ["expected a response line", "request"], id="two-requests"
        ),
        pytest.param(
            _edit(2, type="response"), 2, ["expected a request line"], id="starts-with-response"
        ),
        pytest.param(_edit(7, type="end"), 7, ["'events' must be int", "missing"], id="early-end"),
        pytest.param(
            _edit(7, type="end", events=0), 8, ["expected a request line"], id="early-end-0"
        ),
        pytest.param(_edit(3, status="200"), 3, ["'status' must be int", "a str"], id="status-str"),
        pytest.param(
            _edit(3, status=True), 3, ["'status' must be int", "a bool"], id="status-bool"
        ),
        pytest.param(
            _edit(3, status=200.0), 3, ["'status' must be int", "a float"], id="status-float"
        ),
        pytest.param(
            _replace(3, '{"type": "response", "body": null}'),
            3,
            ["'status'", "missing"],
            id="status-missing",
        ),
        pytest.param(_edit(3, reason=200), 3, ["'reason' must be a string"], id="reason-int"),
        pytest.param(_edit(2, method=None), 2, ["'method' must be str"], id="method-null"),
        pytest.param(_edit(2, uri=["x"]), 2, ["'uri' must be str"], id="uri-list"),
        pytest.param(
            _edit(2, headers=["a"]), 2, ["'headers' must be an object"], id="headers-list"
        ),
        pytest.param(_edit(3, headers="x"), 3, ["'headers' must be an object"], id="headers-str"),
        pytest.param(_edit(3, headers={"a": 1}), 3, ["header 'a'"], id="header-int"),
        pytest.param(_edit(6, headers={"a": ["x", 2]}), 6, ["header 'a'"], id="header-list-int"),
        pytest.param(_edit(2, body="{}"), 2, ["'body' must be an object or null"], id="body-str"),
        pytest.param(
            _edit(3, body={"base64": "***"}), 3, ["'body' is invalid"], id="body-bad-base64"
        ),
        pytest.param(
            _edit(3, body={"json": 1, "layout": "fancy"}),
            3,
            ["'body' is invalid"],
            id="body-bad-layout",
        ),
        pytest.param(_edit(3, body={}), 3, ["'body' is invalid"], id="body-empty"),
        pytest.param(
            _edit(6, body={"stream": "websocket"}), 6, ["unknown stream kind"], id="stream-kind"
        ),
        pytest.param(_edit(7, raw=5), 7, ["'raw' must be a string"], id="event-raw-int"),
        pytest.param(_edit(7, layout="fancy"), 7, ["event line is invalid"], id="event-bad-layout"),
        pytest.param(
            _edit(7, layout=5), 7, ["event line is invalid", "layout"], id="event-layout-int"
        ),
        pytest.param(_edit(7, layout=None), 7, ["event line is invalid"], id="event-layout-null"),
        pytest.param(_edit(7, layout=["a"]), 7, ["event line is invalid"], id="event-layout-list"),
        pytest.param(_edit(8, text=None), 8, ["'text' must be a string"], id="event-text-null"),
        pytest.param(
            _edit(7, event={"a": 1}), 7, ["'event' must be a string"], id="event-field-object"
        ),
        pytest.param(_edit(7, id=7), 7, ["'id' must be a string"], id="event-id-int"),
        pytest.param(_edit(7, data="\ud800"), 7, ["event line is invalid"], id="event-surrogate"),
        pytest.param(
            _edit(8, text="\udfff"), 8, ["event line is invalid"], id="event-text-surrogate"
        ),
        pytest.param(
            _edit(3, body={"json": 1, "layout": 5}), 3, ["'body' is invalid"], id="body-layout-int"
        ),
        pytest.param(
            _edit(3, body={"text": None}), 3, ["'body' is invalid", "'text'"], id="body-text-null"
        ),
        pytest.param(
            _edit(3, body={"text": 5}), 3, ["'body' is invalid", "'text'"], id="body-text-int"
        ),
        pytest.param(_edit(3, body={"base64": 5}), 3, ["'body' is invalid"], id="body-base64-int"),
        pytest.param(
            _edit(3, body={"json": "\ud800"}), 3, ["'body' is invalid"], id="body-unencodable-json"
        ),
    ],
)
def test_corruption_names_file_and_line(
    corrupt: Callable[[list[str]], bytes], line: int, fragments: list[str]
) -> None:
    _check(corrupt(good_lines()), line, *fragments)


def test_event_after_non_stream_response() -> None:
    lines = good_lines()
    lines.insert(3, json.dumps({"type": "event", "text": "x"}))  # becomes line 4
    _check(_join(lines), 4, "event line after a response whose body is not a stream")


def test_non_utf8_bytes_name_their_line_and_column() -> None:
    lines = good_lines()
    data = bytearray(_join(lines))
    offset = data.index(b"http://h/b")  # on line 5
    data[offset + 7] = 0xFF
    error = _check(bytes(data), 5, "0xff", "not valid UTF-8")
    column = len(lines[4].split("http://h/b")[0]) + 8
    assert f"column {column}" in str(error)


def test_latin1_file_on_line_one() -> None:
    _check(b'{"format": "llmcassette", "recorded_by": "caf\xe9"}\n', 1, "0xe9")


def test_blank_lines_keep_numbering() -> None:
    lines = good_lines()
    lines.insert(2, "")
    lines.insert(2, "   ")
    # the old line 7 (first event) is now line 9
    lines[8] = "{oops"
    _check(_join(lines), 9, "not valid JSON")


def test_blank_lines_are_allowed() -> None:
    lines = good_lines()
    data = _join([*lines[:4], "", "  ", *lines[4:], ""])
    cassette = cassette_file.read(data, PATH)
    assert [item.line for item in cassette.interactions] == [2, 7]


def test_crlf_line_ends_are_read() -> None:
    # git's autocrlf can turn a cassette's line ends into CRLF; every line is still JSON.
    data = _join(good_lines()).replace(b"\n", b"\r\n")
    cassette = cassette_file.read(data, PATH)
    assert cassette.interactions[1].response_body == b'data: {"x":1}\n\ndata: [DONE]\n\n'


VCRPY_YAML = """interactions:
- request:
    body: null
    headers: {}
    method: GET
    uri: http://h/
  response:
    body:
      string: hi
    headers: {}
    status:
      code: 200
      message: OK
version: 1
"""


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(VCRPY_YAML.encode(), id="vcrpy-yaml"),
        pytest.param(
            json.dumps({"interactions": [], "version": 1}, indent=4).encode(), id="vcrpy-json"
        ),
        pytest.param(b'{"interactions": [], "version": 1}\n', id="vcrpy-json-one-line"),
        pytest.param(b'{"type": "request", "method": "GET", "uri": "http://h/"}\n', id="no-header"),
        pytest.param(b'{"format": "other", "format_version": 1}\n', id="other-format"),
    ],
)
def test_first_line_not_a_header(data: bytes) -> None:
    error = _check(data, 1, "is not an llmcassette header")
    assert error.hint is not None
    assert "vcrpy" in error.hint  # says what to do with a vcrpy cassette


@pytest.mark.parametrize("data", [b"", b"\n\n", b"   \n"])
def test_empty_cassette(data: bytes) -> None:
    with pytest.raises(CassetteFormatError) as info:
        cassette_file.read(data, PATH)
    assert info.value.line is None
    assert str(info.value).startswith(f"{PATH}: ")


@pytest.mark.parametrize("version", ["1", 1.0, -1, None, True])
def test_bad_format_version(version: object) -> None:
    lines = good_lines()
    header = json.loads(lines[0])
    header["format_version"] = version
    lines[0] = json.dumps(header)
    _check(_join(lines), 1, "format_version must be a whole number")


def test_newer_format_version_names_the_release(monkeypatch: pytest.MonkeyPatch) -> None:
    newer = FORMAT_VERSION + 1
    monkeypatch.setitem(migrations.FIRST_RELEASE_WITH_VERSION, newer, "9.3.0")
    lines = good_lines()
    lines[0] = json.dumps({"format": "llmcassette", "format_version": newer, "recorded_by": "x"})
    lines.append(json.dumps({"type": "hologram"}))  # what a newer version might add
    with pytest.raises(CassetteVersionError) as info:
        cassette_file.read(_join(lines), PATH)
    error = info.value
    assert isinstance(error, CassetteFormatError)
    assert error.line == 1
    assert error.found_version == newer
    assert error.supported_version == FORMAT_VERSION
    message = str(error)
    assert message.startswith(f"{PATH}:1: ")
    assert f"format_version {newer}" in message
    assert "llmcassette>=9.3.0" in message


def test_newer_format_version_without_known_release() -> None:
    data = _join([json.dumps({"format": "llmcassette", "format_version": 999})])
    with pytest.raises(CassetteVersionError) as info:
        cassette_file.read(data, PATH)
    assert "upgrade" in str(info.value)
    assert "format_version 999" in str(info.value)
    assert info.value.hint is not None
    assert "pip install" in info.value.hint


def test_current_version_is_known_to_first_release_table() -> None:
    # "please upgrade" messages need an entry for every version this release writes.
    assert FORMAT_VERSION in migrations.FIRST_RELEASE_WITH_VERSION
    release = migrations.FIRST_RELEASE_WITH_VERSION[FORMAT_VERSION]
    assert tuple(int(p) for p in release.split(".")) <= tuple(
        int(p) for p in __version__.split(".")[:3]
    )


def test_utf8_bom_is_accepted() -> None:
    # Some editors add an invisible byte order mark on save; the cassette still reads.
    cassette = cassette_file.read(b"\xef\xbb\xbf" + _join(good_lines()), PATH)
    assert [item.line for item in cassette.interactions] == [2, 5]
    # ...but only at the very start
    lines = good_lines()
    lines[3] = "\ufeff" + lines[3]
    _check(_join(lines), 4, "not valid JSON")


# ------------------------------------------------------------------ fuzzing hand edits


any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=5), inner, max_size=2)
    ),
    max_leaves=4,
)
KEYS = ["type", "status", "reason", "headers", "body", "method", "uri", "events", "data", "text"]
KEYS += ["raw", "layout", "event", "id", "retry", "t", "json", "base64", "stream", "format_version"]


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, 8), st.sampled_from(KEYS), any_json | st.just(KeyError)),
        min_size=1,
        max_size=3,
    )
)
def test_any_hand_edit_reads_or_fails_cleanly(edits: list[tuple[int, str, object]]) -> None:
    lines = good_lines()
    for index, key, value in edits:
        record = json.loads(lines[index])
        if value is KeyError:
            record.pop(key, None)
        elif key in ("json", "base64", "stream") and isinstance(record.get("body"), dict):
            record["body"] = {key: value}
        else:
            record[key] = value
        lines[index] = json.dumps(record)
    try:
        cassette = _read_fully(_join(lines))
    except CassetteFormatError as error:
        where = (error.path, error.line)
    else:
        where = (PATH, None)
        for item in cassette.interactions:  # what was read must be usable bytes
            assert item.request_body is None or isinstance(item.request_body, bytes)
    assert where[0] == PATH
    assert where[1] is None or 1 <= where[1] <= 9


def test_one_object_per_line_even_when_split_lines_balance_out() -> None:
    lines = good_lines()
    request = json.loads(lines[1])
    # line 2 spills its last field onto a line of its own...
    lines[1] = json.dumps(request)[:-1] + ', "x": [{}'
    lines.insert(2, "{}]}")
    # ...and the response and end lines share one line, so there are as many lines as values
    lines[3:5] = [lines[3] + "," + lines[4]]
    with pytest.raises(CassetteFormatError) as info:
        cassette_file.read(_join(lines), PATH)
    assert info.value.line == 2
