"""``llmcassette scan`` and ``llmcassette redact``: exit codes, no secret in the output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llmcassette.cli.main import main

from .test_rules import ANTHROPIC, OPENAI

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "pydantic-ai"


def _vcrpy_yaml(path: Path) -> None:
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps({"messages": [{"content": f"hi {ANTHROPIC}"}]}),
                    "headers": {"authorization": [f"Bearer {OPENAI}"], "user-agent": ["x"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"set-cookie": ["__cf_bm=abcdef123456; path=/"]},
                    "body": {"string": '{"ok": true}'},
                },
            }
        ],
    }
    path.write_text(yaml.safe_dump(data))


def _jsonl(path: Path) -> None:
    header = {"format": "llmcassette", "format_version": 1, "recorded_by": "t", "created_at": "x"}
    lines = [
        header,
        {
            "type": "request",
            "method": "GET",
            "uri": "http://h/?key=AIza" + "S" * 35,
            "headers": {"x-api-key": "plain-value-123456"},
            "body": None,
        },
        {"type": "response", "status": 200, "reason": "OK", "headers": {}, "body": {"text": "ok"}},
        {"type": "end", "events": 0},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_scan_finds_and_never_prints_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _vcrpy_yaml(tmp_path / "a.yaml")
    _jsonl(tmp_path / "b.jsonl")
    assert main(["scan", str(tmp_path)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "a.yaml" in text
    assert "b.jsonl" in text
    assert "openai-api-key" in text
    assert "anthropic-api-key" in text
    assert "google-api-key" in text
    assert "x-api-key" in text
    assert "b.jsonl:2: uri: google-api-key" in text
    for secret in (OPENAI, ANTHROPIC, "plain-value-123456", "AIza"):
        assert secret not in text


def test_redact_rewrites_in_place_then_scan_is_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _vcrpy_yaml(tmp_path / "a.yaml")
    _jsonl(tmp_path / "b.jsonl")
    assert main(["redact", "--dry-run", str(tmp_path)]) == 0
    assert OPENAI in (tmp_path / "a.yaml").read_text()
    assert main(["redact", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "redacted" in out
    assert OPENAI not in out
    assert OPENAI not in (tmp_path / "a.yaml").read_text()
    assert "plain-value-123456" not in (tmp_path / "b.jsonl").read_text()
    assert main(["scan", str(tmp_path)]) == 0
    assert main(["redact", str(tmp_path)]) == 0
    assert "unchanged" in capsys.readouterr().out
    loaded = yaml.safe_load((tmp_path / "a.yaml").read_text())
    request = loaded["interactions"][0]["request"]
    assert request["headers"]["authorization"] == ["Bearer <REDACTED:openai-api-key>"]


def test_pre_commit_hook_is_declared() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hooks[0]["id"] == "llmcassette-scan"
    assert hooks[0]["entry"].startswith("llmcassette scan")


def test_false_positives_on_real_traffic() -> None:
    """Every string value of real (already scrubbed) cassettes: how many would be redacted."""
    if not CORPUS.is_dir():
        pytest.skip("the shared pydantic-ai corpus (../shared) is not available")
    from llmcassette.cli.paths import files_under
    from llmcassette.redact import RedactionConfig, Redactor
    from llmcassette.redact.scan import decoded_response, load_vcrpy

    redactor = Redactor(RedactionConfig(), environ={})
    strings = redacted = 0

    def leaves(value: object) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in leaves(v)]
        if isinstance(value, list):
            return [s for v in value for s in leaves(v)]
        if isinstance(value, bytes):
            try:
                return leaves(value.decode())
            except UnicodeDecodeError:
                return []
        if isinstance(value, str):
            if value[:1] in "{[":
                try:
                    return leaves(json.loads(value))
                except ValueError:
                    pass
            return [value]
        return []

    for path in files_under(CORPUS):
        assert isinstance(path, Path), path
        data = load_vcrpy(path, path.read_text(encoding="utf-8"))
        for entry in data.get("interactions") or []:
            for key, part in entry.items():
                if isinstance(part, dict):
                    if key.startswith("response"):
                        part = decoded_response(part, redactor.rules) or part
                    part = {k: v for k, v in part.items() if k != "headers"}
                for text in leaves(part):
                    strings += 1
                    redacted += redactor.text(text) != text
    print(f"corpus: {redacted} of {strings} string values redacted")
    assert strings > 1000
    assert redacted == 0
