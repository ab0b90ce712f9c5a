"""Whole runs through ``llmcassette.use_cassette`` with raw httpx2 against a local server.

A cassette that cannot be read stops the test in every record mode and is never overwritten.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
import vcr.cassette

import llmcassette
from llmcassette import CassetteFormatError, CassetteVersionError
from llmcassette.cassette import migrations

# Cassette metadata (``cassette.get_metadata``) came with vcrpy 9.
needs_vcrpy_metadata = pytest.mark.skipif(
    not hasattr(vcr.cassette.Cassette, "get_metadata"), reason="vcrpy < 9 has no cassette metadata"
)

MODES = ["once", "new_episodes", "all", "none"]
SSE = b'data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n'


def _serve_defaults(server: Any) -> None:
    server.reply("/json", b'{"answer":42}')
    server.reply("/sse", SSE, "text/event-stream")
    server.reply("/other", b"hello", "text/plain")


def _traffic(server: Any) -> list[tuple[int, bytes]]:
    with httpx2.Client(timeout=5) as client:
        return [
            (r.status_code, r.content)
            for r in (
                client.post(server.url + "/json", json={"q": 1}),
                client.get(server.url + "/sse"),
                client.get(server.url + "/other"),
            )
        ]


@pytest.fixture
def recorded(tmp_path: Path, local_server: Any) -> Path:
    """A good cassette recorded from the local server: 3 interactions, one streamed."""
    _serve_defaults(local_server)
    path = tmp_path / "c.jsonl"
    with llmcassette.use_cassette(path, record_mode="once"):
        _traffic(local_server)
    local_server.hits.clear()
    return path


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_record_then_replay(recorded: Path, local_server: Any) -> None:
    records = [json.loads(line) for line in lines_of(recorded)]
    assert [r.get("type") for r in records[1:]] == [
        *("request", "response", "end"),
        *("request", "response", "event", "event", "event", "end"),
        *("request", "response", "end"),
    ]
    assert records[2]["body"] == {"json": {"answer": 42}}
    events = [{k: v for k, v in r.items() if k != "t"} for r in records[6:9]]  # minus timing
    assert events == [
        {"type": "event", "data": {"n": 1}},
        {"type": "event", "data": {"n": 2}},
        {"type": "event", "text": "[DONE]"},
    ]
    with llmcassette.use_cassette(recorded, record_mode="none"):
        replayed = _traffic(local_server)
    assert replayed == [(200, b'{"answer":42}'), (200, SSE), (200, b"hello")]
    assert local_server.hits == []


@pytest.mark.parametrize("mode", ["once", "new_episodes", "none"])
def test_replaying_does_not_touch_the_file(recorded: Path, local_server: Any, mode: str) -> None:
    os.utime(recorded, ns=(1_000_000_000, 1_000_000_000))
    before = recorded.read_bytes()
    with llmcassette.use_cassette(recorded, record_mode=mode):
        _traffic(local_server)
    assert local_server.hits == []
    assert recorded.read_bytes() == before
    assert recorded.stat().st_mtime_ns == 1_000_000_000


def test_mode_all_with_identical_traffic_leaves_the_file_alone(
    recorded: Path, local_server: Any
) -> None:
    os.utime(recorded, ns=(1_000_000_000, 1_000_000_000))
    before = recorded.read_bytes()
    with llmcassette.use_cassette(recorded, record_mode="all"):
        _traffic(local_server)
    assert local_server.hits == ["/json", "/sse", "/other"]
    assert recorded.read_bytes() == before
    assert recorded.stat().st_mtime_ns == 1_000_000_000


def test_mode_all_with_one_change_rewrites_only_that_interaction(
    recorded: Path, local_server: Any
) -> None:
    old = lines_of(recorded)
    local_server.reply(
        "/sse", b'data: {"n":1}\n\ndata: {"n":3}\n\ndata: [DONE]\n\n', "text/event-stream"
    )
    with llmcassette.use_cassette(recorded, record_mode="all"):
        _traffic(local_server)
    new = lines_of(recorded)
    assert new[0] == old[0]
    assert len(new) == len(old)
    changed = {i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b}
    # The streamed interaction is file lines 5-10 (indexes 4-9); its second event (index 7)
    # changed. Its other lines may differ only by the timing measured during the new recording.
    assert 7 in changed
    assert changed <= {5, 6, 7, 8, 9}
    event = json.loads(new[7])
    event.pop("t", None)
    assert event == {"type": "event", "data": {"n": 3}}
    assert new[4] == old[4]  # the request did not change


def test_mode_all_with_fewer_calls_keeps_exactly_the_calls_of_this_run(
    recorded: Path, local_server: Any
) -> None:
    with llmcassette.use_cassette(recorded, record_mode="all"), httpx2.Client() as client:
        client.get(local_server.url + "/other")
    requests = [json.loads(line) for line in lines_of(recorded) if '"type":"request"' in line]
    assert [r["uri"] for r in requests] == [local_server.url + "/other"]
    with llmcassette.use_cassette(recorded, record_mode="none") as cassette:
        with httpx2.Client() as client:
            assert client.get(local_server.url + "/other").content == b"hello"
        assert llmcassette.check_unused(cassette) is None


def test_saving_in_mode_all_compares_no_old_request_with_a_new_one(
    recorded: Path, local_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vcrpy's own "all" save matches every loaded request against every new one: quadratic.
    compared: list[object] = []
    original = vcr.cassette.requests_match

    def counting(*args: Any, **kwargs: Any) -> Any:
        compared.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(vcr.cassette, "requests_match", counting)
    with llmcassette.use_cassette(recorded, record_mode="all"):
        _traffic(local_server)
    assert compared == []
    assert len([line for line in lines_of(recorded) if '"type":"request"' in line]) == 3


def test_new_episodes_appends_without_changing_old_lines(recorded: Path, local_server: Any) -> None:
    old = lines_of(recorded)
    with llmcassette.use_cassette(recorded, record_mode="new_episodes"):
        _traffic(local_server)
        with httpx2.Client() as client:
            client.get(local_server.url + "/new")
    assert local_server.hits == ["/new"]
    new = lines_of(recorded)
    assert new[: len(old)] == old
    assert [json.loads(line)["type"] for line in new[len(old) :]] == ["request", "response", "end"]


def test_gzip_response_is_stored_decoded_and_replays(tmp_path: Path, local_server: Any) -> None:
    payload = b'{"big":"' + b"x" * 200 + b'"}'
    local_server.reply("/gz", gzip.compress(payload), Content_Encoding="gzip")
    path = tmp_path / "gz.jsonl"
    with llmcassette.use_cassette(path, record_mode="once"), httpx2.Client() as client:
        recorded = client.get(local_server.url + "/gz")
    response_line = json.loads(lines_of(path)[2])
    assert response_line["body"] == {"json": json.loads(payload)}
    headers = {k.lower(): v for k, v in response_line["headers"].items()}
    assert "content-encoding" not in headers
    assert headers["content-length"] == str(len(payload))
    with llmcassette.use_cassette(path, record_mode="none"), httpx2.Client() as client:
        replayed = client.get(local_server.url + "/gz")
    assert recorded.content == replayed.content == payload
    assert local_server.hits == ["/gz"]


def test_yaml_named_cassette_records_and_replays(tmp_path: Path, local_server: Any) -> None:
    # Without pytest-recording's suffix swap, a .yaml name keeps its name (and holds JSONL).
    _serve_defaults(local_server)
    path = tmp_path / "c.yaml"
    with llmcassette.use_cassette(path, record_mode="once"):
        first = _traffic(local_server)
    assert json.loads(lines_of(path)[0])["format"] == "llmcassette"
    local_server.hits.clear()
    with llmcassette.use_cassette(path, record_mode="once"):
        assert _traffic(local_server) == first
    assert local_server.hits == []


# ------------------------------------------------------------------ corrupted cassettes


def _load_fully(persister: Any, path: Path) -> None:
    """Load through the persister; every body is there, bytes."""
    from llmcassette._vcr import serializer

    for response in persister.load_cassette(path, serializer=serializer)[1]:
        assert isinstance(response["body"]["string"], bytes)


Corruption = Callable[[list[str]], list[str]]


def _set(index: int, text: str) -> Corruption:
    def corrupt(lines: list[str]) -> list[str]:
        lines[index] = text
        return lines

    return corrupt


def _edit(index: int, **changes: object) -> Corruption:
    def corrupt(lines: list[str]) -> list[str]:
        lines[index] = json.dumps({**json.loads(lines[index]), **changes})
        return lines

    return corrupt


# Line numbers are 1-based file lines of the recorded cassette (see test_record_then_replay):
# 1 header | 2-4 json interaction | 5 request, 6 response, 7-9 events, 10 end | 11-13 text
CORRUPTIONS: list[tuple[str, Corruption, int, str]] = [
    ("bad-json", _set(5, '{"type": "response", "status": 200'), 6, "not valid JSON"),
    ("truncated-after-event", lambda lines: lines[:8], 8, "no end line"),
    ("end-count", _edit(9, events=7), 10, "says 7 events"),
    ("unknown-type", _edit(6, type="delta"), 7, "unknown line type 'delta'"),
    ("non-object", _set(2, "[]"), 3, "must be a JSON object"),
    ("status-not-int", _edit(2, status="200"), 3, "'status' must be int"),
    ("event-layout-int", _edit(6, layout=5), 7, "event line is invalid"),
    ("event-text-null", _edit(8, text=None), 9, "'text' must be a string"),
    # valid JSON, but no UTF-8 can be rendered from it: found when the body is built
    ("event-lone-surrogate", _edit(6, data="\ud800"), 7, "event line is invalid"),
    ("headers-not-object", _edit(4, headers=[["a", "b"]]), 5, "'headers' must be an object"),
    (
        "yaml",
        lambda lines: ["interactions:", "- request:", "    body: null"],
        1,
        "not an llmcassette header",
    ),
]


def _write_corrupt(path: Path, corrupt: Corruption) -> bytes:
    data = ("\n".join(corrupt(lines_of(path))) + "\n").encode()
    path.write_bytes(data)
    return data


def _assert_untouched(path: Path, data: bytes, server: Any, mode: str = "once") -> None:
    assert path.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    if mode != "all":
        assert server.hits == []
    # In "all" mode a bad event line may be found only once its body is built, i.e. when the
    # new recording is saved: the traffic then went out, but the file is still not replaced.


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("corrupt", "line", "fragment"), [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS]
)
def test_corrupt_cassette_stops_every_record_mode(
    recorded: Path,
    local_server: Any,
    mode: str,
    corrupt: Corruption,
    line: int,
    fragment: str,
) -> None:
    data = _write_corrupt(recorded, corrupt)
    with (
        pytest.raises(CassetteFormatError) as info,
        llmcassette.use_cassette(recorded, record_mode=mode),
    ):
        _traffic(local_server)
    error = info.value
    assert error.line == line
    assert fragment in str(error)
    assert f"{recorded}:{line}:" in str(error)
    _assert_untouched(recorded, data, local_server, mode)


@pytest.mark.parametrize(
    ("corrupt", "line", "fragment"), [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS]
)
def test_corrupt_cassette_through_the_persister(
    recorded: Path, local_server: Any, corrupt: Corruption, line: int, fragment: str
) -> None:
    from llmcassette._vcr.persister import Persister

    data = _write_corrupt(recorded, corrupt)
    with pytest.raises(CassetteFormatError) as info:
        _load_fully(Persister(), recorded)
    assert info.value.line == line
    assert fragment in str(info.value)
    assert str(recorded) in str(info.value)
    _assert_untouched(recorded, data, local_server)


@pytest.mark.parametrize("mode", MODES)
def test_non_utf8_line_stops_every_record_mode(
    recorded: Path, local_server: Any, mode: str
) -> None:
    data = bytearray(recorded.read_bytes())
    start = data.index(b"\n", data.index(b"\n") + 1) + 1  # line 3
    data[start + 2 : start + 3] = b"\xc3\x28"  # a broken two-byte sequence
    recorded.write_bytes(bytes(data))
    with (
        pytest.raises(CassetteFormatError) as info,
        llmcassette.use_cassette(recorded, record_mode=mode),
    ):
        _traffic(local_server)
    assert info.value.line == 3
    assert "not valid UTF-8" in str(info.value)
    _assert_untouched(recorded, bytes(data), local_server)


@pytest.mark.parametrize("mode", MODES)
def test_newer_format_version_stops_every_record_mode(
    recorded: Path, local_server: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    newer = llmcassette.FORMAT_VERSION + 1
    monkeypatch.setitem(migrations.FIRST_RELEASE_WITH_VERSION, newer, "7.0.0")
    data = _write_corrupt(recorded, _edit(0, format_version=newer))
    with (
        pytest.raises(CassetteVersionError) as info,
        llmcassette.use_cassette(recorded, record_mode=mode),
    ):
        _traffic(local_server)
    assert info.value.line == 1
    assert "llmcassette>=7.0.0" in str(info.value)
    assert str(recorded) in str(info.value)
    _assert_untouched(recorded, data, local_server)


@pytest.mark.parametrize("mode", MODES)
def test_migrated_cassette_replays_and_is_not_rewritten_on_load(
    recorded: Path, local_server: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Turn the recording into an invented "v0" (type -> kind) and register its upgrade step.
    def v0_to_v1(lines: list[migrations.Line]) -> list[migrations.Line]:
        out = []
        for line in lines:
            record = dict(line.record)
            record["type"] = record.pop("kind")
            out.append(migrations.Line(line.number, record))
        return out

    monkeypatch.setitem(migrations.MIGRATIONS, 0, v0_to_v1)
    records = [json.loads(line) for line in lines_of(recorded)]
    records[0]["format_version"] = 0
    for record in records[1:]:
        record["kind"] = record.pop("type")
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    recorded.write_bytes(data)
    with llmcassette.use_cassette(recorded, record_mode=mode):
        replayed = _traffic(local_server)
    assert replayed == [(200, b'{"answer":42}'), (200, SSE), (200, b"hello")]
    if mode == "all":
        # re-recording writes the current format
        assert local_server.hits == ["/json", "/sse", "/other"]
        assert json.loads(lines_of(recorded)[0])["format_version"] == llmcassette.FORMAT_VERSION
        assert '"kind"' not in recorded.read_text()
    else:
        assert local_server.hits == []
        assert recorded.read_bytes() == data


@needs_vcrpy_metadata
def test_vcrpy_metadata_round_trips(tmp_path: Path, local_server: Any) -> None:
    _serve_defaults(local_server)
    path = tmp_path / "meta.jsonl"
    with llmcassette.use_cassette(path, record_mode="once") as cassette:
        seed = cassette.get_metadata("seed", 1234)
        _traffic(local_server)
    assert seed == 1234
    assert json.loads(lines_of(path)[0])["metadata"] == {"seed": 1234}
    before = path.read_bytes()
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        assert cassette.get_metadata("seed", 0) == 1234
        _traffic(local_server)
    assert path.read_bytes() == before


def test_a_refused_save_does_not_leave_http_patched(tmp_path: Path, local_server: Any) -> None:
    import gc

    original = httpx2.HTTPTransport.handle_request
    path = tmp_path / "c.jsonl"
    with (  # noqa: PT012 - the error comes from the cassette's exit, after the block
        pytest.raises(CassetteFormatError) as info,
        llmcassette.use_cassette(path, record_mode="new_episodes"),
        httpx2.Client() as client,
    ):
        client.get(local_server.url + "/json")
        path.write_text("garbage\n")  # the save at exit refuses to overwrite this
    assert "refusing to overwrite" in str(info.value)
    assert path.read_text() == "garbage\n"
    leaked = httpx2.HTTPTransport.handle_request is not original
    del info
    gc.collect()  # leave no patch behind for the tests that follow
    assert httpx2.HTTPTransport.handle_request is original
    assert not leaked, "httpx2 stayed patched after the cassette's context manager exited"
