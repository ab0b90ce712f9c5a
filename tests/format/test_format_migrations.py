"""Older cassettes are upgraded step by step when read; a missing step is a clear error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmcassette import FORMAT_VERSION, CassetteFormatError
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette import migrations
from llmcassette.cassette.migrations import Line

PATH = "old.jsonl"

# An invented version 0: "kind" instead of "type", "status_code" instead of "status",
# and the end line was called "done".
V0_LINES: list[dict[str, Any]] = [
    {"format": "llmcassette", "format_version": 0, "recorded_by": "llmcassette 0.0.1"},
    {"kind": "request", "method": "GET", "uri": "http://h/x", "headers": {}, "body": None},
    {
        "kind": "response",
        "status_code": 404,
        "reason": "Not Found",
        "headers": {},
        "body": {"text": "no"},
    },
    {"kind": "done", "events": 0},
    {"kind": "request", "method": "POST", "uri": "http://h/s", "headers": {}, "body": {"json": {}}},
    {
        "kind": "response",
        "status_code": 200,
        "reason": "OK",
        "headers": {"content-type": "text/event-stream"},
        "body": {"stream": "sse"},
    },
    {"kind": "event", "data": {"n": 1}},
    {"kind": "event", "text": "[DONE]"},
    {"kind": "done", "events": 2},
]


def v0_to_v1(lines: list[Line]) -> list[Line]:
    out = []
    for line in lines:
        record = dict(line.record)
        kind = record.pop("kind")
        record["type"] = "end" if kind == "done" else kind
        if "status_code" in record:
            record["status"] = record.pop("status_code")
        out.append(Line(line.number, record))
    return out


def _data(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


@pytest.fixture
def with_v0_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # An invented version 0 before the real ones: loading it runs every step after it too.
    monkeypatch.setitem(migrations.MIGRATIONS, 0, v0_to_v1)


@pytest.mark.usefixtures("with_v0_step")
def test_v0_cassette_loads_as_current_version() -> None:
    cassette = cassette_file.read(_data(V0_LINES), PATH)
    assert cassette.header["format_version"] == FORMAT_VERSION
    assert cassette.header["recorded_by"] == "llmcassette 0.0.1"
    first, second = cassette.interactions
    assert (first.method, first.uri, first.status, first.reason) == (
        "GET",
        "http://h/x",
        404,
        "Not Found",
    )
    assert first.request_body is None
    assert first.response_body == b"no"
    assert second.status == 200
    assert second.stream == "sse"
    assert second.response_body == b'data: {"n":1}\n\ndata: [DONE]\n\n'
    assert second.request_body == b"{}"
    # line numbers still point into the file as it is on disk
    assert [first.line, second.line] == [2, 5]
    # the version it was written in is kept beside the migrated header
    assert cassette.written_version == 0
    assert cassette_file.read(cassette_file.write(cassette).encode(), PATH).written_version == (
        FORMAT_VERSION
    )


@pytest.mark.usefixtures("with_v0_step")
def test_v0_cassette_is_written_back_as_current_version() -> None:
    cassette = cassette_file.read(_data(V0_LINES), PATH)
    text = cassette_file.write(cassette)
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["format_version"] == FORMAT_VERSION
    assert [r.get("type") for r in records[1:]] == [
        "request",
        "response",
        "end",
        "request",
        "response",
        "event",
        "event",
        "end",
    ]
    assert records[2]["status"] == 404
    assert "kind" not in text
    again = cassette_file.read(text.encode(), PATH)
    assert [i.response_body for i in again.interactions] == [
        i.response_body for i in cassette.interactions
    ]


@pytest.mark.usefixtures("with_v0_step")
def test_errors_after_migration_name_the_original_line() -> None:
    records = [dict(r) for r in V0_LINES]
    records[5]["status_code"] = "200"  # line 6
    with pytest.raises(CassetteFormatError) as info:
        cassette_file.read(_data(records), PATH)
    assert info.value.line == 6
    assert f"{PATH}:6:" in str(info.value)


@pytest.mark.usefixtures("with_v0_step")
def test_a_failing_step_is_a_format_error_not_a_missing_step() -> None:
    records = [dict(r) for r in V0_LINES]
    del records[3]["kind"]  # the step's record.pop("kind") raises KeyError
    with pytest.raises(CassetteFormatError) as info:
        cassette_file.read(_data(records), PATH)
    message = str(info.value)
    assert "no migration" not in message
    assert "format_version 0" in message
    assert info.value.path == PATH


def test_missing_step_is_a_clear_error() -> None:
    assert 0 not in migrations.MIGRATIONS
    data = _data(V0_LINES)
    with pytest.raises(CassetteFormatError) as info:
        cassette_file.read(data, PATH)
    error = info.value
    assert error.line == 1
    assert "no migration from format_version 0" in str(error)
    assert str(error).startswith(f"{PATH}:1: ")
    assert error.hint


def test_migrate_applies_steps_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def step(version: int) -> migrations.Migration:
        def run(lines: list[Line]) -> list[Line]:
            calls.append(version)
            return [
                Line(line.number, {**line.record, "seen": [*line.record.get("seen", []), version]})
                for line in lines
            ]

        return run

    monkeypatch.setattr(migrations, "FORMAT_VERSION", 3)
    for version in (0, 1, 2):
        monkeypatch.setitem(migrations.MIGRATIONS, version, step(version))
    out = migrations.migrate([Line(2, {"type": "request"})], 1)
    assert calls == [1, 2]
    assert out == [Line(2, {"type": "request", "seen": [1, 2]})]
    assert migrations.migrate([Line(2, {})], 3) == [Line(2, {})]


def test_migrate_names_the_missing_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migrations, "FORMAT_VERSION", 3)
    monkeypatch.setitem(migrations.MIGRATIONS, 0, lambda lines: lines)
    monkeypatch.delitem(migrations.MIGRATIONS, 1)
    with pytest.raises(KeyError) as info:
        migrations.migrate([], 0)
    assert info.value.args == (1,)


def test_current_version_needs_no_migration() -> None:
    lines = [Line(2, {"type": "request"})]
    assert migrations.migrate(lines, FORMAT_VERSION) is lines


# A version 1 file as the 0.1.0 snapshots wrote it: spaced lines, padding in the layout
# name, every SSE event name written out.
V1_SSE = (
    'event: message_start\ndata: {"type":"message_start"  }\n\n'
    'data: {"type":"unnamed"}\n\n'
    'event: other\ndata: {"type":"delta"}\n\n'
    "event: ping\n\n"
)
V1_LINES: list[dict[str, Any]] = [
    {"format": "llmcassette", "format_version": 1, "recorded_by": "llmcassette 0.1.0"},
    {"type": "request", "method": "POST", "uri": "http://h/m", "headers": {}, "body": None},
    {
        "type": "response",
        "status": 200,
        "headers": {"content-type": "text/event-stream"},
        "body": {"stream": "sse"},
    },
    {
        "type": "event",
        "event": "message_start",
        "data": {"type": "message_start"},
        "layout": "compact+pad2",
    },
    {"type": "event", "data": {"type": "unnamed"}},
    {"type": "event", "event": "other", "data": {"type": "delta"}},
    {"type": "event", "event": "ping"},
    {"type": "end", "events": 4},
    {"type": "request", "method": "GET", "uri": "http://h/j", "headers": {}, "body": None},
    {
        "type": "response",
        "status": 200,
        "headers": {"content-type": "application/json"},
        "body": {"json": {"type": "x"}, "layout": "spaced+pad1"},
    },
    {"type": "end", "events": 0},
]


def test_a_version_1_cassette_replays_the_same_bytes_and_is_written_as_version_2() -> None:
    cassette = cassette_file.read(_data(V1_LINES), PATH)
    stream, body = (item.response_body for item in cassette.interactions)
    assert (stream, body) == (V1_SSE.encode(), b'{"type": "x" }')

    written = cassette_file.write(cassette)
    lines = [json.loads(line) for line in written.splitlines()]
    assert lines[0]["format_version"] == FORMAT_VERSION == 2
    assert lines[3:7] == [
        {"type": "event", "pad": 2, "data": {"type": "message_start"}},  # named by its type
        {"type": "event", "event": None, "data": {"type": "unnamed"}},  # no event: line
        {"type": "event", "event": "other", "data": {"type": "delta"}},
        {"type": "event", "event": "ping"},
    ]
    assert lines[9]["body"] == {"json": {"type": "x"}, "layout": "spaced", "pad": 1}
    assert ", " not in written.replace('"x"', "")  # compact lines
    again = cassette_file.read(written.encode(), PATH)
    assert [item.response_body for item in again.interactions] == [stream, body]
