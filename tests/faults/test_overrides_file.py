"""The overrides sidecar: validated when it loads, errors name the file, the entry and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcassette import faults
from llmcassette.errors import OverridesError
from llmcassette.faults import Overrides, sidecar


def parse(data: Any) -> Overrides:
    return Overrides.parse(data, "x.overrides.json")


def test_sidecar_lives_next_to_the_cassette() -> None:
    path = sidecar.path_for("tests/cassettes/test_mod/test_retry.jsonl")
    assert path == Path("tests/cassettes/test_mod/test_retry.overrides.json")


@pytest.mark.parametrize(
    ("data", "where", "problem"),
    [
        ([], "x.overrides.json", "expected a JSON object"),
        ({"entries": [], "colour": 1}, "x.overrides.json: colour", "unknown key"),
        ({"mode": "merge", "entries": []}, "x.overrides.json: mode", "'patch' or 'replace'"),
        ({"entries": {}}, "x.overrides.json: entries", "must be a list"),
        ({"entries": [{"status": 429}]}, "entries[0].at", "0-based interaction index"),
        ({"entries": [{"at": -1}]}, "entries[0].at", "0-based interaction index"),
        ({"entries": [{"at": 0, "status": "429"}]}, "entries[0].status", "HTTP status"),
        ({"entries": [{"at": 0, "status": 99}]}, "entries[0].status", "HTTP status"),
        ({"entries": [{"at": 0, "fail": "boom"}]}, "entries[0].fail", "unknown failure 'boom'"),
        ({"entries": [{"at": 0, "cut_after": 2, "cut": "x"}]}, "entries[0].cut", "one of"),
        ({"entries": [{"at": 0, "cut": "end"}]}, "entries[0].cut", "add cut_after"),
        ({"entries": [{"at": 0, "cut_after": 1.5}]}, "entries[0].cut_after", "whole number"),
        ({"entries": [{"at": 0, "delay": -1}]}, "entries[0].delay", "seconds >= 0"),
        ({"entries": [{"at": 0, "marker": "m"}]}, "entries[0].marker", "add hang_after"),
        ({"entries": [{"at": 0, "headers": {"a": "b"}}]}, "entries[0].headers", "status"),
        (
            {"entries": [{"at": 0, "status": 429, "cut_after": 1}]},
            "entries[0].status",
            "not streamed",
        ),
        (
            {"entries": [{"at": 0, "cut_after": 1, "hang_after": 1}]},
            "entries[0].hang_after",
            "not both",
        ),
        ({"entries": [{"at": 0, "colour": 1}]}, "entries[0].colour", "unknown key"),
        ({"entries": [{"at": 0}, {"at": 0}]}, "entries[1].at", "already patched by entries[0]"),
        ({"mode": "replace", "entries": [{"at": 3, "status": 500}]}, "entries[0].at", "position 0"),
        ({"entries": [{"at": 0, "match": {"host": "x"}}]}, "entries[0].match", "method"),
    ],
)
def test_invalid_entries_are_named_with_their_field(data: Any, where: str, problem: str) -> None:
    with pytest.raises(OverridesError) as raised:
        parse(data)
    assert where in str(raised.value)
    assert problem in str(raised.value)
    assert str(raised.value).startswith("x.overrides.json")


def test_structured_fields() -> None:
    with pytest.raises(OverridesError) as raised:
        parse({"entries": [{"at": 0}, {"at": 1, "status": 7}]})
    assert (raised.value.source, raised.value.entry, raised.value.field) == (
        "x.overrides.json",
        1,
        "status",
    )


def test_patch_keeps_recorded_order_and_appends() -> None:
    resolved = parse(
        {
            "entries": [
                {"at": 0, "status": 429, "headers": {"retry-after": "0"}},
                {"at": 2, "recorded": 0},
            ]
        }
    ).resolve(2)
    assert [(entry.index, entry.recorded) for entry in resolved] == [(0, 0), (1, 1), (2, 0)]
    assert resolved[0].fault is not None
    assert resolved[0].fault.status == 429
    assert resolved[1].fault is None
    assert resolved[2].fault is None


def test_appending_must_not_leave_a_gap() -> None:
    overrides = parse({"entries": [{"at": 3, "recorded": 0}]})
    with pytest.raises(
        OverridesError, match=r"entries\[0\]\.at: index 3 leaves a gap.*next appended entry is at 2"
    ):
        overrides.resolve(2)


def test_recorded_index_must_exist() -> None:
    with pytest.raises(
        OverridesError, match=r"entries\[0\]\.recorded: the cassette has 1 interaction"
    ):
        parse({"entries": [{"at": 1, "recorded": 4}]}).resolve(1)


def test_an_appended_entry_needs_something_to_answer_with() -> None:
    with pytest.raises(OverridesError, match=r"entries\[0\]: an appended entry needs 'recorded'"):
        parse({"entries": [{"at": 1, "cut_after": 2}]}).resolve(1)


def test_replace_mode_lists_the_interactions_anew() -> None:
    resolved = parse(
        {
            "mode": "replace",
            "entries": [
                {"fail": "connect_error", "match": {"method": "POST"}},
                {"recorded": 1},
            ],
        }
    ).resolve(2)
    assert [(entry.recorded, entry.match) for entry in resolved] == [
        (None, (("method", "POST"),)),
        (1, ()),
    ]


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.overrides.json"
    path.write_text('{\n  "entries": [\n    {"at": 0,}\n  ]\n}\n')
    with pytest.raises(OverridesError) as raised:
        sidecar.load(path)
    assert f"{path}:3" in str(raised.value)
    assert "not valid JSON" in str(raised.value)


def test_sidecar_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "c.overrides.json"
    path.write_text(json.dumps({"entries": [{"at": 0, "status": 429}]}))
    first = sidecar.load(path)
    path.write_text(json.dumps({"entries": [{"at": 0, "status": 503}, {"at": 1, "recorded": 0}]}))
    second = sidecar.load(path)
    assert first is not None
    assert second is not None
    assert [entry.fault and entry.fault.status for entry in second.resolve(1)] == [503, None]


def test_marker_paths_are_relative_to_the_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "c.overrides.json"
    path.write_text(json.dumps({"entries": [{"at": 0, "hang_after": 1, "marker": "hung.flag"}]}))
    overrides = sidecar.load(path)
    assert overrides is not None
    fault = overrides.resolve(1)[0].fault
    assert fault is not None
    assert fault.marker == str(tmp_path / "hung.flag")


def test_python_constructors_validate_too() -> None:
    with pytest.raises(OverridesError, match=r"(?s)fail: unknown failure 'dns'.*connect_error"):
        faults.transport_error("dns")
    with pytest.raises(OverridesError, match="cut_after: must be a whole number"):
        faults.cut_stream(-1)
    assert faults.http_error(429, retry_after=0).headers == (("retry-after", "0"),)
    assert faults.http_error(503, retry_after=1.5).headers == (("retry-after", "1.5"),)
    assert faults.cut_stream(3, then="end").describe() == "cut_stream(after=3, then='end')"


def test_appended_entries_follow_their_index_not_their_order() -> None:
    resolved = parse({"entries": [{"at": 2, "status": 500}, {"at": 1, "status": 429}]}).resolve(1)
    assert [entry.fault and entry.fault.status for entry in resolved] == [None, 429, 500]


def test_replace_entries_need_an_answer_and_existing_indexes() -> None:
    with pytest.raises(OverridesError, match=r"entries\[1\]: a scripted entry needs 'recorded'"):
        parse({"mode": "replace", "entries": [{"recorded": 0}, {"cut_after": 1}]}).resolve(1)
    with pytest.raises(OverridesError, match=r"entries\[0\]\.recorded: the cassette has 1"):
        parse({"mode": "replace", "entries": [{"recorded": 3}]}).resolve(1)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"entries": ' + "[" * 20_000 + "]" * 20_000 + "}", "nest too deeply"),
        ('{"entries": [{"at": 0, "status": ' + "1" * 5000 + "}]}", "digits"),
        ('{"entries": [{"at": 0, "delay": ' + "1" * 400 + "}]}", "must be finite"),
        ('{"mode": "\xff"}', "not UTF-8"),
    ],
)
def test_unreadable_sidecars_raise_overrides_error(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "t.overrides.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(OverridesError, match=problem):
        sidecar.load(path)


@pytest.mark.parametrize("marker", ["../outside.flag", "sub/../../outside.flag", "/tmp/x.flag"])
def test_a_sidecar_marker_stays_in_the_sidecars_folder(tmp_path: Path, marker: str) -> None:
    """A hang creates its marker file: a sidecar from a pull request names no file elsewhere."""
    folder = tmp_path / "cassettes"
    folder.mkdir()
    path = folder / "c.overrides.json"
    path.write_text(json.dumps({"entries": [{"at": 0, "hang_after": 1, "marker": marker}]}))
    with pytest.raises(OverridesError, match=r"marker: must be a file in the sidecar's folder"):
        sidecar.load(path)


def test_a_marker_below_the_sidecar_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "c.overrides.json"
    path.write_text(json.dumps({"entries": [{"at": 0, "hang_after": 1, "marker": "a/b.flag"}]}))
    overrides = sidecar.load(path)
    assert overrides is not None
    fault = overrides.resolve(1)[0].fault
    assert fault is not None
    assert fault.marker == str(tmp_path / "a/b.flag")


def test_a_sidecar_that_is_a_folder_is_an_overrides_error(tmp_path: Path) -> None:
    path = tmp_path / "c.overrides.json"
    path.mkdir()
    with pytest.raises(OverridesError, match="cannot be read: Is a directory"):
        sidecar.load(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{\n  "entries": [\n    {"at": 0,}\n  ]\n}\n', "cassettes/c.overrides.json:3: "),
        ('{"entries": ' + "[" * 20_000 + "]" * 20_000 + "}", "cassettes/c.overrides.json: "),
        ('{"mode": "\xff"}', "cassettes/c.overrides.json: "),
        ('{"entries": [{"at": 0, "status": 42}]}', "cassettes/c.overrides.json: entries[0]"),
        (
            '{"entries": [{"at": 3, "status": 429}]}',
            "cassettes/c.overrides.json: entries[0].at: index 3 leaves a gap",
        ),
    ],
)
def test_a_sidecar_error_shows_its_path_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, problem: str
) -> None:
    """pytest opens cassettes by absolute path: the message names the sidecar as pytest
    names files, never by a path of the reader's machine."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cassettes").mkdir()
    path = tmp_path / "cassettes" / "c.overrides.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(OverridesError) as raised:
        _load_and_resolve(path, 1)
    message = str(raised.value)
    assert message.startswith(problem)
    assert str(tmp_path) not in message


def _load_and_resolve(path: Path, recorded: int) -> None:
    overrides = sidecar.load(path)
    assert overrides is not None
    overrides.resolve(recorded)
