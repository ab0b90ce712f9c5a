"""`llmcassette show` and `diff` on cassettes with sessions: one heading per session, and
diff pairs interactions within a session before it pairs them across sessions."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path

import openai
import pytest
from _cli_support import read_records, write_records

import llmcassette
from llmcassette.cli.main import main
from llmcassette.testing import LocalProvider

# (session or None, prompt) in the order the calls are made.
Calls = Sequence[tuple[str | None, str]]


def record(provider: LocalProvider, path: Path, calls: Calls) -> Path:
    """One OpenAI SDK call per entry, each inside its ``llmcassette.session`` (if named;
    ``"p/c"`` is session ``c`` inside session ``p``). A new client for each call, so no
    cookie the provider set for one agent's call reaches another's request."""
    with llmcassette.use_cassette(path.with_suffix("")):
        for label, prompt in calls:
            client = openai.OpenAI(base_url=provider.openai_base_url, api_key="k", max_retries=0)
            with contextlib.ExitStack() as stack:
                for name in label.split("/") if label else []:
                    stack.enter_context(llmcassette.session(name))
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
                )
    return path


def shown(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().out


def test_show_lists_interactions_under_one_heading_per_session(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record(
        provider,
        tmp_path / "c.jsonl",
        [("critic", "Go"), (None, "Plain"), ("editor", "Go"), ("critic", "More"), ("p/c", "Sub")],
    )
    code, out = shown(capsys, "show", path)
    assert code == 0
    headings = [line for line in out.splitlines() if line.startswith("==")]
    # First appearance order; unlabelled interactions under the name use_cassette uses.
    assert headings == [
        "== session 'critic': 2 interactions ==",
        "== (no session): 1 interaction ==",
        "== session 'editor': 1 interaction ==",
        "== session 'p/c': 1 interaction ==",
    ]
    # Each interaction keeps its number in the file, under its session's heading.
    firsts = [line.split(" ")[0] for line in out.splitlines() if line.startswith(("#", "=="))]
    assert firsts == ["==", "#1", "#4", "==", "#2", "==", "#3", "==", "#5"]
    assert "  user: More" in out.split("== (no session)")[0]
    assert "  session:" not in out  # the heading says it once

    code, out = shown(capsys, "show", "--json", path)
    document = json.loads(out)
    assert document["sessions"] == [
        {"session": "critic", "interactions": [1, 4]},
        {"session": None, "interactions": [2]},
        {"session": "editor", "interactions": [3]},
        {"session": "p/c", "interactions": [5]},
    ]
    # The interactions themselves stay in file order, each naming its session.
    assert [item["session"] for item in document["interactions"]] == [
        "critic",
        None,
        "editor",
        "critic",
        "p/c",
    ]


def test_show_without_sessions_has_no_headings_and_no_sessions_field(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record(provider, tmp_path / "c.jsonl", [(None, "Hi"), (None, "Yo")])
    code, out = shown(capsys, "show", path)
    assert code == 0
    assert out.startswith("#1 POST http://127.0.0.1:")
    assert "==" not in out
    assert "session" not in out
    assert "\n\n#2 POST " in out
    code, out = shown(capsys, "show", "--json", path)
    assert "sessions" not in json.loads(out)


def test_diff_pairs_identical_requests_within_their_session(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same two agents, started in the other order: by position alone #1 would pair
    # with #1 and each agent's conversation would look changed.
    a = record(provider, tmp_path / "a.jsonl", [("a", "Go"), ("b", "Go"), ("a", "A2"), ("b", "B2")])
    b = record(provider, tmp_path / "b.jsonl", [("b", "Go"), ("a", "Go"), ("b", "B2"), ("a", "A2")])
    code, out = shown(capsys, "diff", a, b)
    assert code == 0, out
    assert out.splitlines()[-1] == (
        "llmcassette diff: equivalent: 0 changed, 0 removed, 0 added, 4 same interaction(s)"
    )
    code, out = shown(capsys, "diff", "--json", a, b)
    pairs = [(i["session"], i["a"], i["b"]) for i in json.loads(out)["interactions"]]
    assert pairs == [("a", 1, 2), ("a", 3, 4), ("b", 2, 1), ("b", 4, 3)]

    # One agent's answer changed: listed under its session, named by path.
    records = read_records(b)
    responses = [line for line in records if line.get("type") == "response"]
    responses[2]["body"]["json"]["choices"][0]["message"]["content"] = "Other"  # b's #3
    write_records(b, records)
    code, out = shown(capsys, "diff", a, b)
    assert code == 1
    lines = out.splitlines()
    assert lines[2:5] == [
        "== session 'b' ==",
        f"~ #4 -> #3 POST {provider.openai_base_url}/chat/completions",
        "    answer.text: 'You said: B2' -> 'Other'",
    ]


def test_diff_pairs_across_sessions_only_the_same_request(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    a = record(provider, tmp_path / "a.jsonl", [("critic", "Go"), ("critic", "Check")])
    # "critic" renamed "reviewer", and its second prompt changed.
    b = record(provider, tmp_path / "b.jsonl", [("reviewer", "Go"), ("reviewer", "Review")])
    code, out = shown(capsys, "diff", a, b)
    assert code == 1
    url = f"{provider.openai_base_url}/chat/completions"
    assert out.splitlines()[2:] == [
        "== session 'critic' ==",
        f"- #2 POST {url} (only in {a})",
        "== session 'reviewer' ==",
        # The same request in another session: paired, the session is the difference.
        f"~ #1 POST {url}",
        "    request.session: 'critic' -> 'reviewer'",
        # A changed prompt is not paired with another session's turn by endpoint.
        f"+ #2 POST {url} (only in {b})",
        "llmcassette diff: different: 1 changed, 1 removed, 1 added, 0 same interaction(s)",
    ]


def test_diff_of_sessions_added_to_an_unlabelled_recording(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    a = record(provider, tmp_path / "a.jsonl", [(None, "Go"), (None, "Go"), (None, "Done")])
    b = record(provider, tmp_path / "b.jsonl", [("x", "Go"), ("y", "Go"), (None, "Done")])
    code, out = shown(capsys, "diff", "--json", a, b)
    assert code == 1
    interactions = json.loads(out)["interactions"]
    found = [
        (i["session"], i["status"], i["a"], i["b"], [d["path"] for d in i["differences"]])
        for i in interactions
    ]
    assert found == [
        (None, "same", 3, 3, []),
        ("x", "changed", 1, 1, ["request.session"]),
        ("y", "changed", 2, 2, ["request.session"]),
    ]
    assert [d.get("a", "absent") for i in interactions[1:] for d in i["differences"]] == [
        "absent",
        "absent",
    ]


def test_diff_without_sessions_has_no_headings_and_no_session_fields(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    a = record(provider, tmp_path / "a.jsonl", [(None, "Hi"), (None, "Yo")])
    b = record(provider, tmp_path / "b.jsonl", [(None, "Hello"), (None, "Yo")])
    code, out = shown(capsys, "diff", a, b)
    assert code == 1
    assert out.splitlines()[2].startswith("~ #1 POST ")
    assert not any(line.startswith("==") for line in out.splitlines())
    assert "request.session" not in out
    code, out = shown(capsys, "diff", "--json", a, b)
    assert all("session" not in item for item in json.loads(out)["interactions"])


def test_textconv_shows_the_session(
    tmp_path: Path, provider: LocalProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record(provider, tmp_path / "c.jsonl", [("critic", "Go"), (None, "Plain")])
    code, out = shown(capsys, "show", "--textconv", path)
    assert code == 0
    blocks = out.split("\n\n")
    assert '  request.session: "critic"' in blocks[1].splitlines()
    assert "session" not in blocks[2]
