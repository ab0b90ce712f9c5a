"""`llmcassette check`: structure, streams, age, orphans and secrets, with exit codes CI uses."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from _cli_support import Record, cli, findings, read_records, write_records

from llmcassette.cli.main import main
from llmcassette.errors import FIELDS
from llmcassette.testing import LocalProvider

SECRET = "sk-proj-" + "A1b2C3d4E5" * 3 + "T3BlbkFJ" + "z9Y8x7W6v5" * 3


def test_a_clean_folder_passes_and_each_problem_is_one_json_record(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    good = record(tmp_path / "good.jsonl")
    assert main(["check", "--json", str(tmp_path)]) == 0
    assert findings(capsys.readouterr().out) == []

    # A damaged copy, one from a newer llmcassette, one holding a secret.
    lines = good.read_text().splitlines()
    (tmp_path / "damaged.jsonl").write_text("\n".join([*lines[:3], "{oops", *lines[4:]]) + "\n")
    records = read_records(good)
    records[0]["format_version"] = 99
    write_records(tmp_path / "newer.jsonl", records)
    records = read_records(good)
    records[1]["body"]["json"]["messages"][0]["content"] = f"my key is {SECRET}"
    write_records(tmp_path / "leaky.jsonl", records)

    assert main(["check", "--json", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    problems = {(Path(p["file"]).name, p["kind"]): p for p in findings(captured.out)}
    assert set(problems) == {
        ("damaged.jsonl", "format"),
        ("newer.jsonl", "version"),
        ("leaky.jsonl", "secret"),
    }
    damaged = problems["damaged.jsonl", "format"]
    assert damaged["line"] == 4
    assert damaged["message"].startswith("line is not valid JSON")
    assert damaged["code"] == "LC101 cassette-format"
    assert set(damaged) == {"code", "message", "kind", "fixable_by", "docs", *FIELDS}
    newer = problems["newer.jsonl", "version"]
    assert newer["line"] == 1
    assert "format_version 99 is newer" in newer["message"]
    assert newer["code"] == "LC102 cassette-version"
    assert "pip install" in newer["how_to_fix"]
    leaky = problems["leaky.jsonl", "secret"]
    assert leaky["line"] == 2
    assert "body.json.messages[0].content" in leaky["message"]
    assert "openai" in leaky["message"]
    assert (leaky["code"], leaky["path"]) == ("LC602 secret", "body.json.messages[0].content")

    assert main(["check", "--no-secrets", str(tmp_path / "leaky.jsonl")]) == 0
    assert main(["check", str(tmp_path / "leaky.jsonl")]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path / 'leaky.jsonl'}:2: body.json.messages[0].content: " in out
    assert "how to fix: run `llmcassette redact PATH`" in out


def test_max_age_reports_cassettes_recorded_too_long_ago(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = record(tmp_path / "c.jsonl")
    records = read_records(cassette)
    long_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=60)
    records[0]["created_at"] = long_ago.strftime("%Y-%m-%dT%H:%M:%SZ")
    write_records(cassette, records)
    assert main(["check", "--max-age", "90d", str(cassette)]) == 0
    assert main(["check", "--max-age", "30d", str(cassette)]) == 1
    out = capsys.readouterr().out
    assert f"{cassette}:1: recorded {records[0]['created_at']}, 60d ago; max_age is 30d" in out
    assert main(["check", "--max-age", "4w", "--json", str(cassette)]) == 1
    (problem,) = findings(capsys.readouterr().out)
    assert problem["kind"] == "expired"
    del records[0]["created_at"]
    write_records(cassette, records)
    assert main(["check", "--max-age", "30d", "--json", str(cassette)]) == 1
    (problem,) = findings(capsys.readouterr().out)
    assert problem["kind"] == "age-unknown"


def test_max_age_defaults_to_the_projects_setting(tmp_path: Path, record: Record) -> None:
    cassette = record(tmp_path / "c.jsonl")
    records = read_records(cassette)
    records[0]["created_at"] = "2020-01-01T00:00:00Z"
    write_records(cassette, records)
    assert cli("check", cassette, cwd=tmp_path).returncode == 0  # no max_age anywhere
    (tmp_path / "pyproject.toml").write_text('[tool.llmcassette]\nmax_age = "30d"\n')
    expired = cli("check", "--json", cassette, cwd=tmp_path)
    assert expired.returncode == 1
    assert [p["kind"] for p in findings(expired.stdout)] == ["expired"]
    assert cli("check", "--max-age", "100000d", cassette, cwd=tmp_path).returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.llmcassette]\nmax_age = "a month"\n')
    wrong = cli("check", cassette, cwd=tmp_path)
    assert wrong.returncode == 2
    assert "max_age" in wrong.stderr


RECORDED_TESTS = """
import os
import httpx
import pytest

