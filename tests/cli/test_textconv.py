"""`llmcassette show --textconv` as git's diff driver: `git diff` shows the readable change."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import Record, cli, read_records, write_records

from llmcassette import FORMAT_VERSION

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo),  # no user configuration of the machine gets in
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository set up as docs/cli.md says."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".gitattributes").write_text("*.jsonl diff=llmcassette\n")
    command = f"{shlex.quote(sys.executable)} -m llmcassette show --textconv"
    git(root, "config", "diff.llmcassette.textconv", command)
    return root


def test_git_diff_shows_the_changed_prompt_and_answer(repo: Path, record: Record) -> None:
    cassette = record(repo / "cassettes" / "test_chat.jsonl", ["Hi", "Yo"])
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first recording")
    cassette.unlink()  # recorded again, as --record-mode=rewrite does: the code changed a prompt
    record(cassette, ["Hi", "Yo, again"])
    diff = git(repo, "diff")
    changed = [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed == [
        '-  request.body.messages[0].content: "Yo"',
        '+  request.body.messages[0].content: "Yo, again"',
        '-  answer.text: "You said: Yo"',
        '+  answer.text: "You said: Yo, again"',
        "-  answer.usage.completion_tokens: 4",
        "+  answer.usage.completion_tokens: 6",
        "-  answer.usage.prompt_tokens: 1",
        "+  answer.usage.prompt_tokens: 3",
        "-  answer.usage.total_tokens: 5",
        "+  answer.usage.total_tokens: 9",
    ]
    assert "#2 POST http://127.0.0.1:" in diff  # the hunk's context names the interaction


def test_timing_only_changes_leave_git_diff_empty(repo: Path, record: Record) -> None:
    cassette = record(repo / "c.jsonl", ["Hi"])
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "recorded")
    records = read_records(cassette)
    for line in records:
        if "t" in line:
            line["t"] = line["t"] + 1.0
    write_records(cassette, records)
    assert git(repo, "diff") == ""
    assert '"t":' in git(repo, "diff", "--no-textconv")


def test_textconv_output_is_stable_and_has_no_timings(tmp_path: Path, record: Record) -> None:
    cassette = record(tmp_path / "c.jsonl", ["Hi"], tool_prompt="Paris")
    first = cli("show", "--textconv", cassette)
    assert first.returncode == 0
    assert first.stdout == cli("show", "--textconv", cassette).stdout
    text = first.stdout
    assert text.startswith(f"llmcassette cassette, format_version {FORMAT_VERSION}\n")
    assert '  answer.text: "You said: Hi"' in text
    assert '  answer.tool_calls[0].arguments.city: "Paris"' in text
    assert '  answer.tool_calls[0].name: "get_weather"' in text
    assert "  stream.events: 7" in text
    assert "created_at" not in text
    assert "recorded_at" not in text
    assert "first_event" not in text
    assert "date:" not in text


def test_textconv_never_fails_the_diff(tmp_path: Path) -> None:
    other = tmp_path / "data.jsonl"
    other.write_text('{"not": "a cassette"}\n')
    result = cli("show", "--textconv", other)
    assert result.returncode == 0
    assert result.stdout.startswith("(not rendered by llmcassette: ")
    assert result.stdout.endswith('{"not": "a cassette"}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli("show", "--textconv", empty).stdout == ""


def test_git_difftool_runs_llmcassette_diff_on_two_revisions(repo: Path, record: Record) -> None:
    cassette = record(repo / "c.jsonl", ["Hi", "Yo"])
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    cassette.unlink()
    record(cassette, ["Hi", "Hey"])
    git(repo, "commit", "-q", "-am", "second")
    command = f"{shlex.quote(sys.executable)} -m llmcassette diff --color never"
    out = git(repo, "difftool", "-y", "-x", command, "HEAD~1", "HEAD", "--", "c.jsonl")
    assert "~ #2 POST http://127.0.0.1:" in out
    assert "request.body.messages[0].content: 'Yo' -> 'Hey'" in out
    assert "llmcassette diff: different: 1 changed, 0 removed, 0 added, 1 same" in out
