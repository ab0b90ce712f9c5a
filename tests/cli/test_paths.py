"""Every command opens paths the same way (``llmcassette.cli.paths``): bad input is one line
``PATH: problem`` and exit code 2 (``check``: its documented 1 for a file that is no
readable cassette), never a traceback, and a folder goes on past a bad file."""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from _cli_support import cli

from llmcassette.cassette import FORMAT_VERSION
from llmcassette.cli import migrate, paths
from llmcassette.cli.main import main
from llmcassette.errors import FIELDS, docs_anchor

COMMANDS = ("check", "scan", "redact", "migrate", "show", "diff", "convert")


def _good_jsonl(path: Path) -> Path:
    header = {
        "format": "llmcassette",
        "format_version": FORMAT_VERSION,
        "recorded_by": "t",
        "created_at": "x",
    }
    lines = [
        header,
        {"type": "request", "method": "GET", "uri": "http://h/", "headers": {}, "body": None},
        {"type": "response", "status": 200, "reason": "OK", "headers": {}, "body": {"text": "ok"}},
        {"type": "end", "events": 0},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _good_yaml(path: Path) -> Path:
    interaction = {
        "request": {"method": "GET", "uri": "http://h/", "body": None, "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {},
            "body": {"string": "ok"},
        },
    }
    path.write_text(yaml.safe_dump({"version": 1, "interactions": [interaction]}))
    return path


MALFORMED_YAML = "interactions:\n  - request: [unclosed\n"

# name -> writes the bad input under tmp_path, returns (path given, path the problem names)
Maker = Callable[[Path], tuple[Path, Path]]


def _file(name: str, data: bytes) -> Maker:
    def make(tmp: Path) -> tuple[Path, Path]:
        path = tmp / name
        path.write_bytes(data)
        return path, path

    return make


def _unreadable_file(tmp: Path) -> tuple[Path, Path]:
    path = _good_jsonl(tmp / "locked.jsonl")
    return path, path


def _unreadable_dir(tmp: Path) -> tuple[Path, Path]:
    folder = tmp / "locked"
    folder.mkdir()
    _good_jsonl(folder / "inside.jsonl")
    return folder, folder


def _mixed_dir(tmp: Path) -> tuple[Path, Path]:
    folder = tmp / "mixed"
    folder.mkdir()
    (folder / "a.yaml").write_text(MALFORMED_YAML)  # sorted first: the good ones come after
    _good_jsonl(folder / "b.jsonl")
    _good_yaml(folder / "c.yaml")
    return folder, folder / "a.yaml"


BAD: dict[str, Maker] = {
    "binary": _file("garbage.jsonl", bytes(range(256)) * 4),
    "empty": _file("empty.jsonl", b""),
    "truncated-jsonl": _file(
        "cut.jsonl",
        b'{"format": "llmcassette", "format_version": 1, "recorded_by": "t", "created_at": "x"}\n'
        b'{"type": "request", "method": "GET", "uri": "http://h/", "hea',
    ),
    "non-cassette-jsonl": _file("data.jsonl", b'{"id": 1}\n{"id": 2}\n'),
    "malformed-yaml": _file("broken.yaml", MALFORMED_YAML.encode()),
    "yaml-without-interactions": _file("config.yaml", b"foo: bar\n"),
    "unreadable-file": _unreadable_file,
    "unreadable-dir": _unreadable_dir,
    "mixed-dir": _mixed_dir,
}


def _expected_code(command: str, case: str) -> int:
    if command == "check" and case not in ("unreadable-file", "unreadable-dir"):
        return 1  # documented: `format` problems are findings; unreadable paths exit 2
    if command == "diff" and case == "empty":
        return 1  # documented: an empty file is a cassette without interactions (git's /dev/null)
    return 2


def _argv(command: str, given: Path, tmp: Path) -> list[str]:
    if command == "diff":
        return ["diff", str(given), str(_good_jsonl(tmp / "other-good.jsonl"))]
    return [command, str(given)]


def _processed_good_file(command: str, folder: Path, out: str) -> None:
    """The good files after the bad one in the mixed folder were still handled."""
    if command == "check":
        assert "in 3 file(s)" in out
    elif command == "scan":
        assert "no secrets found in 2 file(s)" in out
    elif command == "redact":
        assert f"{folder / 'b.jsonl'}: " in out
        assert f"{folder / 'c.yaml'}: " in out
    elif command == "migrate":
        assert "0 of 1 cassette(s) migrated" in out
    elif command == "convert":
        assert f"{folder / 'c.yaml'} -> {folder / 'c.jsonl'}" in out
        assert (folder / "c.jsonl").is_file()


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> set[Path]:
    """Paths that ``cli.paths`` cannot open, as if chmod 000 (root ignores modes)."""
    locked: set[Path] = set()
    read_bytes, list_dir = paths._read_bytes, paths._list_dir

    def denied(path: Path) -> OSError:
        return PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    def fake_read(path: Path) -> bytes:
        if Path(path) in locked:
            raise denied(path)
        return read_bytes(path)

    def fake_list(path: Path) -> list[os.DirEntry[str]]:
        if Path(path) in locked:
            raise denied(path)
        return list_dir(path)

    monkeypatch.setattr(paths, "_read_bytes", fake_read)
    monkeypatch.setattr(paths, "_list_dir", fake_list)
    return locked


def json_document(stdout: str, exit_code: int) -> dict[str, Any]:
    """The one JSON document a ``--json`` run prints, checked against docs/cli.md: its keys,
    its exit code, and every finding and error with a code and the documented fields."""
    document: dict[str, Any] = json.loads(stdout)
    assert set(document) >= {"command", "exit_code", "findings", "errors", "results"}
    assert document["exit_code"] == exit_code
    assert exit_code == (2 if document["errors"] else 1 if document["findings"] else 0)
    for item in document["findings"] + document["errors"]:
        assert re.fullmatch(r"LC\d{3} [a-z-]+", item["code"]), item
        assert set(item) >= {"code", "message", "docs", *FIELDS}, item
        assert item["docs"] == docs_anchor(item["code"])
        assert item["message"]
    return document


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("command", COMMANDS)
def test_bad_input_is_one_line_and_exit_code(
    command: str,
    case: str,
    as_json: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unreadable: set[Path],
) -> None:
    given, bad = BAD[case](tmp_path)
    if case.startswith("unreadable"):
        unreadable.add(given)
    if command in ("show", "diff") and given.is_dir():
        bad = given  # they take one file: a folder is the problem
    argv = _argv(command, given, tmp_path)
    code = main([*argv, "--json"] if as_json else argv)
    captured = capsys.readouterr()
    if as_json:  # the same outcome as one JSON document: the file named once, with a code
        assert code == _expected_code(command, case), captured
        document = json_document(captured.out, code)
        naming = [r for r in document["findings"] + document["errors"] if r["file"] == str(bad)]
        assert len(naming) == (0 if command == "diff" and case == "empty" else 1), document
        return
    out = captured.out + captured.err
    assert "Traceback" not in out
    assert code == _expected_code(command, case), out
    naming = [line for line in out.splitlines() if str(bad) in line]
    if command == "diff" and case == "empty":
        assert naming == [f"--- {bad}"]  # compared, not reported
        return
    assert len(naming) == 1, out
    line = naming[0]
    assert line.startswith(f"{bad}:"), line
    problem = line[len(str(bad)) + 1 :].lstrip("0123456789:").strip()
    assert len(problem) > 10, line  # says what is wrong
    if case == "mixed-dir" and command not in ("show", "diff"):
        _processed_good_file(command, given, out)


def test_the_problems_say_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], unreadable: set[Path]
) -> None:
    expected = {
        "binary": "binary data, not a cassette",
        "empty": "the file is empty",
        "truncated-jsonl": ":2: line is not valid JSON",
        "non-cassette-jsonl": ":1: the first line is not an llmcassette header",
        "malformed-yaml": ": not valid YAML: did not find expected",
        "yaml-without-interactions": "not a cassette",
        "unreadable-file": "cannot read: Permission denied",
        "unreadable-dir": "cannot list this folder: Permission denied",
    }
    for case, words in expected.items():
        given, _ = BAD[case](tmp_path)
        if case.startswith("unreadable"):
            unreadable.add(given)
        assert main(["scan", str(given)]) == 2
        assert words in capsys.readouterr().err, case