URL = os.environ["PROVIDER_URL"] + "/v1/chat/completions"

def ask(prompt="hi"):
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
    httpx.post(URL, json=body, headers={"authorization": "Bearer sk-test"}).raise_for_status()

@pytest.mark.vcr
def test_kept():
    ask()

@pytest.mark.vcr
def test_renamed_later():
    ask()

@pytest.mark.vcr
@pytest.mark.parametrize("n", [1, 2])
def test_params(n):
    ask(str(n))

class TestGroup:
    @pytest.mark.vcr
    def test_in_class(self):
        ask()

@pytest.mark.vcr
@pytest.mark.default_cassette("shared_models")
def test_named():
    ask()
"""


def test_orphans_are_cassettes_no_test_uses_any_more(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_models=RECORDED_TESTS, test_gone=RECORDED_TESTS)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=12)
    folder = pytester.path / "cassettes" / "test_models"
    assert sorted(p.name for p in folder.iterdir()) == [
        "TestGroup.test_in_class.jsonl",
        "shared_models.jsonl",
        "test_kept.jsonl",
        "test_params[1].jsonl",
        "test_params[2].jsonl",
        "test_renamed_later.jsonl",
    ]
    assert cli("check", "--orphans", pytester.path).returncode == 0

    # Later: a test is renamed, the class and one module are deleted.
    source = RECORDED_TESTS.replace("def test_renamed_later", "def test_new_name")
    source = source.replace("class TestGroup:", "class TestOther:")
    (pytester.path / "test_models.py").write_text(source)
    (pytester.path / "test_gone.py").unlink()
    result = cli("check", "--orphans", "--json", pytester.path)
    assert result.returncode == 1
    orphans = {
        Path(p["file"]).relative_to(pytester.path).as_posix(): p for p in findings(result.stdout)
    }
    assert {p["kind"] for p in orphans.values()} == {"orphan"}
    gone = [name for name in orphans if name.startswith("cassettes/test_gone/")]
    assert len(gone) == 6
    assert "no test module" in orphans[gone[0]]["message"]
    assert set(orphans) - set(gone) == {
        "cassettes/test_models/test_renamed_later.jsonl",
        "cassettes/test_models/TestGroup.test_in_class.jsonl",
    }
    assert (
        "has no test function test_renamed_later"
        in orphans["cassettes/test_models/test_renamed_later.jsonl"]["message"]
    )
    assert (
        "has no test class TestGroup"
        in orphans["cassettes/test_models/TestGroup.test_in_class.jsonl"]["message"]
    )
    assert cli("check", pytester.path).returncode == 0  # orphans only when asked


def test_exit_codes_in_a_child_process(tmp_path: Path, record: Record) -> None:
    good = record(tmp_path / "good.jsonl")
    clean = cli("check", good)
    assert (clean.returncode, clean.stdout) == (0, "")
    assert "no problems in 1 file(s)" in clean.stderr
    records = read_records(good)
    stream_end = next(n for n, r in enumerate(records) if r.get("text") == "[DONE]")
    del records[stream_end]
    records[stream_end]["events"] -= 1
    cut = tmp_path / "cut.jsonl"
    write_records(cut, records)
    found = cli("check", cut)
    assert found.returncode == 1
    assert f"{cut}:2: POST http://127.0.0.1:" in found.stdout
    assert "[DONE]" in found.stdout
    missing = cli("check", tmp_path / "missing.jsonl")
    assert missing.returncode == 2
    assert "missing.jsonl: cannot read" in missing.stderr
    wrong_age = cli("check", "--max-age", "soon", good)
    assert wrong_age.returncode == 2
    assert "'30d'" in wrong_age.stderr
    assert cli("check").returncode == 2  # usage error: no path


def test_scan_json_lists_findings_without_values(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = record(tmp_path / "c.jsonl")
    assert main(["scan", "--json", str(cassette)]) == 0
    assert findings(capsys.readouterr().out) == []
    records = read_records(cassette)
    records[1]["headers"]["x-api-key"] = SECRET
    write_records(cassette, records)
    result = cli("scan", "--json", cassette)
    assert result.returncode == 1
    assert SECRET not in result.stdout + result.stderr
    ((code, file, line, path, rule),) = [
        (f["code"], f["file"], f["line"], f["path"], f["rule"]) for f in findings(result.stdout)
    ]
    assert (code, file, line, path, rule) == (
        "LC602 secret",
        str(cassette),
        2,
        "headers.x-api-key",
        "openai-api-key",
    )


def test_overrides_sidecars_are_validated_and_follow_their_cassette(
    tmp_path: Path, record: Record
) -> None:
    folder = tmp_path / "cassettes" / "test_mod"
    record(folder / "test_a.jsonl")
    (tmp_path / "test_mod.py").write_text("def test_a():\n    pass\n")
    valid = '{"mode": "patch", "entries": [{"at": 0, "status": 429}]}'
    (folder / "test_a.overrides.json").write_text(valid)
    assert cli("check", "--orphans", tmp_path).returncode == 0

    (folder / "test_a.overrides.json").write_text(
        '{"mode": "patch", "entries": [{"at": 0, "status": "soon"}]}'
    )
    (folder / "test_b.overrides.json").write_text(valid)  # its cassette is gone
    result = cli("check", "--orphans", "--json", tmp_path)
    assert result.returncode == 1
    problems = {Path(p["file"]).name: p for p in findings(result.stdout)}
    assert set(problems) == {"test_a.overrides.json", "test_b.overrides.json"}
    invalid = problems["test_a.overrides.json"]
    assert invalid["kind"] == "overrides"
    assert invalid["message"].startswith("entries[0].status: must be an HTTP status")
    orphan = problems["test_b.overrides.json"]
    assert orphan["kind"] == "orphan"
    assert "no cassette test_b.jsonl" in orphan["message"]


def test_an_overrides_index_the_cassette_lacks_fails_check_as_it_fails_replay(
    tmp_path: Path, record: Record
) -> None:
    """check runs the sidecar against its cassette's interactions, as use_cassette does."""
    import llmcassette

    cassette = record(tmp_path / "test_a.jsonl")  # two interactions
    sidecar = tmp_path / "test_a.overrides.json"
    sidecar.write_text('{"mode": "patch", "entries": [{"at": 2, "status": 429}]}')
    assert cli("check", tmp_path).returncode == 0  # the next index: appended

    sidecar.write_text('{"mode": "patch", "entries": [{"at": 0, "status": 429}, {"at": 5}]}')
    with (
        pytest.raises(llmcassette.OverridesError) as replayed,
        llmcassette.use_cassette(cassette, record_mode="none"),
    ):
        pass
    result = cli("check", "--json", tmp_path)
    assert result.returncode == 1
    (found,) = findings(result.stdout)
    assert (found["code"], found["kind"], found["file"], found["path"]) == (
        "LC501 overrides",
        "overrides",
        str(sidecar),
        "entries[1].at",
    )
    assert found["message"] == f"entries[1].at: {replayed.value.problem}"
    assert "leaves a gap: the cassette has 2 interaction(s)" in found["message"]
    assert found["how_to_fix"] == replayed.value.hint


