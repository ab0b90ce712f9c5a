"""`llmcassette diff`: what changed between two recordings, named by path."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_support import Record, cli, read_records, write_records

from llmcassette.cli.main import main


def test_two_recordings_of_the_same_traffic_are_equivalent(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    a = record(tmp_path / "a.jsonl")
    b = record(tmp_path / "b.jsonl")
    records = read_records(b)
    records[0]["created_at"] = "2020-01-01T00:00:00Z"  # volatile: ignored unless --all
    write_records(b, records)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "llmcassette diff: equivalent: 0 changed, 0 removed, 0 added, 2 same" in out
    assert main(["diff", "--all", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "~ header.created_at: " in out
    assert "-> '2020-01-01T00:00:00Z'" in out


def test_changed_prompt_answer_and_added_interaction_are_named_by_path(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    a = record(tmp_path / "a.jsonl", ["Hi", "Yo"])
    b = record(tmp_path / "b.jsonl", ["Hello", "Yo", "More"])
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "request.body.messages[0].content: 'Hi' -> 'Hello'" in out
    assert "answer.text: 'You said: Hi' -> 'You said: Hello'" in out
    assert "+ #3 POST http://127.0.0.1:" in out
    assert f"(only in {b})" in out
    assert "1 changed, 0 removed, 1 added, 1 same" in out

    assert main(["diff", "--json", str(a), str(b)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["equivalent"] is False
    assert report["counts"] == {"same": 1, "changed": 1, "removed": 0, "added": 1}
    changed, same, added = report["interactions"]
    assert (changed["status"], changed["a"], changed["b"]) == ("changed", 1, 1)
    paths = {d["path"]: (d.get("a"), d.get("b")) for d in changed["differences"]}
    assert paths["request.body.messages[0].content"] == ("Hi", "Hello")
    assert paths["answer.text"] == ("You said: Hi", "You said: Hello")
    assert (same["status"], same["a"], same["b"], same["differences"]) == ("same", 2, 2, [])
    assert (added["status"], added["a"], added["b"]) == ("added", None, 3)

    # The other way round the third interaction is only in A.
    assert main(["diff", "--json", str(b), str(a)]) == 1
    removed = json.loads(capsys.readouterr().out)["interactions"][-1]
    assert (removed["status"], removed["a"], removed["b"]) == ("removed", 3, None)


def test_tool_call_arguments_status_and_event_counts(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    a = record(tmp_path / "a.jsonl", ["Hi"], tool_prompt="Paris")
    b = record(tmp_path / "b.jsonl", ["Hi"], tool_prompt="Rome")
    records = read_records(b)
    response = next(r for r in records if r.get("type") == "response")
    response["status"] = 500  # the streamed call answered with an error this time
    events = [n for n, r in enumerate(records) if r.get("type") == "event"]
    del records[events[-2]]  # one event fewer: the end line must say so
    next(r for r in records if r.get("type") == "end")["events"] -= 1
    write_records(b, records)
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "response.status: 200 -> 500" in out
    assert "stream.events: 7 -> 6" in out
    assert "answer.tool_calls[0].arguments.city: 'Paris' -> 'Rome'" in out
    assert "request.body.messages[0].content: 'Paris' -> 'Rome'" in out


def test_redaction_placeholders_are_not_differences(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    a = record(tmp_path / "a.jsonl")
    records = read_records(a)
    request = next(r for r in records if r.get("type") == "request")
    assert request["headers"]["authorization"] == "Bearer <REDACTED:bearer-token>"
    request["headers"]["authorization"] = "Bearer <REDACTED:bearer-token:2>"
    b = tmp_path / "b.jsonl"
    write_records(b, records)
    assert main(["diff", str(a), str(b)]) == 0
    assert main(["diff", "--all", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "request.headers.authorization: 'Bearer <REDACTED:bearer-token>' -> " in out


def test_exit_codes_and_bad_input_named_with_its_line(tmp_path: Path, record: Record) -> None:
    a = record(tmp_path / "a.jsonl")
    b = record(tmp_path / "b.jsonl", ["Hi", "Changed"])
    assert cli("diff", a, a).returncode == 0
    assert cli("diff", a, b).returncode == 1
    broken = tmp_path / "broken.jsonl"
    lines = a.read_text().splitlines()
    lines[2] = lines[2][:40]  # line 3 cut in the middle
    broken.write_text("\n".join(lines) + "\n")
    result = cli("diff", a, broken)
    assert result.returncode == 2
    assert f"{broken}:3: line is not valid JSON" in result.stderr
    assert result.stdout == ""
    empty = tmp_path / "empty.jsonl"  # git difftool's side of an added cassette
    empty.write_text("")
    added = cli("diff", empty, a)
    assert added.returncode == 1
    assert added.stdout.splitlines()[2:] == [
        f"+ #1 POST {read_records(a)[1]['uri']} (only in {a})",
        f"+ #2 POST {read_records(a)[1]['uri']} (only in {a})",
        "llmcassette diff: different: 0 changed, 0 removed, 2 added, 0 same interaction(s)",
    ]
    missing = cli("diff", a, tmp_path / "missing.jsonl")
    assert missing.returncode == 2
    assert "missing.jsonl: cannot read" in missing.stderr


def _run_in_pty(args: list[str], env: dict[str, str]) -> str:
    """Run the CLI with its stdout on a pseudo-terminal; return what it wrote there."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "llmcassette", *args],
            stdout=follower,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
    finally:
        os.close(leader)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_and_as_the_environment_says(
    tmp_path: Path, record: Record
) -> None:
    a = record(tmp_path / "a.jsonl", ["Hi"])
    b = record(tmp_path / "b.jsonl", ["Ho"])
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    args = ["diff", str(a), str(b)]
    assert "\x1b[" in _run_in_pty(args, env)
    assert "\x1b[" not in _run_in_pty(args, {**env, "NO_COLOR": "1"})
    assert "\x1b[" not in _run_in_pty([*args, "--color", "never"], env)
    piped = subprocess.run(
        [sys.executable, "-m", "llmcassette", *args], capture_output=True, text=True, env=env
    )
    assert piped.returncode == 1
    assert "\x1b[" not in piped.stdout
    assert "request.body.messages[0].content: 'Hi' -> 'Ho'" in piped.stdout
    forced = subprocess.run(
        [sys.executable, "-m", "llmcassette", *args],
        capture_output=True,
        text=True,
        env={**env, "FORCE_COLOR": "1"},
    )
    assert "\x1b[33mrequest.body.messages[0].content: 'Hi' -> 'Ho'\x1b[0m" in forced.stdout
    always = cli(*args, "--color", "always", env={"NO_COLOR": "1"})
    assert "\x1b[" in always.stdout  # an explicit --color wins over the environment
    shown = _run_in_pty(["show", str(a)], env)
    assert "\x1b[1m#1 POST http://127.0.0.1:" in shown


def _sse_cassette(path: Path, ticks: list[int]) -> Path:
    from llmcassette.cassette import jsonl as cassette_file

    body = "".join(f'event: tick\ndata: {{"n": {n}}}\n\n' for n in ticks).encode()
    item = cassette_file.Interaction(
        method="GET",
        uri="http://127.0.0.1:1/events",
        request_headers={},
        request_body=None,
        status=200,
        reason="OK",
        response_headers={"content-type": ["text/event-stream"]},
        response_body=body,
    )
    header = cassette_file.new_header("test", "2026-01-01T00:00:00Z")
    path.write_text(cassette_file.write(cassette_file.Cassette(header, [item])))
    return path


def test_streams_of_other_apis_are_compared_event_by_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _sse_cassette(tmp_path / "a.jsonl", [1, 2, 3])
    b = _sse_cassette(tmp_path / "b.jsonl", [1, 5, 3, 4])
    assert main(["diff", str(a), str(a)]) == 0
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "stream.events: 3 -> 4" in out
    assert "stream.data[1].data.n: 2 -> 5" in out
    assert "stream.data[3]: (absent) -> {'event': 'tick', 'data': {'n': 4}}" in out