def test_a_vcrpy_file_is_named_as_one_by_commands_that_read_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vcrpy = _good_yaml(tmp_path / "y.yaml")
    for argv in (["show", vcrpy], ["diff", vcrpy, vcrpy], ["migrate", vcrpy]):
        assert main([str(arg) for arg in argv]) == 2
        err = capsys.readouterr().err
        assert f"{vcrpy}: a vcrpy cassette; llmcassette {argv[0]} reads llmcassette JSONL" in err
        assert f"how to fix: llmcassette convert {vcrpy}" in err
        assert "give it its .yaml or .json name" not in err
    assert main(["scan", str(vcrpy)]) == 0  # and every command reads it the same way
    assert main(["check", str(vcrpy)]) == 0
    assert main(["convert", str(vcrpy)]) == 0


def test_convert_refuses_what_is_already_its_target_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = _good_jsonl(tmp_path / "x.jsonl")
    assert main(["convert", "--force", str(jsonl)]) == 2
    assert capsys.readouterr().err == (
        f"{jsonl}: already an llmcassette JSONL cassette\n"
        f"  how to fix: llmcassette convert --to vcrpy-json {jsonl} converts it back to a "
        "vcrpy cassette\n"
    )
    assert main(["convert", "--json", str(jsonl)]) == 2
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    # The problem alone, as a finding's message: file and how_to_fix are fields of their own.
    assert (error["message"], error["file"]) == (
        "already an llmcassette JSONL cassette",
        str(jsonl),
    )
    assert error["how_to_fix"] == (
        f"llmcassette convert --to vcrpy-json {jsonl} converts it back to a vcrpy cassette"
    )
    vcrpy = _good_yaml(tmp_path / "y.yaml")
    assert main(["convert", "--to", "vcrpy-json", "--force", str(vcrpy)]) == 2
    assert capsys.readouterr().err == (
        f"{vcrpy}: already a vcrpy cassette\n"
        f"  how to fix: llmcassette convert {vcrpy} (without --to vcrpy-json) converts it to "
        "JSONL\n"
    )


