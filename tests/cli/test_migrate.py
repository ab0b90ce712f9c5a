"""`llmcassette migrate`: older cassettes rewritten as the current version, nothing else touched.

Format version 1 is the first, so an older version is invented here the way
tests/format/test_format_migrations.py does: a version 0 that said "kind" instead of
"type", "status_code" instead of "status" and "done" for the end line, with its step
registered in ``migrations.MIGRATIONS`` for the test.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _cli_support import Record, cli, read_records, write_records

from llmcassette import FORMAT_VERSION
from llmcassette.cassette import migrations
from llmcassette.cassette.migrations import Line
from llmcassette.cli.main import main


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


def as_v0(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of a current cassette as the invented version 0 wrote them."""
    header, *rest = records
    old = [{**header, "format_version": 0}]
    for record in rest:
        record = dict(record)
        kind = record.pop("type")
        record = {"kind": "done" if kind == "end" else kind, **record}
        if "status" in record:
            record["status_code"] = record.pop("status")
        old.append(record)
    return old


@pytest.fixture
def with_v0_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # An invented version 0 before the real ones: migrating it runs every step after it too.
    monkeypatch.setitem(migrations.MIGRATIONS, 0, v0_to_v1)


@pytest.mark.usefixtures("with_v0_step")
def test_an_old_cassette_is_rewritten_as_it_would_be_recorded_today(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = record(tmp_path / "today.jsonl", tool_prompt="Paris")
    old = tmp_path / "old.jsonl"
    write_records(old, as_v0(read_records(recorded)))
    before = old.read_bytes()

    assert main(["migrate", "--check", str(tmp_path)]) == 1
    assert (
        f"{old}: would migrate from format_version 0 to {FORMAT_VERSION}" in capsys.readouterr().out
    )
    assert old.read_bytes() == before

    assert main(["migrate", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert f"{old}: migrated from format_version 0 to {FORMAT_VERSION}" in captured.out
    assert "today.jsonl" not in captured.out
    assert "1 of 2 cassette(s) migrated" in captured.err
    # Every line as the current version writes it: timing, redaction and events included.
    assert old.read_text() == recorded.read_text()
    assert main(["migrate", "--check", str(tmp_path)]) == 0


def test_current_cassettes_are_left_byte_for_byte(tmp_path: Path, record: Record) -> None:
    cassette = record(tmp_path / "c.jsonl")
    with cassette.open("a") as handle:
        handle.write("\n")  # a blank line a hand edit left: allowed, and kept
    before = cassette.read_bytes()
    mtime = cassette.stat().st_mtime_ns
    os.utime(cassette, ns=(mtime - 10**9, mtime - 10**9))
    result = cli("migrate", tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert "0 of 1 cassette(s) migrated" in result.stderr
    assert cassette.read_bytes() == before
    assert cassette.stat().st_mtime_ns == mtime - 10**9  # not even rewritten
    assert cli("migrate", "--check", tmp_path).returncode == 0


def test_refuses_newer_and_unreadable_files_and_writes_nothing(
    tmp_path: Path, record: Record
) -> None:
    cassette = record(tmp_path / "c.jsonl")
    records = read_records(cassette)
    records[0]["format_version"] = FORMAT_VERSION + 1
    newer = tmp_path / "newer.jsonl"
    write_records(newer, records)
    result = cli("migrate", newer)
    assert result.returncode == 2
    assert f"cassette format_version {FORMAT_VERSION + 1} is newer than this llmcassette" in (
        result.stderr
    )
    assert "how to fix: upgrade: pip install" in result.stderr
    assert "the file was not changed" in result.stderr

    # A version 0 file without a registered step (the real registry has none).
    old = tmp_path / "old.jsonl"
    write_records(old, as_v0(read_records(cassette)))
    before = old.read_bytes()
    result = cli("migrate", old)
    assert result.returncode == 2
    assert f"{old}:1: no migration from format_version 0 is known" in result.stderr
    assert old.read_bytes() == before

    missing = cli("migrate", tmp_path / "missing.jsonl")
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr


@pytest.mark.usefixtures("with_v0_step")
def test_a_damaged_old_cassette_is_not_overwritten(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = record(tmp_path / "c.jsonl")
    records = as_v0(read_records(cassette))
    del records[-1]  # the last end line is missing: truncated
    old = tmp_path / "old.jsonl"
    write_records(old, records)
    before = old.read_bytes()
    assert main(["migrate", str(old)]) == 2
    assert "truncated" in capsys.readouterr().err
    assert old.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "old.jsonl"]  # no temp file
