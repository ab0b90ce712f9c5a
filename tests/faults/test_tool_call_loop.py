"""A tool-call loop whose code makes up a random id the model must echo, replayed many times.

The recording holds the id of the day it was recorded. ``match={"volatile": ["uuid"]}``
lets requests with a fresh id match, and a sidecar turns the recorded id in both answers
into ``{{fromRequest:...}}`` so the replayed model echoes the id of this run.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import openai
import pytest

import llmcassette
from llmcassette.testing import LocalProvider

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_ticket",
            "parameters": {
                "type": "object",
                "properties": {"ticket_id": {"type": "string"}},
                "required": ["ticket_id"],
            },
        },
    }
]
TICKET = "{{fromRequest:ticket ([0-9a-f-]{36})}}"


def agent(client: openai.OpenAI) -> tuple[str, str]:
    """Ask about a fresh ticket, run the tool the model calls, return (ticket, final answer)."""
    ticket = str(uuid.uuid4())
    messages: list[Any] = [{"role": "user", "content": f"Look up ticket {ticket}"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    asked = json.loads(call.function.arguments)["ticket_id"]  # type: ignore[union-attr]
    if ticket not in asked:
        raise AssertionError(f"the model asked about another ticket: {asked!r}")
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": f"ticket {ticket}: open"})
    final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    return ticket, final.choices[0].message.content or ""


def test_the_loop_replays_with_a_new_id_every_run(provider: LocalProvider, tmp_path: Path) -> None:
    path = tmp_path / "tool_loop.jsonl"
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test")
    match = {"volatile": ["uuid"]}
    with llmcassette.use_cassette(path, match=match):
        recorded_ticket, answer = agent(client)
    assert recorded_ticket in answer

    # Without placeholders the replayed model echoes the recorded id: the loop breaks.
    with (
        pytest.raises(AssertionError, match="another ticket"),
        llmcassette.use_cassette(path, record_mode="none", match=match),
    ):
        agent(client)

    sidecar = path.with_name("tool_loop.overrides.json")
    sidecar.write_text(
        json.dumps(
            {
                "entries": [
                    {"at": 0, "replace": {recorded_ticket: TICKET}},
                    {"at": 1, "replace": {recorded_ticket: TICKET}},
                ]
            }
        )
    )
    seen = len(provider.requests)
    for _ in range(3):
        with llmcassette.use_cassette(path, record_mode="none", match=match) as cassette:
            ticket, answer = agent(client)
        assert ticket != recorded_ticket
        assert answer == f"The tool returned: ticket {ticket}: open"
        assert llmcassette.check_unused(cassette) is None
    assert len(provider.requests) == seen


def test_placeholders_written_into_the_cassette_work_too(
    provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "tool_loop.jsonl"
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test")
    match = {"volatile": ["uuid"]}
    with llmcassette.use_cassette(path, match=match):
        recorded_ticket, _ = agent(client)
    # Edited by hand: the cassette is readable JSON, one line per request and response.
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(
        "".join(
            line if '"request"' in line[:20] else line.replace(recorded_ticket, TICKET)
            for line in lines
        )
    )
    with llmcassette.use_cassette(path, record_mode="none", match=match):
        ticket, answer = agent(client)
    assert ticket in answer


def test_a_placeholder_that_matches_nothing_names_the_cassette(
    provider: LocalProvider, tmp_path: Path
) -> None:
    path = tmp_path / "tool_loop.jsonl"
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0)
    match = {"volatile": ["uuid"]}
    with llmcassette.use_cassette(path, match=match):
        recorded_ticket, _ = agent(client)
    path.with_name("tool_loop.overrides.json").write_text(
        json.dumps(
            {"entries": [{"at": 0, "replace": {recorded_ticket: "{{fromRequest:order (\\d+)}}"}}]}
        )
    )
    with (
        pytest.raises(llmcassette.errors.PlaceholderError) as raised,
        llmcassette.use_cassette(path, record_mode="none", match=match),
    ):
        agent(client)
    cause = raised.value
    assert re.search(
        r"tool_loop\.jsonl: interaction #1 \(at 0 in entries\[0\] of .*\), body: ", str(cause)
    )
    assert "matches nothing in the request's body" in str(cause)


def _ask_ticket(client: openai.OpenAI, ticket: str, stream: bool) -> None:
    answer = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"ticket {ticket}"}],
        stream=stream,
    )
    if stream:
        list(answer)


@pytest.mark.parametrize("stream", [False, True])
def test_text_to_replace_that_is_not_there_says_where_to_look(
    provider: LocalProvider, tmp_path: Path, stream: bool
) -> None:
    # A streamed answer holds the ticket in pieces ("5f0c8a6e", "-", "3b7e", ...): the
    # error said "the cassette was probably recorded again" of a cassette just recorded.
    path = tmp_path / "echo.jsonl"
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0)
    match = {"volatile": ["uuid"]}
    ticket = str(uuid.uuid4())
    with llmcassette.use_cassette(path, match=match):
        _ask_ticket(client, ticket, stream)
    old = ticket if stream else "no such text"
    path.with_name("echo.overrides.json").write_text(
        json.dumps({"entries": [{"at": 0, "replace": {old: TICKET}}]})
    )
    with (
        pytest.raises(llmcassette.errors.FaultError) as raised,
        llmcassette.use_cassette(path, record_mode="none", match=match),
    ):
        _ask_ticket(client, str(uuid.uuid4()), stream)
    message = str(raised.value)
    assert "probably recorded again" not in message
    assert f"llmcassette show --raw {path}" in message
    if stream:
        assert "is not in any event of the recorded stream" in message
        assert "text is replaced within one event" in message
    else:
        assert "the replace text ('no such text') is not in the recorded response" in message
