"""The persister on disk: atomic saves, legacy vcrpy cassettes, rewrite, and minimal diffs."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import vcr.cassette
import vcr.serialize
from vcr.persisters.filesystem import CassetteNotFoundError, FilesystemPersister
from vcr.request import Request
from vcr.serializers import jsonserializer, yamlserializer

from llmcassette import CassetteFormatError
from llmcassette._vcr import bridge as vcr_bridge
from llmcassette._vcr import serializer
from llmcassette._vcr.persister import Persister
from llmcassette._vcr.tempfiles import atomic_write
from llmcassette.cassette import jsonl as cassette_file

# Cassette metadata (``cassette.get_metadata``) came with vcrpy 9.
needs_vcrpy_metadata = pytest.mark.skipif(
    not hasattr(vcr.cassette.Cassette, "get_metadata"), reason="vcrpy < 9 has no cassette metadata"
)

OLD_TIME = "2020-01-01T00:00:00Z"
NEW_TIME = "2030-01-01T00:00:00Z"


def pair(
    path: str,
    body: bytes,
    *,
    content_type: str = "application/json",
    request_body: bytes | None = b'{"q":1}',
    status: int = 200,
) -> tuple[Request, dict[str, Any]]:
    request = Request(
        "POST", f"http://127.0.0.1:9/{path}", request_body, {"Content-Type": "application/json"}
    )
    response = {
        "status": {"code": status, "message": "OK"},
        "headers": {"Content-Type": [content_type], "X-Id": [path]},
        "body": {"string": body},
    }
    return request, response


def cassette_dict(*pairs: tuple[Request, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"requests": [p[0] for p in pairs], "responses": [p[1] for p in pairs], **extra}


def three() -> tuple[tuple[Request, dict[str, Any]], ...]:
    """Three fresh interactions (vcrpy's serializers change response dicts in place)."""
    return (
        pair("a", b'{"answer":1}'),
        pair("b", b'data: {"x":1}\n\ndata: [DONE]\n\n', content_type="text/event-stream"),
        pair("c", b'{"answer":3}'),
    )


def same_interactions(
    loaded: tuple[Any, ...], expected: list[tuple[Request, dict[str, Any]]]
) -> None:
    requests, responses = loaded[0], loaded[1]
    assert len(requests) == len(responses) == len(expected)
    for request, response, (want_request, want_response) in zip(
        requests, responses, expected, strict=True
    ):
        assert (request.method, request.uri, request.body) == (
            want_request.method,
            want_request.uri,
            want_request.body,
        )
        assert dict(request.headers) == dict(want_request.headers)
        assert response["status"] == want_response["status"]
        assert response["headers"] == want_response["headers"]
        assert response["body"]["string"] == want_response["body"]["string"]


@pytest.fixture
def fixed_time(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``now`` as the cassettes see it; tests append to move time on."""
    times = [OLD_TIME]
    monkeypatch.setattr(cassette_file, "now_iso", lambda: times[-1])
    return times


def save(persister: Persister, path: Path, data: dict[str, Any]) -> None:
    persister.save_cassette(path, data, serializer=serializer)


def load(persister: Persister, path: Path) -> tuple[Any, ...]:
    return persister.load_cassette(path, serializer=serializer)


def load_fully(persister: Persister, path: Path) -> tuple[Any, ...]:
    """Load, and build every body (streamed bodies may be rebuilt only when first used)."""
    loaded = load(persister, path)
    for response in loaded[1]:
        assert isinstance(response["body"]["string"], bytes)
    return loaded


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


# ------------------------------------------------------------------ basic save / load


@pytest.mark.usefixtures("fixed_time")
def test_save_then_load(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "c.jsonl"
    persister = Persister()
    save(persister, path, cassette_dict(*three()))
    assert siblings(path) == ["c.jsonl"]
    loaded = load(Persister(), path)
    assert len(loaded) == 2  # no metadata
    same_interactions(loaded, list(three()))
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "llmcassette"
    assert header["created_at"] == OLD_TIME
    assert header["recorded_by"] == serializer.RECORDED_BY
    assert json.loads(lines[-1]) == {"type": "end", "events": 0, "recorded_at": OLD_TIME}


def test_missing_cassette_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(CassetteNotFoundError):
        load(Persister(), tmp_path / "nope.jsonl")


@pytest.mark.parametrize("content", [b"", b"\n", b"  \n\n"])
def test_empty_file_is_recorded_again(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(content)
    with pytest.raises(CassetteNotFoundError):
        load(Persister(), path)
    save(Persister(), path, cassette_dict(three()[0]))
    same_interactions(load(Persister(), path), [three()[0]])


def test_metadata_round_trips_through_the_header(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    metadata = {"seed": 42, "models": ["a", "b"], "nested": {"x": None}}
    save(Persister(), path, cassette_dict(*three(), metadata=metadata))
    header = json.loads(path.read_text().splitlines()[0])
    assert header["metadata"] == metadata
    loaded = load(Persister(), path)
    assert len(loaded) == 3
    assert loaded[2] == metadata
    same_interactions(loaded, list(three()))


def test_created_at_survives_re_recording(tmp_path: Path, fixed_time: list[str]) -> None:
    path = tmp_path / "c.jsonl"
    save(Persister(), path, cassette_dict(three()[0]))
    fixed_time.append(NEW_TIME)
    save(Persister(), path, cassette_dict(three()[0], three()[2]))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["created_at"] == OLD_TIME
    assert [line["recorded_at"] for line in lines if line.get("type") == "end"] == [
        OLD_TIME,
        NEW_TIME,
    ]


def test_other_serializers_go_to_the_fallback(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    persister = Persister(FilesystemPersister)
    persister.save_cassette(path, cassette_dict(three()[0]), serializer=yamlserializer)
    assert path.read_text().startswith("interactions:")
    loaded = persister.load_cassette(path, serializer=yamlserializer)
    same_interactions(loaded, [three()[0]])


# ------------------------------------------------------------------ atomic writes


def test_new_file_mode_is_0644(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        atomic_write(tmp_path / "c.jsonl", b"x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "c.jsonl").stat().st_mode) == 0o644


@pytest.mark.usefixtures("fixed_time")
def test_existing_file_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    save(Persister(), path, cassette_dict(three()[0]))
    path.chmod(0o600)
    save(Persister(), path, cassette_dict(*three()))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    same_interactions(load(Persister(), path), list(three()))
    assert siblings(path) == ["c.jsonl"]


@pytest.mark.usefixtures("fixed_time")
def test_failing_serialization_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.jsonl"
    save(Persister(), path, cassette_dict(three()[0]))
    before = path.read_bytes()

    def boom(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("serialization failed")

    monkeypatch.setattr(cassette_file, "write", boom)
    with pytest.raises(RuntimeError, match="serialization failed"):
        save(Persister(), path, cassette_dict(*three()))
    assert path.read_bytes() == before
    assert siblings(path) == ["c.jsonl"]


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_failing_write_leaves_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"old\n")

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(path, b"new\n" * 1000)
    monkeypatch.undo()
    assert path.read_bytes() == b"old\n"
    assert siblings(path) == ["c.jsonl"]


def test_interrupt_during_write_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.jsonl"

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, b"new\n")
    monkeypatch.undo()
    assert siblings(path) == []


def test_atomic_write_replaces_content(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    atomic_write(path, b"one\n")
    inode = path.stat().st_ino
    atomic_write(path, b"two\n")
    assert path.read_bytes() == b"two\n"
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert siblings(path) == ["c.jsonl"]


@pytest.mark.parametrize("hard_links", [True, False], ids=["link", "no-hard-links"])
def test_atomic_write_without_replace_keeps_an_existing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hard_links: bool
) -> None:
    if not hard_links:  # a file system without them (FAT, some network shares)

        def no_link(*args: Any, **kwargs: Any) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_link)
    path = tmp_path / "c.jsonl"
    atomic_write(path, b"one\n", replace=False)
    with pytest.raises(FileExistsError):
        atomic_write(path, b"two\n", replace=False)
    assert path.read_bytes() == b"one\n"
    assert siblings(path) == ["c.jsonl"]


# ------------------------------------------------------------------ refusing to overwrite


@pytest.mark.parametrize(
    "content",
    [
        b'{"format": "llmcassette", "format_version": 1}\n{"type": "request"\n',
        b"interactions:\n- request: {}\n",
        b'{"format": "llmcassette", "format_version": 1}\n\xff\xfe\n',
        b'{"format": "llmcassette", "format_version": 99}\n',
    ],
)
def test_unreadable_cassette_is_never_overwritten(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(content)
    with pytest.raises(CassetteFormatError) as loading:
        load(Persister(), path)
    assert loading.value.path == os.fspath(path)
    assert loading.value.line is not None
    with pytest.raises(CassetteFormatError) as saving:
        save(Persister(), path, cassette_dict(*three()))
    assert "refusing to overwrite" in str(saving.value)
    assert os.fspath(path) in str(saving.value)
    assert saving.value.line == loading.value.line
    assert path.read_bytes() == content
    assert siblings(path) == ["c.jsonl"]


# Ways to break the first event line: a bad field type, and a JSON string holding a lone
# surrogate (valid JSON, but no UTF-8 bytes can be rendered from it without the ascii layout).
BROKEN_EVENTS = [{"data": 1, "layout": 5}, {"data": "\ud800"}, {"text": None}]


def _with_broken_event(path: Path, change: dict[str, Any]) -> bytes:
    """Save the three interactions, then break the first event line (file line 7)."""
    save(Persister(), path, cassette_dict(*three()))
    lines = path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"type":"event"' in line)
    assert index == 6
    record = {k: v for k, v in json.loads(lines[index]).items() if k not in ("data", "text")}
    lines[index] = json.dumps({**record, **change})
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


@pytest.mark.usefixtures("fixed_time")
@pytest.mark.parametrize("change", BROKEN_EVENTS)
def test_broken_event_line_is_reported_and_never_overwritten(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    path = tmp_path / "c.jsonl"
    data = _with_broken_event(path, change)
    with pytest.raises(CassetteFormatError) as saving:
        save(Persister(), path, cassette_dict(*three()))
    assert saving.value.line == 7
    assert "refusing to overwrite" in str(saving.value)
    assert path.read_bytes() == data
    # loading reports the same line, at the latest when the streamed body is needed
    with pytest.raises(CassetteFormatError) as loading:
        load_fully(Persister(), path)
    assert loading.value.line == 7
    assert path.read_bytes() == data


@pytest.mark.usefixtures("fixed_time")
@pytest.mark.parametrize("change", BROKEN_EVENTS)
def test_rewrite_replaces_a_cassette_with_a_broken_event_line(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    path = tmp_path / "c.jsonl"
    _with_broken_event(path, change)
    save(Persister(rewrite=True), path, cassette_dict(*three()))
    loaded = load(Persister(), path)
    same_interactions(loaded, list(three()))


@pytest.mark.usefixtures("fixed_time")
def test_rewrite_replaces_an_unreadable_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"garbage\n")
    persister = Persister(rewrite=True)
    with pytest.raises(CassetteNotFoundError):
        load(persister, path)
    save(persister, path, cassette_dict(*three()))
    same_interactions(load(Persister(), path), list(three()))


# ------------------------------------------------------------------ paths and legacy cassettes


@pytest.mark.parametrize(
    ("swap", "given", "resolved"),
    [
        (".yaml", "cassettes/test_a.yaml", "cassettes/test_a.jsonl"),
        (".yaml", "cassettes/x.yaml.yaml", "cassettes/x.yaml.jsonl"),
        (".yaml", "cassettes/test_a.jsonl", "cassettes/test_a.jsonl"),
        (".yaml", "cassettes/test_a.yml", "cassettes/test_a.yml"),
        (".yaml", "cassettes/test_a", "cassettes/test_a"),
        (None, "cassettes/test_a.yaml", "cassettes/test_a.yaml"),
    ],
)
def test_swap_suffix(swap: str | None, given: str, resolved: str) -> None:
    assert Persister(swap_suffix=swap).resolve(given) == Path(resolved)


def test_resolve_asks_the_file_system_again_for_a_vcrpy_name(tmp_path: Path) -> None:
    # A vcrpy cassette's name stands for the .jsonl beside it once ``llmcassette convert``
    # has written that and the YAML is gone, within one use of the cassette as well: no
    # answer of ``resolve`` may be kept past a change on disk or of the setting.
    persister = Persister()
    legacy, converted = tmp_path / "test_x.yaml", tmp_path / "test_x.jsonl"
    legacy.write_text("interactions: []\n")
    assert persister.resolve(legacy) == legacy
    converted.write_text("")
    assert persister.resolve(legacy) == legacy  # the YAML is still there: it is read
    legacy.unlink()
    assert persister.resolve(legacy) == converted
    assert persister.resolve(str(tmp_path / "test_y.jsonl")) == tmp_path / "test_y.jsonl"
    persister.swap_suffix = ".yaml"  # a changed setting is not answered from before
    assert persister.resolve(legacy) == converted
    persister.swap_suffix = None
    converted.unlink()
    assert persister.resolve(legacy) == legacy


@pytest.mark.parametrize(
    ("suffix", "legacy_serializer"), [(".yaml", yamlserializer), (".json", jsonserializer)]
)
def test_legacy_vcrpy_cassette_replays_then_jsonl_is_written(
    tmp_path: Path, suffix: str, legacy_serializer: Any
) -> None:
    legacy = tmp_path / f"test_x{suffix}"
    legacy.write_text(
        vcr.serialize.serialize(cassette_dict(three()[0], three()[2]), legacy_serializer)
    )
    legacy_bytes = legacy.read_bytes()
    target = tmp_path / "test_x.jsonl"

    loaded = load(Persister(), target)
    same_interactions(loaded, [three()[0], three()[2]])
    assert not target.exists()

    # recording one more interaction writes the .jsonl next to the legacy file
    requests = [*loaded[0], three()[1][0]]
    responses = [*loaded[1], three()[1][1]]
    save(Persister(), target, {"requests": requests, "responses": responses})
    assert legacy.read_bytes() == legacy_bytes
    same_interactions(load(Persister(), target), [three()[0], three()[2], three()[1]])
    assert siblings(target) == sorted(["test_x.jsonl", legacy.name])


def test_legacy_found_through_swap_suffix(tmp_path: Path) -> None:
    # pytest-recording asks for test_x.yaml; the persister reads test_x.jsonl, else test_x.yaml
    legacy = tmp_path / "test_x.yaml"
    legacy.write_text(vcr.serialize.serialize(cassette_dict(three()[0]), yamlserializer))
    persister = Persister(swap_suffix=".yaml")
    same_interactions(persister.load_cassette(legacy, serializer=serializer), [three()[0]])
    persister.save_cassette(legacy, cassette_dict(*three()), serializer=serializer)
    assert (tmp_path / "test_x.jsonl").is_file()
    assert legacy.read_text().startswith("interactions:")
    same_interactions(persister.load_cassette(legacy, serializer=serializer), list(three()))


def test_jsonl_wins_over_legacy(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        vcr.serialize.serialize(cassette_dict(three()[0]), yamlserializer)
    )
    save(Persister(), tmp_path / "c.jsonl", cassette_dict(three()[2]))
    same_interactions(load(Persister(), tmp_path / "c.jsonl"), [three()[2]])


@needs_vcrpy_metadata
def test_legacy_metadata_is_returned(tmp_path: Path) -> None:
    legacy = tmp_path / "c.yaml"
    legacy.write_text(
        vcr.serialize.serialize(cassette_dict(three()[0], metadata={"k": "v"}), yamlserializer)
    )
    loaded = load(Persister(), tmp_path / "c.jsonl")
    assert loaded[2] == {"k": "v"}


def test_broken_legacy_cassette_names_its_line(tmp_path: Path) -> None:
    legacy = tmp_path / "c.yaml"
    legacy.write_text("interactions:\n- request: {\n  bad: [\n")
    before = legacy.read_bytes()
    with pytest.raises(CassetteFormatError) as info:
        load(Persister(), tmp_path / "c.jsonl")
    assert info.value.path == os.fspath(legacy)
    assert isinstance(info.value.line, int)
    assert legacy.read_bytes() == before


def test_binary_legacy_body_replays(tmp_path: Path) -> None:
    binary = pair("bin", b"\x00\xff\xfe", content_type="application/octet-stream")
    legacy = tmp_path / "c.yaml"
    legacy.write_text(vcr.serialize.serialize(cassette_dict(binary), yamlserializer))
    same_interactions(load(Persister(), tmp_path / "c.jsonl"), [binary])


# ------------------------------------------------------------------ rewrite and minimal diffs


def test_rewrite_ignores_content_but_reuses_identical_lines(
    tmp_path: Path, fixed_time: list[str]
) -> None:
    path = tmp_path / "c.jsonl"
    save(Persister(), path, cassette_dict(*three()))
    before = path.read_bytes()
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))

    persister = Persister(rewrite=True)
    with pytest.raises(CassetteNotFoundError):
        load(persister, path)
    fixed_time.append(NEW_TIME)
    # everything recorded again (fresh vcrpy dicts, no llmcassette metadata) and unchanged
    save(persister, path, cassette_dict(*(pair_copy(p) for p in three())))
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == 1_000_000_000


def pair_copy(p: tuple[Request, dict[str, Any]]) -> tuple[Request, dict[str, Any]]:
    request, response = p
    return (
        Request(request.method, request.uri, request.body, dict(request.headers)),
        json.loads(json.dumps({k: v for k, v in response.items() if k != "body"}))
        | {"body": {"string": response["body"]["string"]}},
    )


def _interaction_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    for line in text.splitlines()[1:]:
        if json.loads(line)["type"] == "request":
            blocks.append([])
        blocks[-1].append(line)
    return blocks


@pytest.mark.parametrize("rewrite", [False, True])
def test_re_recording_one_changed_interaction_changes_only_its_lines(
    tmp_path: Path, fixed_time: list[str], rewrite: bool
) -> None:
    path = tmp_path / "c.jsonl"
    save(Persister(), path, cassette_dict(*three()))
    old_text = path.read_text()

    fixed_time.append(NEW_TIME)
    changed = pair("b", b'data: {"x":2}\n\ndata: [DONE]\n\n', content_type="text/event-stream")
    save(
        Persister(rewrite=rewrite),
        path,
        cassette_dict(pair_copy(three()[0]), changed, pair_copy(three()[2])),
    )
    new_text = path.read_text()

    old_lines, new_lines = old_text.splitlines(), new_text.splitlines()
    assert old_lines[0] == new_lines[0], "the header must not change"
    old_blocks, new_blocks = _interaction_blocks(old_text), _interaction_blocks(new_text)
    assert new_blocks[0] == old_blocks[0]
    assert new_blocks[2] == old_blocks[2]
    removed = set(old_lines) - set(new_lines)
    added = set(new_lines) - set(old_lines)
    # only the changed event and the end line (its recorded_at) differ
    assert removed == {old_blocks[1][2], old_blocks[1][4]}
    assert added == {new_blocks[1][2], new_blocks[1][4]}
    assert json.loads(new_blocks[1][4])["recorded_at"] == NEW_TIME
    assert json.loads(new_blocks[1][2]) == {"type": "event", "data": {"x": 2}}


@pytest.mark.usefixtures("fixed_time")
def test_reordering_and_duplicates_reuse_lines(tmp_path: Path, fixed_time: list[str]) -> None:
    path = tmp_path / "c.jsonl"
    save(Persister(), path, cassette_dict(three()[0], three()[0], three()[2]))
    old_lines = set(path.read_text().splitlines())
    fixed_time.append(NEW_TIME)
    save(
        Persister(),
        path,
        cassette_dict(pair_copy(three()[2]), pair_copy(three()[0]), pair_copy(three()[0])),
    )
    assert set(path.read_text().splitlines()) == old_lines
    assert NEW_TIME not in path.read_text()


def test_saving_an_unchanged_cassette_does_not_touch_the_file(
    tmp_path: Path, fixed_time: list[str]
) -> None:
    path = tmp_path / "c.jsonl"
    save(Persister(), path, cassette_dict(*three(), metadata={"a": 1}))
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    inode = path.stat().st_ino
    fixed_time.append(NEW_TIME)

    persister = Persister()
    loaded = load(persister, path)
    save(persister, path, {"requests": loaded[0], "responses": loaded[1], "metadata": loaded[2]})
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert path.stat().st_ino == inode
    assert siblings(path) == ["c.jsonl"]


def test_timing_survives_load_and_save(tmp_path: Path, fixed_time: list[str]) -> None:
    path = tmp_path / "c.jsonl"
    text = (
        json.dumps(cassette_file.new_header("llmcassette 0.0.9", OLD_TIME))
        + "\n"
        + "\n".join(
            # Event data as llmcassette writes it: compact, as streamed.
            json.dumps(record).replace('{"a": 1}', '{"a":1}')
            for record in [
                {
                    "type": "request",
                    "method": "GET",
                    "uri": "http://h/",
                    "headers": {},
                    "body": None,
                },
                {
                    "type": "response",
                    "status": 200,
                    "reason": "OK",
                    "headers": {"content-type": "text/event-stream"},
                    "body": {"stream": "sse"},
                    "t_headers": 0.01,
                },
                {"type": "event", "t": 0.5, "data": {"a": 1}},
                {"type": "event", "t": 0.75, "text": "[DONE]"},
                {"type": "end", "events": 2, "recorded_at": OLD_TIME, "note": "kept"},
            ]
        )
        + "\n"
    )
    path.write_text(text)
    fixed_time.append(NEW_TIME)
    loaded = load(Persister(), path)
    assert loaded[1][0]["body"]["string"] == b'data: {"a":1}\n\ndata: [DONE]\n\n'
    meta = loaded[1][0]["llmcassette"]
    assert vcr_bridge.event_times_of(meta) == [0.5, 0.75]
    assert meta["response_extra"] == {"t_headers": 0.01}
    assert meta["end_extra"] == {"recorded_at": OLD_TIME, "note": "kept"}
    # saving (e.g. after appending a new episode) keeps every line of the old interaction
    save(
        Persister(),
        path,
        {"requests": [*loaded[0], three()[0][0]], "responses": [*loaded[1], three()[0][1]]},
    )
    new_lines = path.read_text().splitlines()
    assert [json.loads(line) for line in new_lines[1:6]] == [
        json.loads(line) for line in text.splitlines()[1:6]
    ]


# ------------------------------------------------------------------ extra cassettes


def test_extra_paths_are_appended(tmp_path: Path) -> None:
    extra = tmp_path / "shared.jsonl"
    save(Persister(), extra, cassette_dict(three()[2]))

    class Fallback(FilesystemPersister):
        extra_paths = (os.fspath(extra),)

    main = tmp_path / "main.jsonl"
    save(Persister(), main, cassette_dict(three()[0]))
    same_interactions(load(Persister(Fallback), main), [three()[0], three()[2]])
    # only extras, no main cassette yet: still found
    main.unlink()
    same_interactions(load(Persister(Fallback), main), [three()[2]])


@pytest.mark.parametrize(
    ("uri", "body"),
    [
        ("https://api.example.com:8443/v1/chat?b=2&a=1", b'{"model": "m"}'),
        ("http://127.0.0.1/v1/models", None),
        ("https://user:pw@host/p;x?q=%20#frag", b""),
    ],
)
def test_incoming_requests_are_vcrpy_requests(uri: str, body: bytes | None) -> None:
    # Every property a matcher, a hook or a report reads is what vcrpy's own Request gives,
    # a repeated header keeps its first spelling and its last value, as HeadersDict does.
    pairs = [("Content-Type", "application/json"), ("X-Trace", "1"), ("x-trace", "2")]
    built = vcr_bridge.incoming_request("POST", uri, body, pairs)
    vcrpy = Request("POST", uri, body, {"Content-Type": "application/json", "X-Trace": "2"})
    assert isinstance(built, Request)
    for name in ("method", "uri", "url", "body", "body_bytes", "scheme", "host", "port", "path"):
        assert getattr(built, name) == getattr(vcrpy, name), name
    assert built.query == vcrpy.query
    assert dict(built.headers) == {"Content-Type": "application/json", "X-Trace": "2"}
    assert dict(built.headers) == dict(vcrpy.headers)
    assert str(built) == str(vcrpy)
    built.uri = "http://elsewhere/x"  # vcrpy's setter parses again
    assert (built.host, built.path) == ("elsewhere", "/x")
    assert getattr(built, "redacted_by", None) is None  # not redacted yet
    # vcrpy deep-copies each request before its hooks: the redactor marker stays the same
    # object (a copied redactor would make the request look unredacted), headers are new.
    marker = object()
    built.redacted_by = marker
    duplicate = copy.deepcopy(built)
    assert duplicate.redacted_by is marker
    duplicate.headers["X-Trace"] = "3"
    assert built.headers["X-Trace"] == "2"
    assert str(duplicate) == str(built)
    with pytest.raises(AttributeError, match="no_such_thing"):
        built.no_such_thing  # noqa: B018


def _alias_bomb(levels: int) -> str:
    """A vcrpy YAML cassette whose request body is 10**levels strings by nested aliases."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, levels)]
    return "\n".join(lines) + (
        f"\ninteractions:\n- request: {{method: POST, uri: 'http://x/', body: *a{levels - 1},"
        " headers: {}}\n  response: {status: {code: 200, message: OK}, headers: {},"
        " body: {string: hi}}\nversion: 1\n"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (_alias_bomb(8), r"its YAML aliases stand for \d+ more values than the file holds"),
        ("interactions: &a\n- *a\nversion: 1\n", "a YAML alias refers to a value that holds it"),
    ],
    ids=["billion-laughs", "alias-loop"],
)
def test_a_legacy_cassette_of_aliases_without_end_is_refused(
    text: str, problem: str, tmp_path: Path
) -> None:
    """Nested aliases cost PyYAML nothing to load, and whatever walks the data for ever."""
    (tmp_path / "test_x.yaml").write_text(text)  # replayed for the missing test_x.jsonl
    with pytest.raises(CassetteFormatError, match=problem):
        load(Persister(), tmp_path / "test_x.jsonl")


def test_a_legacy_cassette_with_the_aliases_pyyaml_writes_replays(tmp_path: Path) -> None:
    """PyYAML writes an alias for an object held twice: that is no bomb."""
    text = (
        _alias_bomb(2)
        .replace("body: *a1", "body: '{}'")
        .replace("headers: {}}", "headers: &h {accept: [x]}}", 1)
    )
    (tmp_path / "test_x.yaml").write_text(text.replace("headers: {},", "headers: *h,"))
    requests, responses, *_ = load(Persister(), tmp_path / "test_x.jsonl")
    assert requests[0].headers == {"accept": "x"}
    assert len(responses) == 1


@pytest.mark.usefixtures("fixed_time")
@pytest.mark.parametrize("cut", ["empty", "no end line"])
def test_a_jsonl_a_cut_short_convert_left_beside_its_vcrpy_original_is_refused(
    tmp_path: Path, cut: str
) -> None:
    # A power cut before `llmcassette convert` flushed its files may leave x.jsonl empty or
    # cut off beside x.yaml. Neither recorded again in its place (an empty cassette is, on
    # its own) nor said to need recording: the message says to convert again.
    legacy = tmp_path / "test_x.yaml"
    legacy.write_text(vcr.serialize.serialize(cassette_dict(three()[0]), yamlserializer))
    target = tmp_path / "test_x.jsonl"
    save(Persister(), target, cassette_dict(*three()))
    whole = target.read_bytes()
    target.write_bytes(b"" if cut == "empty" else b"".join(whole.splitlines(True)[:3]))

    with pytest.raises(CassetteFormatError) as info:
        load(Persister(), target)
    assert f"llmcassette convert --force {legacy}" in str(info.value.hint)
    assert "or delete test_x.jsonl to replay test_x.yaml" in str(info.value.hint)
    assert info.value.path == os.fspath(target)


def test_an_empty_jsonl_on_its_own_is_still_recorded_again(tmp_path: Path) -> None:
    target = tmp_path / "test_x.jsonl"
    target.write_bytes(b"")
    with pytest.raises(CassetteNotFoundError):
        load(Persister(), target)


def test_a_save_flushes_the_new_file_before_it_takes_the_cassettes_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # convert flushes its files at the end; a recording's save stays flushed before the
    # rename, so that the name never points at a file whose data a power cut lost.
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        calls.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write(tmp_path / "c.jsonl", b"new\n")
    assert calls == ["fsync", "replace"]
