"""``python -m llmcassette.workflow``: replay, then record again only what needs it.

End to end on a small pytest project (run in subprocesses, as a user's noxfile would) whose
cassettes are fresh, stale, missing, expired and left over from vcrpy, against the bundled
LocalProvider.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmcassette.pytest_plugin import write_report
from llmcassette.testing import LocalProvider
from llmcassette.workflow import REASONS, ReportEntry, read_report, select

OLD = "2020-01-01T00:00:00Z"

HEADER = """
import os
import httpx2
import pytest


def chat(content):
    response = httpx2.post(
        os.environ["PROVIDER_URL"] + "/v1/chat/completions",
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]},
        headers={"authorization": "Bearer sk-test"},
    )
    assert response.status_code == 200
"""

TEST = """

@pytest.mark.vcr{marker}
def test_{name}():
    chat("{prompt}"){more}
"""

ALL = ("fresh", "stale", "expired", "legacy", "shrunk")


def module(names: tuple[str, ...], stale_prompt: str = "stale v1", shrunk: bool = False) -> str:
    markers = {"expired": '(max_age="30d")'}
    prompts = {"stale": stale_prompt}
    more = {"shrunk": "" if shrunk else '\n    chat("shrunk, second request")'}
    return HEADER + "".join(
        TEST.format(
            name=name,
            marker=markers.get(name, ""),
            prompt=prompts.get(name, name),
            more=more.get(name, ""),
        )
        for name in names
    )


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalProvider]:
    with LocalProvider() as server:
        monkeypatch.setenv("PROVIDER_URL", server.url)
        yield server


def cassettes(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "test_mod"


def workflow(pytester: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m llmcassette.workflow ARGS`` in the project, as a noxfile session runs it."""
    return subprocess.run(
        [sys.executable, "-m", "llmcassette.workflow", *args, "-p", "no:cacheprovider"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def age(path: Path) -> None:
    text = path.read_text()
    created = json.loads(text.splitlines()[0])["created_at"]
    path.write_text(text.replace(f'"created_at":"{created}"', f'"created_at":"{OLD}"', 1))


@pytest.fixture
def project(pytester: pytest.Pytester, provider: LocalProvider) -> pytest.Pytester:
    """Every test recorded once; then one goes stale, one makes fewer requests, one expires,
    one is added unrecorded, and one only has the vcrpy YAML cassette it had before
    llmcassette was installed."""
    pytester.makepyfile(test_mod=module(("legacy",)))
    pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once").assert_outcomes(
        passed=1
    )
    pytester.makepyfile(test_mod=module(ALL))
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=5)
    assert sorted(p.name for p in cassettes(pytester).iterdir()) == [
        "test_expired.jsonl",
        "test_fresh.jsonl",
        "test_legacy.yaml",
        "test_shrunk.jsonl",
        "test_stale.jsonl",
    ]
    age(cassettes(pytester) / "test_expired.jsonl")
    pytester.makepyfile(test_mod=module((*ALL, "missing"), stale_prompt="stale v2", shrunk=True))
    return pytester


def test_only_the_cassettes_that_need_it_are_recorded_again(
    project: pytest.Pytester, provider: LocalProvider
) -> None:
    folder = cassettes(project)
    fresh = (folder / "test_fresh.jsonl").read_bytes()
    fresh_mtime = (folder / "test_fresh.jsonl").stat().st_mtime_ns
    sent = len(provider.requests)

    result = workflow(project)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 test(s) to record again:" in result.stdout
    chosen = [line.strip() for line in result.stdout.splitlines() if line.startswith("  test_")]
    assert sorted(chosen) == [
        "test_mod.py::test_expired",
        "test_mod.py::test_legacy",
        "test_mod.py::test_missing",
        "test_mod.py::test_shrunk",
        "test_mod.py::test_stale",
    ]
    # Run 2 reached the provider once per chosen test, and only for them.
    prompts = [r.json()["messages"][0]["content"] for r in provider.requests[sent:]]
    assert sorted(prompts) == ["expired", "legacy", "missing", "shrunk", "stale v2"]
    assert (folder / "test_fresh.jsonl").read_bytes() == fresh
    assert (folder / "test_fresh.jsonl").stat().st_mtime_ns == fresh_mtime
    assert (folder / "test_legacy.jsonl").is_file(), "the vcrpy cassette now has a JSONL one"
    expired_header = json.loads((folder / "test_expired.jsonl").read_text().splitlines()[0])
    assert expired_header["created_at"] != OLD

    # Everything replays offline now, and a second pass finds nothing to do.
    provider.stop()
    project.runpytest_subprocess().assert_outcomes(passed=6)
    again = workflow(project)
    assert again.returncode == 0
    assert "every cassette is up to date; nothing to record" in again.stdout


