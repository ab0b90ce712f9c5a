"""Cassettes redacted by an older rules version: what the commands write or print of them.

Rules version 1 missed RS256 JWTs and camelCase keys (``accessToken``). A command that
writes such a cassette writes it as a recording would (redacted again, then the
fail-closed scan); one that prints it prints what the current rules leave.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _cli_support import cli, read_records, write_records

# Built in pieces, so that secret scanners leave this file alone.
JWT = (
    "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    + ("AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_" * 10)[:342]
)
TOKEN = "Zx8Qw2Er4Ty6" + "Ui8Op0As2Df4Gh6Jk8Lm"
SECRETS = (JWT, JWT[-40:], TOKEN)


def _header(version: int = 1, format_version: int = 2) -> dict[str, Any]:
    return {
        "format": "llmcassette",
        "format_version": format_version,
        "created_at": "2026-01-05T10:00:00Z",
        "redaction": {"rules": "llmcassette-default", "version": version},
    }


def _records(model: str = "m1", version: int = 1, format_version: int = 2) -> list[Any]:
    answer = {
        "id": "c",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
    return [
        _header(version, format_version),
        {
            "type": "request",
            "method": "POST",
            "uri": "https://login.example.com/oauth2/token",
            "headers": {"content-type": "application/json"},
            "body": {"json": {"grant_type": "client_credentials"}},
        },
        {
            "type": "response",
            "status": 200,
            "headers": {"content-type": "application/json"},
            "body": {"json": {"accessToken": TOKEN, "id_token": JWT}},
        },
        {"type": "end", "events": 0},
        {
            "type": "request",
            "method": "POST",
            "uri": "https://api.example.com/v1/chat/completions",
            "headers": {"authorization": "Bearer " + JWT},
            "body": {"json": {"model": model, "messages": [{"role": "user", "content": "hi"}]}},
        },
        {
            "type": "response",
            "status": 200,
            "headers": {"content-type": "application/json"},
            "body": {"json": answer},
        },
        {"type": "end", "events": 0},
    ]


def _old(path: Path, **options: Any) -> Path:
    write_records(path, _records(**options))
    return path


def _clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


# ---------------------------------------------------------------- commands that write


def test_heal_redacts_an_old_rules_cassette_again(tmp_path: Path) -> None:
    path = _old(tmp_path / "h.jsonl")
    records = read_records(path)
    records[-1]["events"] = 3  # something to repair
    write_records(path, records)
    result = cli("heal", path)
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    _clean(text)
    assert json.loads(text.splitlines()[0])["redaction"]["version"] == 2
    assert "end-count-fixed" in result.stdout
    _clean((tmp_path / "h.heal.log").read_text())


def test_heal_keeps_its_synthesized_mark_when_it_redacts_again(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    write_records(
        path,
        [
            _header(1),
            {
                "type": "request",
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
                "body": {"json": {"model": "m", "messages": [], "stream": True}},
            },
            {
                "type": "response",
                "status": 200,
                "headers": {"content-type": "text/event-stream"},
                "body": {"stream": "sse"},
            },
            {
                "type": "event",
                "data": {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "choices": [
                        {"index": 0, "delta": {"content": "tok " + JWT}, "finish_reason": "stop"}
                    ],
                },
            },
            {"type": "end", "events": 1},
        ],
    )
    result = cli("heal", path)
    assert result.returncode == 0, result.stderr
    records = read_records(path)
    _clean(path.read_text())
    assert records[4] == {"type": "event", "text": "[DONE]", "synthesized": "heal"}
    assert cli("check", path).returncode == 0


def test_heal_refuses_a_current_rules_cassette_that_holds_a_secret(tmp_path: Path) -> None:
    path = _old(tmp_path / "h.jsonl", version=2)  # says current rules, holds a JWT
    records = read_records(path)
    records[-1]["events"] = 3
    write_records(path, records)
    before = path.read_bytes()
    result = cli("heal", "--json", path)
    assert result.returncode == 2
    _clean(result.stdout + result.stderr)
    (error,) = json.loads(result.stdout)["errors"]
    assert error["code"] == "LC201 secret-leak"
    assert "llmcassette redact" in error["how_to_fix"]
    assert path.read_bytes() == before
    assert not (tmp_path / "h.heal.log").exists()


def test_migrate_redacts_an_old_rules_cassette_again(tmp_path: Path) -> None:
    path = _old(tmp_path / "old.jsonl", format_version=1)
    result = cli("migrate", path)
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    _clean(text)
    assert "<REDACTED:jwt>" in text
    assert json.loads(text.splitlines()[0])["redaction"]["version"] == 2
    assert cli("check", path).returncode == 0


def test_migrate_refuses_to_write_a_secret(tmp_path: Path) -> None:
    path = _old(tmp_path / "old.jsonl", version=2, format_version=1)
    before = path.read_bytes()
    result = cli("migrate", path)
    assert result.returncode == 2
    assert "refusing to write" in result.stderr
    _clean(result.stdout + result.stderr)
    assert path.read_bytes() == before


def test_convert_to_vcrpy_json_redacts_an_old_rules_cassette(tmp_path: Path) -> None:
    path = _old(tmp_path / "a.jsonl")
    result = cli("convert", "--to", "vcrpy-json", "--out", tmp_path / "out", path)
    assert result.returncode == 0, result.stderr
    _clean((tmp_path / "out" / "a.json").read_text())
    assert "redacted" in result.stdout


def test_convert_to_vcrpy_json_refuses_a_secret(tmp_path: Path) -> None:
    path = _old(tmp_path / "a.jsonl", version=2)
    result = cli("convert", "--to", "vcrpy-json", "--out", tmp_path / "out", path)
    assert result.returncode == 2
    _clean(result.stdout + result.stderr)
    assert not (tmp_path / "out" / "a.json").exists()


def test_report_html_shows_no_secret(tmp_path: Path) -> None:
    for version in (1, 2):  # older rules; current rules but a secret left in clear
        (tmp_path / f"v{version}").mkdir()
        path = _old(tmp_path / f"v{version}" / "a.jsonl", version=version)
        page = tmp_path / f"v{version}.html"
        result = cli("report", "--html", page, path.parent)
        assert result.returncode == 1  # report counts check's problems, secrets included
        text = page.read_text()
        _clean(text)
        assert "&lt;REDACTED:" in text or "REDACTED" in text


# ---------------------------------------------------------------- commands that print


def test_show_prints_no_secret_of_an_old_rules_cassette(tmp_path: Path) -> None:
    path = _old(tmp_path / "a.jsonl")
    for options in ((), ("--json",), ("--textconv",)):
        result = cli("show", *options, path)
        assert result.returncode == 0, result.stderr
        _clean(result.stdout + result.stderr)
        assert "REDACTED" in result.stdout


def test_show_redacts_secret_shapes_in_a_current_rules_cassette(tmp_path: Path) -> None:
    path = _old(tmp_path / "a.jsonl", version=2)
    for options in ((), ("--json",), ("--textconv",)):
        result = cli("show", *options, path)
        _clean(result.stdout + result.stderr)


def test_textconv_of_a_vcrpy_file_is_redacted(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"interactions": [{"token": "Bearer " + JWT}]}) + "\n")
    result = cli("show", "--textconv", path)
    assert result.returncode == 0
    assert "not rendered by llmcassette" in result.stdout
    _clean(result.stdout)


def test_show_raw_prints_the_file_as_it_is(tmp_path: Path) -> None:
    path = _old(tmp_path / "a.jsonl")
    assert cli("show", "--raw", path).stdout == path.read_text()


def test_diff_prints_no_secret_of_an_old_rules_cassette(tmp_path: Path) -> None:
    a = _old(tmp_path / "a.jsonl")
    records = _records("m2")
    records[2]["body"]["json"]["id_token"] = JWT[:-1] + "Q"  # another token
    records[2]["body"]["json"]["accessToken"] = TOKEN[::-1]
    b = tmp_path / "b.jsonl"
    write_records(b, records)
    for options in ((), ("--json",), ("--all",)):
        result = cli("diff", *options, a, b)
        assert result.returncode == 1, result.stderr
        _clean(result.stdout + result.stderr)
        for secret in (JWT[:-1] + "Q", TOKEN[::-1]):
            assert secret not in result.stdout
