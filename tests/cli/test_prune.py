"""`llmcassette prune`: a dry run lists and deletes nothing; --yes deletes exactly what it listed."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from _cli_support import Record, cli, read_records, write_records

TESTS = """
def test_kept():
    pass


class TestGroup:
    def test_in_class(self):
        pass
"""


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _project(root: Path, record: Record) -> dict[str, Path]:
    """A project whose cassettes/ holds used cassettes, orphans and their sidecars."""
    (root / "test_models.py").write_text(TESTS)
    folder = root / "cassettes" / "test_models"
    folder.mkdir(parents=True)
    kept = record(folder / "test_kept.jsonl", ("Hi",))
    # record() names the file after its stem: a dotted name is made by renaming.
    in_class = record(folder / "in_class.jsonl", ("Hi",)).rename(
        folder / "TestGroup.test_in_class.jsonl"
    )
    renamed = record(folder / "test_renamed.jsonl", ("Hi",))  # no such test function
    gone_folder = root / "cassettes" / "test_gone"  # no such test module
    gone_folder.mkdir()
    gone = record(gone_folder / "test_a.jsonl", ("Hi",))
    # Sidecars: an overrides file and a heal log beside an orphan, an overrides file beside
    # a used cassette, and one whose cassette is gone.
    overrides = {"mode": "patch", "entries": [{"at": 0, "status": 429}]}
    (folder / "test_renamed.overrides.json").write_text(json.dumps(overrides))
    (folder / "test_renamed.heal.log").write_text("{}\n")
    (folder / "test_kept.overrides.json").write_text(json.dumps(overrides))
    (folder / "test_deleted.overrides.json").write_text(json.dumps(overrides))
    return {"kept": kept, "in_class": in_class, "renamed": renamed, "gone": gone}


def test_a_dry_run_deletes_nothing_and_yes_deletes_exactly_the_listed_files(
    tmp_path: Path, record: Record
) -> None:
    _project(tmp_path, record)
    before = _tree(tmp_path)

    dry = cli("prune", "--json", tmp_path / "cassettes", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)
    assert listed["dry_run"] is True
    would = {
        Path(item["file"]).relative_to(tmp_path).as_posix(): item for item in listed["results"]
    }
    assert set(would) == {
        "cassettes/test_models/test_renamed.jsonl",
        "cassettes/test_models/test_renamed.overrides.json",
        "cassettes/test_models/test_renamed.heal.log",
        "cassettes/test_models/test_deleted.overrides.json",
        "cassettes/test_gone/test_a.jsonl",
    }
    assert would["cassettes/test_models/test_renamed.jsonl"]["reason"] == "orphan"
    assert (
        "has no test function test_renamed"
        in (would["cassettes/test_models/test_renamed.jsonl"]["message"])
    )
    assert would["cassettes/test_models/test_renamed.heal.log"]["reason"] == "sidecar"
    assert not any(item["deleted"] for item in would.values())
    assert _tree(tmp_path) == before  # nothing deleted

    text = cli("prune", tmp_path / "cassettes", cwd=tmp_path)
    assert text.returncode == 0
    assert text.stdout.count("would delete ") == 5
    assert "nothing was deleted, run again with --yes" in text.stderr
    assert _tree(tmp_path) == before

    done = cli("prune", "--yes", "--json", tmp_path / "cassettes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    deleted = {
        Path(i["file"]).relative_to(tmp_path).as_posix() for i in json.loads(done.stdout)["results"]
    }
    assert deleted == set(would)
    assert _tree(tmp_path) == before - set(would)
    # What is left is what check --orphans finds nothing wrong with.
    assert cli("check", "--orphans", "--no-secrets", tmp_path / "cassettes").returncode == 0
    assert json.loads(cli("prune", "--json", tmp_path / "cassettes").stdout)["results"] == []


def test_expired_cassettes_go_only_with_expired(tmp_path: Path, record: Record) -> None:
    paths = _project(tmp_path, record)
    records = read_records(paths["kept"])
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=40)
    records[0]["created_at"] = old.isoformat().replace("+00:00", "Z")
    write_records(paths["kept"], records)

    plain = json.loads(cli("prune", "--json", tmp_path / "cassettes").stdout)["results"]
    assert os.fspath(paths["kept"]) not in {item["file"] for item in plain}

    result = cli("prune", "--json", "--expired", "--max-age", "30d", tmp_path / "cassettes")
    assert result.returncode == 0, result.stderr
    by_file = {item["file"]: item for item in json.loads(result.stdout)["results"]}
    kept = by_file[os.fspath(paths["kept"])]
    assert kept["reason"] == "expired"
    assert "ago; max_age is" in kept["message"]
    sidecar = by_file[os.fspath(paths["kept"].with_name("test_kept.overrides.json"))]
    assert (sidecar["reason"], sidecar["cassette"]) == ("sidecar", os.fspath(paths["kept"]))
    assert os.fspath(paths["in_class"]) not in by_file

    no_age = cli("prune", "--expired", tmp_path / "cassettes", cwd=tmp_path)
    assert no_age.returncode == 2
    assert "--expired needs a max_age" in no_age.stderr


def test_a_file_that_cannot_be_read_is_kept_and_reported(tmp_path: Path, record: Record) -> None:
    paths = _project(tmp_path, record)
    broken = paths["gone"].with_name("test_b.jsonl")
    broken.write_text('{"format": "llmcassette"\n')
    result = cli("prune", "--yes", tmp_path / "cassettes")
    assert result.returncode == 2
    assert f"{broken}:1:" in result.stderr
    assert "not pruned" in result.stderr
    assert broken.is_file()
    assert not paths["gone"].exists()
    assert not paths["renamed"].exists()
    assert paths["kept"].is_file()