def test_show_raw_of_binary_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\xff\xfe\x80 not text")
    assert main(["show", "--raw", str(garbage)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{garbage}:1: binary data, not a cassette")


@pytest.mark.parametrize("command", ["check", "scan", "redact", "migrate", "convert"])
def test_a_folder_without_cassettes_says_so(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "adir"
    folder.mkdir()
    (folder / "notes.txt").write_text("hi")
    (folder / "settings.yaml").write_text("foo: bar\n")  # data files beside cassettes
    (folder / "package.json").write_text('{"name": "x"}')
    # check and scan are gates: one that looked at nothing must not pass (exit 2).
    assert main([command, str(folder)]) == (2 if command in ("check", "scan") else 0)
    assert f"llmcassette {command}: no cassettes found in {folder}" in capsys.readouterr().err


def test_a_data_file_that_pyyaml_cannot_read_is_skipped_in_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # mkdocs.yml beside the tests (helper round 6): its !!python/name tags are no safe YAML
    _good_jsonl(tmp_path / "c.jsonl")
    (tmp_path / "mkdocs.yml").write_text("markdown_extensions:\n  - !!python/name:x.y\n")
    (tmp_path / "broken.yaml").write_text(MALFORMED_YAML)  # a cassette, by what it holds
    assert main(["check", str(tmp_path)]) == 1
    shown = capsys.readouterr()
    assert "mkdocs.yml" not in shown.out + shown.err
    assert "broken.yaml" in shown.out + shown.err
    assert "1 problem(s) in 2 file(s)" in shown.err


@pytest.mark.parametrize("command", ["check", "scan"])
def test_a_gate_given_no_cassette_at_all_fails_with_a_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, str(tmp_path)]) == 2
    done = "checked" if command == "check" else "scanned"
    # Each thing said once: the folder's note, then why the gate fails and what to do.
    assert capsys.readouterr().err.splitlines() == [
        f"llmcassette {command}: no cassettes found in {tmp_path}",
        f"llmcassette {command}: nothing was {done}",
        "  how to fix: give the folder or files that hold the cassettes (e.g. tests/cassettes)",
    ]
    assert main([command, "--json", str(tmp_path)]) == 2
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert (error["code"], error["file"]) == ("LC001 usage", str(tmp_path))
    assert error["message"] == f"no cassettes found in {tmp_path}; nothing was {done}"
    # A folder without cassettes beside one with them is only a note.
    (tmp_path / "more").mkdir()
    _good_jsonl(tmp_path / "more" / "c.jsonl")
    (tmp_path / "empty").mkdir()
    assert main([command, str(tmp_path / "more"), str(tmp_path / "empty")]) == 0


def test_scan_never_calls_a_result_clean_after_a_path_it_could_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    assert main(["scan", str(missing)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{missing}: cannot read: No such file or directory",
        "llmcassette scan: nothing was scanned; 1 path(s) could not be scanned (see above)",
    ]
    good = _good_jsonl(tmp_path / "good.jsonl")
    assert main(["scan", str(missing), str(good)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "llmcassette scan: no secrets found in 1 file(s); 1 path(s) could not be scanned "
        "(see above)"
    )
    assert main(["scan", "--json", str(missing)]) == 2
    document = json.loads(capsys.readouterr().out)
    assert [error["file"] for error in document["errors"]] == [str(missing)]
    assert (document["findings"], document["results"]) == ([], [])


def test_chmod_000_really_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real thing, where the tests do not run as root."""
    folder = tmp_path / "locked"
    folder.mkdir()
    _good_jsonl(folder / "inside.jsonl")
    locked_file = _good_jsonl(tmp_path / "locked.jsonl")
    folder.chmod(0)
    locked_file.chmod(0)
    try:
        if os.access(folder, os.R_OK) or os.access(locked_file, os.R_OK):
            pytest.skip("running as root: file modes do not stop reading")
        for command in ("check", "scan", "redact", "migrate"):
            assert main([command, str(folder), str(locked_file)]) == 2
            err = capsys.readouterr().err
            assert f"{folder}: cannot list this folder: Permission denied" in err
            assert f"{locked_file}: cannot read: Permission denied" in err
    finally:
        folder.chmod(0o755)
        locked_file.chmod(0o644)


@pytest.mark.parametrize("command", COMMANDS)
def test_smoke_in_a_child_process(command: str, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(bytes(range(256)))
    result = cli(*_argv(command, garbage, tmp_path))
    assert "Traceback" not in result.stderr
    assert result.returncode == _expected_code(command, "binary")
    output = (result.stdout + result.stderr).splitlines()
    assert [line for line in output if str(garbage) in line] == [
        f"{garbage}:1: binary data, not a cassette (byte 0x00 at column 1 is not text)"
    ]


# A key the redaction rules know (tests/cli/test_check.py), never printed by any command.
SECRET = "sk-proj-" + "A1b2C3d4E5" * 3 + "T3BlbkFJ" + "z9Y8x7W6v5" * 3


def _outcome_argv(
    command: str, outcome: str, tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], int, str | None]:
    """``(argv, exit code, the code of the first finding or error)`` of one outcome."""
    good = _good_jsonl(tmp / "good.jsonl")
    if outcome == "usage":
        return [command, "--no-such-option", str(good)], 2, "LC001 usage"
    if outcome == "unreadable":
        given, _ = BAD["unreadable-file"](tmp)
        return _argv(command, given, tmp), 2, "LC103 unreadable"
    if command == "convert":
        given = _good_yaml(tmp / "y.yaml")
        if outcome == "finding":  # the target is there already
            _good_jsonl(tmp / "y.jsonl")
            return ["convert", str(given)], 1, "LC609 target-exists"
        return ["convert", str(given)], 0, None
    if outcome == "success":
        return _argv(command, good, tmp), 0, None
    if command == "diff":
        records = [json.loads(line) for line in good.read_text().splitlines()]
        records[1]["uri"] = "http://h/other"
        other = tmp / "other.jsonl"
        other.write_text("".join(json.dumps(r) + "\n" for r in records))
        return ["diff", str(good), str(other)], 1, "LC607 cassettes-differ"
    if command == "migrate":  # as if the file were of an older format version
        older = migrate.Outcome(str(good), 0, good.read_text())
        monkeypatch.setattr(migrate, "migrate_file", lambda *args, **kwargs: older)
        return ["migrate", "--check", str(good)], 1, "LC608 needs-migration"
    if command == "scan":
        leaky = tmp / "leaky.jsonl"
        leaky.write_text(good.read_text().replace('"ok"', f'"my key is {SECRET}"'))
        return ["scan", str(leaky)], 1, "LC602 secret"
    assert command == "check"  # a damaged cassette is a finding of check
    return ["check", str(BAD["truncated-jsonl"](tmp)[0])], 1, "LC101 cassette-format"


# show and redact find nothing: show prints, redact replaces what scan would find.
OUTCOMES = [
    (command, outcome)
    for command in COMMANDS
    for outcome in ("success", "finding", "unreadable", "usage")
    if not (outcome == "finding" and command in ("show", "redact"))
]


@pytest.mark.parametrize(("command", "outcome"), OUTCOMES)
def test_json_on_every_command_and_outcome(
    command: str,
    outcome: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unreadable: set[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv, expected, first_code = _outcome_argv(command, outcome, tmp_path, monkeypatch)
    if outcome == "unreadable":
        unreadable.add(Path(argv[1]))
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == expected, captured
    document = json_document(captured.out, code)
    assert document["command"] == command
    found = document["errors"] + document["findings"]
    assert [item["code"] for item in found[:1]] == ([first_code] if first_code else [])
    assert SECRET not in captured.out + captured.err


def test_json_usage_errors_of_the_command_line_itself(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["check", "--json"],
        ["--json"],
        ["nonsense", "--json"],
        ["show", "--raw", "--json", "x"],
    ):
        assert main(argv) == 2
        document = json_document(capsys.readouterr().out, 2)
        (error,) = document["errors"]
        assert error["code"] == "LC001 usage"
        assert "usage: llmcassette" in error["expected"]
    assert main(["check", "--no-such-option", "x"]) == 2  # without --json: argparse's text
    assert "error: unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_an_unknown_option_of_a_command_shows_that_commands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--bogus", "d"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: llmcassette check [-h]")
    assert "llmcassette check: error: unrecognized arguments: --bogus" in err
    assert main(["check", "--json", "--bogus", "d"]) == 2
    (error,) = json_document(capsys.readouterr().out, 2)["errors"]
    assert error["expected"].startswith("usage: llmcassette check [-h]")
    assert error["how_to_fix"] == "see llmcassette check --help"
    # An option before the command is the top level's.
    assert main(["--bogus", "check", "d"]) == 2
    assert capsys.readouterr().err.startswith("usage: llmcassette [-h]")


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_project_setting_no_command_can_use_is_an_error_not_a_traceback(
    as_json: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.llmcassette.redaction]\nbogus = 1\n")
    monkeypatch.chdir(tmp_path)
    good = _good_jsonl(tmp_path / "good.jsonl")
    assert main(["scan", str(good), *(["--json"] if as_json else [])]) == 2
    captured = capsys.readouterr()
    if as_json:
        (error,) = json_document(captured.out, 2)["errors"]
        assert error["code"] == "LC401 config"
    else:
        assert captured.err.startswith("llmcassette scan: ")
        assert "unknown redaction setting 'bogus'" in captured.err


def test_an_unexpected_error_is_named_without_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A bug's message may quote a cassette's value (urlsplit quotes what it refuses): the
    # command says its type and where it was raised, and how to see the whole traceback.
    import importlib

    cli_main = importlib.import_module("llmcassette.cli.main")
    secret = "Zq8Secr3tPassw0rd"

    def broken(args: object) -> int:
        raise ValueError(f"{secret!r} does not appear to be an IPv4 or IPv6 address")

    monkeypatch.setattr(cli_main, "_scan", broken)
    monkeypatch.delenv(cli_main.TRACEBACK_ENV, raising=False)
    assert cli_main.main(["scan", str(tmp_path)]) == 2
    said = capsys.readouterr()
    assert secret not in said.out + said.err
    assert "llmcassette scan: internal error: ValueError at test_paths.py:" in said.err
    assert "LLMCASSETTE_TRACEBACK=1 shows the whole traceback" in said.err

    assert cli_main.main(["scan", "--json", str(tmp_path)]) == 2
    document = json.loads(capsys.readouterr().out)
    [error] = document["errors"]
    assert error["code"] == "LC000 llmcassette-error"
    assert secret not in json.dumps(document)

    monkeypatch.setenv(cli_main.TRACEBACK_ENV, "1")
    with pytest.raises(ValueError, match=secret):
        cli_main.main(["scan", str(tmp_path)])


def test_a_gzip_file_that_decompresses_past_the_limit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few kilobytes of gzip can stand for gigabytes: the file is refused at the limit."""
    import gzip

    from llmcassette.cassette.compression import MAX_DECODED_BYTES_ENV

    header = json.dumps({"format": "llmcassette", "format_version": FORMAT_VERSION})
    bomb = tmp_path / "c.jsonl.gz"
    bomb.write_bytes(gzip.compress((header + "\n" + " " * 100_000).encode(), mtime=0))
    monkeypatch.setenv(MAX_DECODED_BYTES_ENV, "10000")
    assert main(["check", str(bomb)]) == 1  # a cassette that cannot be trusted
    err = capsys.readouterr().out
    assert f"{bomb}: the file decompresses (gzip) to more than 10000 bytes" in err
    assert f"set {MAX_DECODED_BYTES_ENV} to a larger number" in err
    monkeypatch.setenv(MAX_DECODED_BYTES_ENV, "200000")
    assert main(["check", str(bomb)]) == 0


@pytest.mark.parametrize("command", ["check", "scan", "convert", "report"])
def test_a_yaml_file_of_nested_aliases_is_refused_not_walked(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ten levels of ten aliases are 10**10 values to whatever walks them."""
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 10)]
    bomb = tmp_path / "c.yaml"
    bomb.write_text(
        "\n".join(lines) + "\ninteractions:\n- request: {method: POST, uri: 'http://x/', "
        "body: *a9, headers: {}}\n  response: {status: {code: 200, message: OK}, "
        "headers: {}, body: {string: hi}}\nversion: 1\n"
    )
    main([command, str(bomb)])
    captured = capsys.readouterr()
    assert "YAML aliases stand for" in captured.out + captured.err
    assert not (tmp_path / "c.jsonl").exists()


def test_a_link_to_a_folder_is_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A linked folder may lead out of the tree, where migrate would write, or to itself."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    old = outside / "old.jsonl"
    old.write_text('{"format": "llmcassette", "format_version": 1}\n')
    (tree / "elsewhere").symlink_to(outside, target_is_directory=True)
    (tree / "self").symlink_to(".", target_is_directory=True)
    (tree / "c.jsonl").write_text('{"format": "llmcassette", "format_version": 2}\n')
    assert main(["migrate", str(tree)]) == 0
    assert old.read_text() == '{"format": "llmcassette", "format_version": 1}\n'
    assert main(["check", str(tree)]) == 0
    assert "no problems in 1 file(s)" in capsys.readouterr().err
    assert main(["migrate", str(tree / "elsewhere")]) == 0  # named: followed
    assert '"format_version":2' in old.read_text()