def test_a_record_mode_in_vcr_config_does_not_stop_the_workflow(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    # pytest-recording lets vcr_config's record_mode win over --record-mode: the replay run
    # would have recorded the missing cassette live, and the recording run recorded nothing.
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef vcr_config():\n    return {'record_mode': 'once'}\n"
    )
    pytester.makepyfile(test_mod=module(("fresh", "stale")))
    pytester.runpytest_subprocess().assert_outcomes(passed=2)
    pytester.makepyfile(test_mod=module(("fresh", "stale", "missing"), stale_prompt="stale v2"))
    sent = len(provider.requests)

    result = workflow(pytester)

    assert result.returncode == 0, result.stdout + result.stderr
    chosen = [line.strip() for line in result.stdout.splitlines() if line.startswith("  test_")]
    assert sorted(chosen) == ["test_mod.py::test_missing", "test_mod.py::test_stale"]
    prompts = [r.json()["messages"][0]["content"] for r in provider.requests[sent:]]
    assert sorted(prompts) == ["missing", "stale v2"], "each recorded once, in run 2"
    assert "stale v2" in (cassettes(pytester) / "test_stale.jsonl").read_text()


def test_only_and_dry_run(project: pytest.Pytester, provider: LocalProvider) -> None:
    folder = cassettes(project)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    sent = len(provider.requests)

    result = workflow(project, "--only", "expired,outdated", "--dry-run")

    assert result.returncode == 0, result.stdout + result.stderr
    chosen = [line.strip() for line in result.stdout.splitlines() if line.startswith("  test_")]
    assert sorted(chosen) == ["test_mod.py::test_expired", "test_mod.py::test_legacy"]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert len(provider.requests) == sent, "a dry run records nothing"


def test_the_replay_run_under_xdist_finds_what_needs_recording(
    project: pytest.Pytester, provider: LocalProvider
) -> None:
    # -n in the command (or in addopts): the findings are made on the workers. The
    # controller wrote an empty report, so the workflow said everything was up to date.
    result = workflow(project, "--dry-run", "-p", "xdist", "-n", "2")

    assert result.returncode == 0, result.stdout + result.stderr
    chosen = [line.strip() for line in result.stdout.splitlines() if line.startswith("  test_")]
    assert sorted(chosen) == [
        "test_mod.py::test_expired",
        "test_mod.py::test_legacy",
        "test_mod.py::test_missing",
        "test_mod.py::test_shrunk",
        "test_mod.py::test_stale",
    ]


def test_older_than_and_a_selection_of_tests(
    project: pytest.Pytester, provider: LocalProvider
) -> None:
    # Only test_fresh and test_expired are run; of those, only the 2020 cassette is that old.
    result = workflow(
        project, "--only", "missing", "--older-than", "365d", "-k", "fresh or expired"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    chosen = [line.strip() for line in result.stdout.splitlines() if line.startswith("  test_")]
    assert chosen == ["test_mod.py::test_expired"]


def test_a_cassette_recorded_again_for_its_age_is_not_chosen_again(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    # No max_age anywhere: only --older-than finds the cassette old. Recorded again with the
    # same answer, it kept its created_at, so every later run chose it again.
    pytester.makepyfile(test_mod=module(("fresh", "stale")))
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=2)
    folder = cassettes(pytester)
    age(folder / "test_stale.jsonl")
    fresh = (folder / "test_fresh.jsonl").read_bytes()

    result = workflow(pytester, "--older-than", "365d")

    assert result.returncode == 0, result.stdout + result.stderr
    chosen = [line.strip() for line in result.stdout.splitlines() if line.startswith("  test_")]
    assert chosen == ["test_mod.py::test_stale"]
    header = json.loads((folder / "test_stale.jsonl").read_text().splitlines()[0])
    assert header["created_at"] != OLD, "its age starts over"
    assert (folder / "test_fresh.jsonl").read_bytes() == fresh
    again = workflow(pytester, "--older-than", "365d")
    assert "every cassette is up to date; nothing to record" in again.stdout, again.stdout


def test_unknown_reason_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = workflow(pytester, "--only", "stale")
    assert result.returncode == 2
    assert "unknown --only reason(s) ['stale']" in result.stderr


def test_select_by_reason_and_age(tmp_path: Path) -> None:
    now = datetime.datetime(2026, 1, 31, tzinfo=datetime.timezone.utc)
    entries = [
        ReportEntry("t::ok", [], [{"path": "a", "created_at": "2026-01-30T00:00:00Z"}]),
        ReportEntry("t::old", [], [{"path": "b", "created_at": "2025-01-01T00:00:00Z"}]),
        ReportEntry("t::stale", ["mismatch"], [{"path": "c"}]),
        ReportEntry("t::unused", ["unused"], []),
    ]
    assert select(entries, now=now) == ["t::stale", "t::unused"]
    assert select(entries, ["unused"], older_than=86400 * 30, now=now) == ["t::old", "t::unused"]
    with pytest.raises(ValueError, match="unknown reason"):
        select(entries, ["stale"])

    report = tmp_path / "report.json"
    write_report(report, tmp_path, [vars(e) for e in entries])
    assert read_report(report) == entries
    assert set(REASONS) == {"missing", "mismatch", "unused", "expired", "outdated"}
