"""A secret written as a JSON object's key, or as a header's name, is redacted like one
written as a value: keys reach the cassette as much as values do."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette._vcr import serializer as jsonl
from llmcassette._vcr.persister import Persister
from llmcassette.redact import Redactor
from llmcassette.testing import LocalProvider

from .test_rules import ANTHROPIC, OPENAI
from .test_scan_independent import GOOGLE, LOCATIONS

AUTH = {"authorization": "Bearer sk-test"}  # not the key in the body: not a known value
KEYED = [
    "a key of a request JSON object",
    "a key of JSON text held in a string",
    "a response header's name",
    "a key of a streamed event",
]


@pytest.mark.parametrize("location", KEYED)
def test_a_key_that_is_a_secret_is_replaced_by_its_placeholder(
    location: str, tmp_path: Path
) -> None:
    cassette_dict, _ = LOCATIONS[location]
    path = tmp_path / "keys.jsonl"
    Persister(redactor=Redactor(environ={})).save_cassette(path, cassette_dict, serializer=jsonl)
    text = path.read_text()
    for secret in (OPENAI, ANTHROPIC, GOOGLE):
        assert secret not in text
    assert "<REDACTED:" in text


def test_an_event_key_is_renamed_in_place_and_order_kept() -> None:
    events = [{"data": {"id": "1", "usage": {ANTHROPIC: 1, "total": 2}, "last": [{OPENAI: 0}]}}]
    Redactor(environ={}).events(events)
    assert events == [
        {
            "data": {
                "id": "1",
                "usage": {"<REDACTED:anthropic-api-key>": 1, "total": 2},
                "last": [{"<REDACTED:openai-api-key>": 0}],
            }
        }
    ]


def test_a_request_with_a_secret_key_replays_from_its_redacted_recording(tmp_path: Path) -> None:
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Which key is primary?"}],
        "metadata": {OPENAI: "primary"},
    }
    with LocalProvider() as provider:
        url = f"{provider.openai_base_url}/chat/completions"
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            recorded = httpx.post(url, json=body, headers=AUTH).json()
    text = (tmp_path / "c.jsonl").read_text()
    assert OPENAI not in text
    request = json.loads(text.splitlines()[1])
    assert request["body"]["json"]["metadata"] == {"<REDACTED:openai-api-key>": "primary"}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        assert httpx.post(url, json=body, headers=AUTH).json() == recorded  # provider gone


def test_a_cookie_in_a_headers_object_of_a_body_is_redacted_by_its_header_name(
    tmp_path: Path,
) -> None:
    # An agent's fetch tool hands the model the headers of a page it read: the fail-closed
    # scan reads a "headers" object by header name, so redaction does too (the save was
    # refused, its error naming json_keys = ["set-cookie"] as the way out).
    cookie = "sid=9f8a7b6c5d4e3f2a; Path=/"
    page = {"status": 200, "headers": {"set-cookie": cookie, "content-type": "text/html"}}
    body = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "Fetch the page."},
            {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(page)},
        ],
    }
    with LocalProvider() as provider:
        url = f"{provider.openai_base_url}/chat/completions"
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            httpx.post(url, json=body, headers=AUTH)
    text = (tmp_path / "c.jsonl").read_text()
    assert "9f8a7b6c5d4e3f2a" not in text  # nor in the answer, which echoes the page
    request = json.loads(text.splitlines()[1])
    stored = json.loads(request["body"]["json"]["messages"][1]["content"])
    assert stored["headers"]["set-cookie"] == "sid=<REDACTED:cookie>; Path=/"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replayed = httpx.post(url, json=body, headers=AUTH).json()  # provider gone
    assert "sid=<REDACTED:cookie>" in replayed["choices"][0]["message"]["content"]