def test_a_cassette_named_alone_is_checked_with_its_overrides_sidecar(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pre-commit hook names the cassette: the sidecar replay loads with it is checked too,
    once, however the two are given."""
    folder = tmp_path / "ov"
    cassette = record(folder / "good.jsonl")
    assert main(["check", str(cassette)]) == 0  # no sidecar: the cassette alone
    assert "no problems in 1 file(s)" in capsys.readouterr().err

    sidecar = folder / "good.overrides.json"
    sidecar.write_text('{"mode": "patch", "entries": [{"at": 0, "status": "soon"}]}')
    for given in (
        [cassette],
        [cassette, sidecar],
        [sidecar, cassette],
        [folder, cassette],
        [cassette, cassette],
    ):
        assert main(["check", "--json", *map(str, given)]) == 1, given
        (found,) = findings(capsys.readouterr().out)
        assert (found["kind"], found["file"]) == ("overrides", str(sidecar))
    assert main(["check", str(cassette)]) == 1
    assert "1 problem(s) in 2 file(s)" in capsys.readouterr().err


def test_orphans_with_cassettes_kept_away_from_their_module(tmp_path: Path, record: Record) -> None:
    # A vcr_cassette_dir fixture keeps <root>/cassettes/<module>/ for <root>/tests/x/<module>.py.
    record(tmp_path / "cassettes" / "test_far" / "test_a.jsonl")
    module = tmp_path / "tests" / "examples" / "test_far.py"
    module.parent.mkdir(parents=True)
    module.write_text("def test_a():\n    pass\n")
    venv_copy = tmp_path / ".venv" / "lib" / "test_far.py"  # never looked at
    venv_copy.parent.mkdir(parents=True)
    venv_copy.write_text("def test_b():\n    pass\n")
    assert cli("check", "--orphans", tmp_path).returncode == 0
    module.write_text("def test_b():\n    pass\n")
    result = cli("check", "--orphans", "--json", tmp_path / "cassettes")
    assert result.returncode == 1
    (problem,) = findings(result.stdout)
    assert problem["kind"] == "orphan"
    assert problem["message"] == f"{module} has no test function test_a"


#: A cassette of one GET answered 200, for the sidecars beside it.
ONE_GET = (
    '{"format":"llmcassette","format_version":2}\n'
    '{"type":"request","method":"GET","uri":"https://example.com/"}\n'
    '{"type":"response","status":200,"body":{"json":{"ok":true}}}\n'
    '{"type":"end","events":0}\n'
)


def test_check_and_scan_read_overrides_sidecars_for_secrets(tmp_path: Path) -> None:
    """A scripted 401 whose headers and body hold a real key is a secret in the sidecar,
    found by ``check`` and by ``scan``, named or in a folder; the value is never printed."""
    key = "sk-ant-api03-" + "Ab3Cd" * 18 + "AA"  # in pieces, for secret scanners
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(ONE_GET)
    sidecar = tmp_path / "c.overrides.json"
    entry = {"at": 0, "status": 401, "headers": {"x-api-key": key}, "body": {"message": key}}
    sidecar.write_text(json.dumps({"entries": [entry]}))
    for command in (("check", tmp_path), ("scan", tmp_path), ("scan", sidecar)):
        result = cli(*command, "--json")
        assert result.returncode == 1, result.stdout + result.stderr
        assert key not in result.stdout + result.stderr
        found = json.loads(result.stdout)["findings"]
        assert {f["path"] for f in found} == {
            "entries[0].headers.x-api-key",
            "entries[0].body.message",
        }
        assert all("overrides file by hand" in f["how_to_fix"] for f in found)


@pytest.mark.parametrize(
    "entry",
    [
        {"at": 0, "status": 401, "headers": {"authorization": ["Bearer {key}"]}},  # vcrpy's list
        {"at": 0, "status": "{key}"},
        {"at": 0, "fail": "{key}"},
        {"at": 0, "cut_after": 1, "cut": "{key}"},
        {"at": 0, "delay": "{key}"},
        {"at": 0, "hang_after": 1, "marker": {"path": "{key}"}},
        {"at": 0, "match": {"path": ["{key}"]}, "status": 500},
        {"at": "{key}", "status": 500},
        {"at": 0, "recorded": ["{key}"]},
    ],
)
def test_an_invalid_overrides_field_is_named_without_its_value(
    tmp_path: Path, entry: dict[str, Any]
) -> None:
    """A sidecar is written by hand: a key pasted into a field that refuses it is said to
    be wrong by its kind (a string of N characters, a list), never quoted, in ``check``
    and ``report`` (the text, the JSON and the page)."""
    key = "sk-proj-" + "Ab3Cd" * 5 + "T3BlbkFJ" + "xY9z" * 5  # in pieces, for secret scanners
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(ONE_GET)
    sidecar = tmp_path / "c.overrides.json"
    sidecar.write_text(json.dumps({"entries": [entry]}).replace("{key}", key))
    page = tmp_path / "report.html"
    for command in (
        ("check", cassette),
        ("check", "--json", tmp_path),
        ("report", tmp_path),
        ("report", "--json", tmp_path),
        ("report", "--html", page, tmp_path),
    ):
        result = cli(*command)
        said = result.stdout + result.stderr
        assert "LC501" in said or "overrides" in said, said
        assert key not in said, command
        assert key[8:30] not in said, command
    assert not page.exists() or key not in page.read_text()
    found = findings(cli("check", "--json", sidecar).stdout)
    (message,) = [f["message"] for f in found if f["kind"] == "overrides"]
    assert any(kind in message for kind in ("a string of", "a list", "an object")), message


def test_a_short_wrong_overrides_value_is_still_quoted(tmp_path: Path) -> None:
    """A typo (``"fail": "dns"``, ``"status": "429"``) is short: it is quoted, as before."""
    sidecar = tmp_path / "c.overrides.json"
    sidecar.write_text(json.dumps({"entries": [{"at": 0, "fail": "dns"}]}))
    result = cli("check", sidecar)
    assert "unknown failure 'dns'" in result.stdout + result.stderr


def _events(*words: str) -> str:
    return "".join(
        json.dumps({"type": "event", "data": {"choices": [{"delta": {"content": word}}]}}) + "\n"
        for word in words
    )


#: A GET answered with JSON, then a chat stream that says a ticket id in three pieces.
GET_AND_STREAM = (
    ONE_GET
    + '{"type":"request","method":"POST","uri":"https://api.openai.com/v1/chat/completions",'
    '"body":{"json":{"stream":true}}}\n'
    '{"type":"response","status":200,"headers":{"content-type":"text/event-stream"},'
    '"body":{"stream":"sse"}}\n'
    + _events("ticket ", "5f0c8a6e", "-3b7e")
    + '{"type":"event","text":"[DONE]"}\n'
    '{"type":"end","events":4}\n'
)


@pytest.mark.parametrize(
    ("entry", "code", "path", "problem"),
    [
        (
            {"at": 0, "replace": {"ok": "{{fromRequest:id (\\d+)"}},
            "LC503 placeholder",
            "entries[0].replace",
            "interaction #1 of c.jsonl, body: unterminated placeholder",
        ),
        (
            {"at": 0, "replace": {"ok": "{{fromRequest:(}}"}},
            "LC503 placeholder",
            "entries[0].replace",
            "interaction #1 of c.jsonl, body: invalid regex in {{fromRequest:(}}",
        ),
        (
            {"at": 0, "replace": {"ok": "{{fromRequest:(a+)+$}}"}},
            "LC503 placeholder",
            "entries[0].replace",
            "interaction #1 of c.jsonl, body: refused {{fromRequest:(a+)+$}}: a quantifier "
            "applies to a group",
        ),
        (
            {"at": 1, "replace": {"ticket": "{{fromRequest.nowhere:x}}"}},
            "LC503 placeholder",
            "entries[0].replace",
            "interaction #2 of c.jsonl, event #1: malformed placeholder",
        ),
        (
            {"at": 0, "status": 500, "body": {"error": "{{fromRequest:x"}},
            "LC503 placeholder",
            "entries[0].body",
            "interaction #1 of c.jsonl, body: unterminated placeholder",
        ),
        (
            {"at": 0, "replace": {"ok": "fine", "gone": "x"}},
            "LC502 fault",
            "entries[0].replace",
            "interaction #1 of c.jsonl: replace text 2 of 2 ('gone') is not in the recorded "
            "response",
        ),
        (
            {"at": 1, "replace": {"5f0c8a6e-3b7e": "{{fromRequest:ticket (\\S+)}}"}},
            "LC502 fault",
            "entries[0].replace",
            "interaction #2 of c.jsonl: the replace text ('5f0c8a6e-3b7e') is not in any event "
            "of the recorded stream",
        ),
        (
            {"at": 1, "cut_after": 9},
            "LC502 fault",
            "entries[0].cut_after",
            "interaction #2 of c.jsonl: cut_stream(after=9), but the recorded stream has 4 "
            "event(s)",
        ),
        (
            {"at": 2, "recorded": 0, "hang_after": 1},
            "LC502 fault",
            "entries[0].hang_after",
            "interaction #3 of c.jsonl: hang(after=1) needs a streamed response",
        ),
    ],
)
def test_check_finds_a_sidecar_fault_that_can_only_fail_at_replay(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    entry: dict[str, Any],
    code: str,
    path: str,
    problem: str,
) -> None:
    """check said "no problems" of a sidecar whose fault fails whatever the request: it now
    runs replay's own steps on the recorded response, with no request to fill placeholders."""
    monkeypatch.chdir(tmp_path)
    Path("c.jsonl").write_text(GET_AND_STREAM)
    Path("c.overrides.json").write_text(json.dumps({"entries": [entry]}))
    assert main(["check", "--json", "c.jsonl"]) == 1
    (found,) = findings(capsys.readouterr().out)
    assert (found["code"], found["kind"], found["file"], found["path"]) == (
        code,
        "overrides",
        "c.overrides.json",
        path,
    )
    assert found["message"].startswith(f"{path}: {problem}"), found["message"]
    assert found["how_to_fix"]


def test_a_sidecar_finding_is_what_replay_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx2

    import llmcassette

    monkeypatch.chdir(tmp_path)
    Path("c.jsonl").write_text(GET_AND_STREAM)
    Path("c.overrides.json").write_text(json.dumps({"entries": [{"at": 0, "replace": {"x": "y"}}]}))
    with (
        pytest.raises(llmcassette.FaultError) as replayed,
        llmcassette.use_cassette("c.jsonl", record_mode="none", allow_unused=True),
    ):
        httpx2.get("https://example.com/")
    assert main(["check", "--json", "c.jsonl"]) == 1
    (found,) = findings(capsys.readouterr().out)
    assert (
        found["message"]
        == f"entries[0].replace: interaction #1 of c.jsonl: {replayed.value.problem}"
    )
    assert found["how_to_fix"] == replayed.value.hint


def test_sidecar_faults_replay_can_carry_out_are_no_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A placeholder that needs a request to match is not judged without one.
    monkeypatch.chdir(tmp_path)
    Path("c.jsonl").write_text(GET_AND_STREAM)
    entries = [
        {"at": 0, "replace": {"ok": "{{fromRequest:(\\d{3})}}", "true": "{{!fromRequest"}},
        {"at": 1, "replace": {"5f0c8a6e": "{{fromRequest:nothing like it}}"}, "cut_after": 4},
        {"at": 2, "status": 429, "body": {"error": "{{fromRequest.url:/(\\w+)$}}"}},
        {"at": 3, "fail": "connect_error"},
        {"at": 4, "recorded": 1, "hang_after": 0},
    ]
    Path("c.overrides.json").write_text(json.dumps({"entries": entries}))
    result = cli("check", "c.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_a_replace_text_that_is_not_there_is_named_without_its_value(tmp_path: Path) -> None:
    """A key pasted as the text to replace: check (and replay) say which text by its kind."""
    key = "sk-proj-" + "Ab3Cd" * 5 + "T3BlbkFJ" + "xY9z" * 5  # in pieces, for secret scanners
    (tmp_path / "c.jsonl").write_text(ONE_GET)
    sidecar = tmp_path / "c.overrides.json"
    sidecar.write_text(json.dumps({"entries": [{"at": 0, "replace": {key: "x"}}]}))
    result = cli("check", "--no-secrets", "--json", tmp_path / "c.jsonl")
    assert result.returncode == 1
    assert key[8:30] not in result.stdout + result.stderr
    (found,) = findings(result.stdout)
    assert f"the replace text (a string of {len(key)} characters) is not in" in found["message"]


VCRPY_CUT_AFTER_ITS_REQUEST = """\
interactions:
- request:
    body: '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'
    headers: {}
    method: POST
    uri: https://api.openai.com/v1/chat/completions
version: 1
"""


def test_a_vcrpy_cassette_replay_cannot_read_is_a_format_problem(tmp_path: Path) -> None:
    # check passed it ("no problems"), while replay raised CassetteFormatError (KeyError:
    # 'response') and convert refused it.
    cassette = tmp_path / "cassettes" / "test_chat" / "test_hi.yaml"
    cassette.parent.mkdir(parents=True)
    cassette.write_text(VCRPY_CUT_AFTER_ITS_REQUEST)
    for given in (cassette, tmp_path / "cassettes"):
        done = cli("check", "--json", given)
        assert done.returncode == 1, done.stdout
        (finding,) = json.loads(done.stdout)["findings"]
        assert (finding["code"], finding["kind"]) == ("LC101 cassette-format", "format")
        assert finding["file"] == str(cassette)
        assert finding["path"] == "interactions[0]"
        assert finding["message"].startswith("interaction #1 has no response mapping")
    text = cli("check", cassette)
    assert "test_hi.yaml: interaction #1 has no response mapping" in text.stdout + text.stderr
    assert cassette.read_text() == VCRPY_CUT_AFTER_ITS_REQUEST


def test_a_stream_the_test_stopped_reading_is_not_reported_as_cut_short(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    # Recording it again writes the same file: check could never be satisfied.
    import openai

    import llmcassette

    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-t", max_retries=0)
    path = tmp_path / "stopped.jsonl"
    with llmcassette.use_cassette(path):
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        next(iter(stream))
        stream.close()
    end = read_records(path)[-1]
    assert (end["type"], end["cut_short"], "incomplete" in end) == ("end", True, False)
    assert main(["check", str(path)]) == 0

    # A stream that broke off while the code was reading it is still reported.
    records = read_records(path)
    records[-1]["error"] = "RemoteProtocolError"
    write_records(path, records)
    assert main(["check", "--json", str(path)]) == 1
    assert [p["kind"] for p in findings(capsys.readouterr().out)] == ["truncated-stream"]


def test_a_secret_in_a_vcrpy_cassette_is_named_at_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # check and scan named the line where the interaction starts (`vcr.yaml:2:`), not the
    # line holding the key, which a long cassette leaves the reader to hunt for.
    import yaml

    body = {"id": "chatcmpl-1", "note": f"the key is {SECRET}", "words": "lorem ipsum " * 20}
    interaction = {
        "request": {
            "body": json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user"}]}),
            "headers": {
                "Content-Type": ["application/json"],
                "Authorization": [f"Bearer {SECRET}"],
            },
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
        },
        "response": {
            "body": {"string": json.dumps(body, indent=2)},
            "headers": {"Content-Type": ["application/json"]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    clean = json.loads(json.dumps(interaction).replace(SECRET, "<REDACTED:openai-api-key>"))
    cassette = tmp_path / "vcr.yaml"
    cassette.write_text(yaml.dump({"interactions": [clean, interaction], "version": 1}))
    lines = cassette.read_text().splitlines()
    holding = [number for number, line in enumerate(lines, 1) if SECRET in line]
    assert len(holding) == 2  # the header, then the body
    assert "Bearer" in lines[holding[0] - 1]

    assert main(["check", "--json", str(cassette)]) == 1
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    found = {p["path"]: p["line"] for p in findings(captured.out)}
    assert found == {
        "interactions[1].request.headers.Authorization[0]": holding[0],
        "interactions[1].response.body.string<json>.note": holding[1],
    }
    assert main(["scan", str(cassette)]) == 1
    assert f"vcr.yaml:{holding[1]}: interactions[1].response.body" in capsys.readouterr().out

    # A value the text does not show as it is (a gzip-compressed body) is named at its
    # key's line.
    import gzip

    interaction["response"]["headers"]["Content-Encoding"] = ["gzip"]
    interaction["response"]["body"]["string"] = gzip.compress(json.dumps(body).encode())
    cassette.write_text(yaml.dump({"interactions": [clean, interaction], "version": 1}))
    lines = cassette.read_text().splitlines()
    assert not any(SECRET in line for line in lines[holding[0] :])
    response = lines.index("  response:", holding[0])
    key = next(n for n, line in enumerate(lines[response:], response + 1) if "string:" in line)
    assert main(["check", "--json", str(cassette)]) == 1
    found = {p["path"]: p["line"] for p in findings(capsys.readouterr().out)}
    assert found["interactions[1].response.body.string<json>.note"] == key


def test_check_finds_a_placeholder_written_into_a_cassette_that_replay_fails_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``{{fromRequest:...}}`` written by hand into a recorded response (not a sidecar)
    that fails for any request is the cassette's problem, found as replay raises it."""
    import httpx2

    import llmcassette

    monkeypatch.chdir(tmp_path)
    text = GET_AND_STREAM.replace('{"ok":true}', '{"ok":"{{fromRequest:id (\\\\d+}}"}', 1)
    text = text.replace('"content": "5f0c8a6e"', '"content": "{{fromRequest.nowhere:x}}"', 1)
    Path("c.jsonl").write_text(text)
    with (
        pytest.raises(llmcassette.FaultError) as replayed,
        llmcassette.use_cassette("c.jsonl", record_mode="none", allow_unused=True),
    ):
        httpx2.get("https://example.com/")
    assert main(["check", "--json", "c.jsonl"]) == 1
    body, event = findings(capsys.readouterr().out)
    assert (body["code"], body["kind"], body["line"]) == ("LC503 placeholder", "placeholder", 2)
    assert body["message"] == f"interaction #1 of c.jsonl, body: {replayed.value.problem}"
    assert body["how_to_fix"] == replayed.value.hint
    assert (event["code"], event["line"]) == ("LC503 placeholder", 5)
    assert event["message"].startswith("interaction #2 of c.jsonl, event #2: malformed")


def test_placeholders_written_into_a_cassette_that_replay_can_fill_are_no_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = GET_AND_STREAM.replace('{"ok":true}', '{"ok":"{{fromRequest:(\\\\d{3})}}"}', 1)
    text = text.replace('"content": "5f0c8a6e"', '"content": "{{!fromRequest"', 1)
    Path("c.jsonl").write_text(text)
    assert main(["check", "c.jsonl"]) == 0
