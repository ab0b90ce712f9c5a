"""JSON nested thousands of levels deep, in a request, a response or a vcrpy cassette.

Python's recursion stops at 1000 calls: the parser and every walker over a body (the
redactor, the fail-closed scan, the canonical form, placeholders) raised a bare
RecursionError. A body deeper than ``jsontext.MAX_BODY_DEPTH`` is now read as text; the
scan, which cannot read what it holds as JSON, refuses it when a rule might match there.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

import llmcassette
from llmcassette.cassette import jsontext
from llmcassette.cli.main import main
from llmcassette.errors import TOO_DEEP_JSON, SecretLeakError
from llmcassette.matching import canonical
from llmcassette.redact import scan
from llmcassette.redact.rules import Rules
from llmcassette.testing import LocalProvider

DEPTH = 5000
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-test"}


def nested(inner: str, depth: int = DEPTH) -> str:
    return "[" * depth + inner + "]" * depth


def chat_body(deep: str) -> bytes:
    messages = '[{"role": "user", "content": "hi"}]'
    return f'{{"model": "gpt-4o-mini", "messages": {messages}, "metadata": {deep}}}'.encode()


def test_a_deep_body_with_nothing_secret_records_as_text_and_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # 2000 levels: past Python's recursion, and short enough for the scan to search (a text
    # of 8192 characters or more counts as one a rule might match: refused as below).
    body = chat_body(nested('"x"', 2000))
    with LocalProvider() as provider:
        url = f"{provider.url}/v1/chat/completions"
        with llmcassette.use_cassette("deep.jsonl", record_errors=True), httpx.Client() as c:
            recorded = c.post(url, content=body, headers=HEADERS)
        lines = [json.loads(line) for line in Path("deep.jsonl").read_text().splitlines()]
        assert lines[1]["body"] == {"text": body.decode()}  # the request, kept as its text
        with (
            llmcassette.use_cassette("deep.jsonl", record_mode="none"),
            httpx.Client() as client,
        ):
            replayed = client.post(url, content=body, headers=HEADERS)
    assert replayed.status_code == recorded.status_code
    assert replayed.content == recorded.content


def test_a_deep_body_the_scan_cannot_read_is_refused_by_name_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    body = chat_body(nested('{"api_key": "hunter2-hunter2-hunter2"}'))
    with (
        LocalProvider() as provider,
        pytest.raises(SecretLeakError) as raised,
        llmcassette.use_cassette("deep.jsonl", record_errors=True),
        httpx.Client() as client,
    ):
        client.post(f"{provider.url}/v1/chat/completions", content=body, headers=HEADERS)
    assert not Path("deep.jsonl").exists()
    assert raised.value.rule == TOO_DEEP_JSON
    message = str(raised.value)
    assert message.startswith("deep.jsonl:2: refusing to write the cassette: body.text nests")
    assert "deeper than llmcassette reads JSON (100 levels in a body" in message
    assert "send a shallower body" in message
    assert "hunter2" not in message


def test_converting_a_vcrpy_cassette_with_a_deep_body_is_refused_with_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    deep = '{"model": "m", "x": ' + nested('{"password": "a"}') + "}"
    interaction = {
        "request": {
            "method": "POST",
            "uri": "http://127.0.0.1:9/v1/chat/completions",
            "body": deep,
            "headers": {"content-type": ["application/json"]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": deep},
        },
    }
    Path("deep.yaml").write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    assert main(["convert", "deep.yaml"]) != 0
    assert main(["check", "deep.yaml"]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert "deep.yaml: cannot convert: deep.yaml:2: refusing to write the cassette" in out.err
    assert "deep.yaml:3: interactions[0].request.body: arrays and objects nest deeper" in out.out
    assert not Path("deep.jsonl").exists()


def test_the_scan_refuses_a_line_or_a_string_it_cannot_read() -> None:
    rules = Rules()
    deep_line = '{"type": "request", "x": ' + nested('"api_key"') + "}"
    assert [f.rule for f in scan.find_in_jsonl(rules, deep_line, "c.jsonl")] == [TOO_DEEP_JSON]
    held = '{"type": "request", "body": {"text": "' + nested('{\\"api_key\\": 1}') + '"}}'
    found = scan.find_in_jsonl(rules, held, "c.jsonl")
    assert [(f.json_path, f.rule) for f in found] == [("body.text", TOO_DEEP_JSON)]


def test_walkers_read_a_deep_body_as_text() -> None:
    text = nested('"x"')
    assert jsontext.parse_exact(text) is None
    assert jsontext.parse_exact(nested('"x"', jsontext.MAX_BODY_DEPTH)) is not None
    with pytest.raises(jsontext.TooDeep):
        jsontext.loads_body(text)
    with pytest.raises(jsontext.TooDeep):  # parses, but deeper than the walkers go
        jsontext.loads_body(nested('"x"', 500))
    deep: object = "x"
    for _ in range(DEPTH):
        deep = [deep]
    assert list(jsontext.strings_in(deep)) == ["x"]
    assert canonical._parse(text.encode(), False, None) == text
