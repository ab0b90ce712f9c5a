"""Re-recording unchanged traffic changes no line, whatever order the calls finished in.

Concurrent calls finish in another order each run; clients are numbered in the order of
their first call and placeholders in the order the redactor meets their values. A
re-recording keeps the previous file's order, client numbers and placeholder numbers for
the interactions it repeats (``llmcassette.cassette.jsonl.write``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

import llmcassette
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.cassette.redacted import renumbering, unnumbered
from llmcassette.testing import LocalProvider


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def record(provider: LocalProvider, path: Path, order: list[int]) -> None:
    """One streamed call from each of three clients, the clients calling in ``order`` (as
    concurrent agents would finish in some order). Each answer sets a cookie."""
    clients = [
        openai.OpenAI(
            base_url=provider.openai_base_url, api_key=f"sk-proj-{n}" + "a" * 40, max_retries=0
        )
        for n in range(3)
    ]
    with llmcassette.use_cassette(str(path), record_mode="all"):
        for n in order:
            stream = clients[n].chat.completions.create(
                model="local-model",
                messages=[{"role": "user", "content": f"agent {n}"}],
                stream=True,
            )
            assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def test_an_unchanged_re_recording_in_another_order_changes_no_line(
    provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "agents.jsonl"
    record(provider, path, [0, 1, 2])
    first = path.read_text()
    records = [json.loads(line) for line in first.splitlines()]
    assert [r["client"] for r in records if r.get("type") == "request"] == [1, 2, 3]
    assert sum("<REDACTED:cookie" in line for line in first.splitlines()) >= 3

    record(provider, path, [2, 0, 1])
    assert path.read_text() == first

    # and it replays in yet another order
    record_none = llmcassette.use_cassette(str(path), record_mode="none")
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk", max_retries=0)
    with record_none:
        for n in (1, 2, 0):
            stream = client.chat.completions.create(
                model="local-model",
                messages=[{"role": "user", "content": f"agent {n}"}],
                stream=True,
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert f"agent {n}" in text


def test_a_changed_call_keeps_the_others_in_place(provider: LocalProvider, tmp_path: Path) -> None:
    path = tmp_path / "agents.jsonl"
    record(provider, path, [0, 1])
    before = path.read_text().splitlines()
    record(provider, path, [2, 1])  # agent 0 gone, agent 2 new, agent 1 unchanged
    after = path.read_text().splitlines()
    requests = [json.loads(line) for line in after if '"type":"request"' in line]
    # the new call comes where it was made now: before the one it was made before
    assert [r["body"]["json"]["messages"][0]["content"] for r in requests] == ["agent 2", "agent 1"]
    unchanged = [line for line in before if "agent 1" in line]
    assert unchanged
    assert all(line in after for line in unchanged)


def _sse_item(prompt: str, answer: str, client: int | None = None) -> Interaction:
    return Interaction(
        "POST",
        "https://api.example/v1/chat",
        {"content-type": ["application/json"]},
        json.dumps({"q": prompt}).encode(),
        200,
        "OK",
        {"content-type": ["application/json"]},
        json.dumps({"a": answer}).encode(),
        client=client,
    )


def _requests_and_answers(text: str) -> list[tuple[str, str]]:
    records = [json.loads(line) for line in text.splitlines()[1:]]
    return [
        (r["body"]["json"]["q"], s["body"]["json"]["a"])
        for r, s in itertools.pairwise(records)
        if r["type"] == "request"
    ]


def test_identical_requests_keep_the_order_they_were_made_in_now() -> None:
    # Replay answers identical requests in their recorded order: a poll that said
    # "pending" then "done" must not become "done" then "pending".
    header = cassette_file.new_header("t")
    old_text = cassette_file.write(
        Cassette(
            header,
            [_sse_item("poll", "done"), _sse_item("other", "x"), _sse_item("poll", "pending")],
        )
    )
    previous = cassette_file.read(old_text.encode(), "p.jsonl")
    again = [_sse_item("poll", "pending"), _sse_item("poll", "done"), _sse_item("other", "x")]
    text = cassette_file.write(Cassette(header, again), previous)
    assert _requests_and_answers(text) == [("poll", "pending"), ("other", "x"), ("poll", "done")]


def test_client_numbers_are_renamed_one_for_one() -> None:
    header = cassette_file.new_header("t")
    old = [
        _sse_item("a", "1", client=1),
        _sse_item("b", "2", client=2),
        _sse_item("a2", "3", client=1),
    ]
    previous = cassette_file.read(cassette_file.write(Cassette(header, old)).encode(), "p.jsonl")
    # client numbers swapped (the other client called first this time), and a third client
    again = [
        _sse_item("b", "2", client=1),
        _sse_item("c", "4", client=3),
        _sse_item("a", "1", client=2),
        _sse_item("a2", "3", client=2),
    ]
    records = [
        json.loads(line)
        for line in cassette_file.write(Cassette(header, again), previous).splitlines()[1:]
    ]
    clients = [(r["body"]["json"]["q"], r["client"]) for r in records if r["type"] == "request"]
    assert clients == [("a", 1), ("b", 2), ("c", 3), ("a2", 1)]


def test_renumbering_placeholders() -> None:
    rename = renumbering(
        [
            ("<REDACTED:cookie:2> x", "<REDACTED:cookie> x"),
            ("<REDACTED:cookie>", "<REDACTED:cookie:2>"),
        ],
        ["<REDACTED:cookie> <REDACTED:cookie:2> <REDACTED:cookie:3> <REDACTED:jwt:2>"],
    )
    assert rename is not None
    assert (
        rename("a=<REDACTED:cookie:2>;b=<REDACTED:cookie>")
        == "a=<REDACTED:cookie>;b=<REDACTED:cookie:2>"
    )
    assert rename("<REDACTED:cookie:3> <REDACTED:jwt:2>") == "<REDACTED:cookie:3> <REDACTED:jwt:2>"
    assert rename("no placeholder") == "no placeholder"
    # an unmatched placeholder whose number a renamed one took gets the lowest free one
    rename = renumbering([("<REDACTED:cookie:2>", "<REDACTED:cookie>")], ["<REDACTED:cookie>"])
    assert rename is not None
    assert rename("<REDACTED:cookie>") == "<REDACTED:cookie:2>"
    # the same placeholder in the place of two old ones: no renaming at all
    assert renumbering([("<REDACTED:k> <REDACTED:k>", "<REDACTED:k> <REDACTED:k:2>")], []) is None
    # nothing to rename
    assert renumbering([("<REDACTED:k>", "<REDACTED:k>")], ["<REDACTED:k:2>"]) is None
    assert unnumbered("<REDACTED:a-b.c:12> <REDACTED:x>") == "<REDACTED:a-b.c> <REDACTED:x>"
