"""``pytest --llmcassette-report=FILE``: one JSON line per llmcassette event, with codes.

Whole pytest runs (pytester, in subprocesses) against the bundled LocalProvider: a module
is recorded, then replayed with one test's request changed, one making fewer calls and one
cassette aged past its ``max_age`` and one stream cut before its
terminator; the report must hold one line for each, in the error
model, with and without pytest-xdist. The issue's own bar is a run with a mismatch, a
drifted legacy (vcrpy-recorded) cassette and an unused interaction: one line each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcassette.errors import FIELDS
from llmcassette.testing import LocalProvider

MODULE = """
import os
import httpx2
import openai
import pytest

CHANGE = os.environ.get("CHANGE", "")
URL = os.environ["PROVIDER_URL"]


@pytest.mark.vcr
def test_mismatch():
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-test", max_retries=0)
    prompt = "bye" if CHANGE else "hi"
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )


@pytest.mark.vcr
def test_unused():
    for name in ["a", "b", "c"][: 1 if CHANGE else 3]:
        httpx2.get(URL + "/v1/models", params={"n": name},
                   headers={"authorization": "Bearer sk-test"})


@pytest.mark.vcr(max_age="30d", expired="warn")
def test_expired():
    httpx2.get(URL + "/v1/models", headers={"authorization": "Bearer sk-test"})


@pytest.mark.vcr
def test_stream():
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-test", max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def test_without_cassette():
    pass
"""


def recorded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Record the module, age test_expired's cassette, then take the provider away."""
    pytester.makepyfile(test_mod=MODULE)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=5)
    aged = pytester.path / "cassettes" / "test_mod" / "test_expired.jsonl"
    lines = aged.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["created_at"] = "2020-01-01T00:00:00Z"
    aged.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    cut = pytester.path / "cassettes" / "test_mod" / "test_stream.jsonl"
    lines = cut.read_text().splitlines(keepends=True)
    assert json.loads(lines[-2])["text"] == "[DONE]"
    end = json.loads(lines[-1])
    end["events"] -= 1
    cut.write_text("".join(lines[:-2]) + json.dumps(end) + "\n")  # cut before [DONE]
    monkeypatch.setenv("CHANGE", "1")


def report_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def by_code(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {event["code"]: event for event in events}


def check_events(events: list[dict[str, Any]]) -> None:
    codes = sorted(event["code"] for event in events)
    assert codes == [
        "LC202 incomplete-stream",
        "LC301 cassette-mismatch",
        "LC302 unused-interactions",
        "LC303 cassette-expired",
    ], events
    for event in events:
        assert set(FIELDS) | {"code", "message", "docs", "test", "phase", "severity"} <= set(event)
        assert event["docs"] == "docs/errors.md#" + event["code"].lower().replace(" ", "-")
    found = by_code(events)

    mismatch = found["LC301 cassette-mismatch"]
    assert mismatch["test"] == "test_mod.py::test_mismatch"
    assert (mismatch["phase"], mismatch["severity"]) == ("call", "error")
    assert mismatch["file"].endswith("cassettes/test_mod/test_mismatch.jsonl")
    assert mismatch["reason"] == "no_match"
    assert mismatch["differences"][0] == {
        "path": "body.messages[0].content",
        "recorded": "hi",
        "incoming": "bye",
        "recorded_present": True,
        "incoming_present": True,
    }
    assert mismatch["candidates"][0]["position"] == 1

    unused = found["LC302 unused-interactions"]
    assert unused["test"] == "test_mod.py::test_unused"
    assert unused["severity"] == "error"
    assert [entry.split(" ", 1)[0] for entry in unused["received"]] == ["#2", "#3"]

    cut = found["LC202 incomplete-stream"]
    assert (cut["test"], cut["severity"]) == ("test_mod.py::test_stream", "warning")
    assert "[DONE]" in cut["message"]

    expired = found["LC303 cassette-expired"]
    assert expired["test"] == "test_mod.py::test_expired"
    assert expired["severity"] == "warning"
    assert "2020-01-01" in expired["message"]


def test_a_run_reports_each_event_once_with_its_code(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded(pytester, monkeypatch)
    result = pytester.runpytest_subprocess("--llmcassette-report=out/report.jsonl")
    result.assert_outcomes(passed=3, failed=2)
    check_events(report_lines(pytester.path / "out" / "report.jsonl"))


def test_under_xdist_the_controller_writes_the_workers_events(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded(pytester, monkeypatch)
    result = pytester.runpytest_subprocess("-n", "2", "--llmcassette-report=report.jsonl")
    result.assert_outcomes(passed=3, failed=2)
    check_events(report_lines(pytester.path / "report.jsonl"))


def test_a_clean_run_writes_an_empty_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=MODULE)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        result = pytester.runpytest_subprocess(
            "--record-mode=once", "--llmcassette-report=report.jsonl"
        )
    result.assert_outcomes(passed=5)
    assert (pytester.path / "report.jsonl").read_text() == ""


LEGACY_MODULE = """
import os
import httpx2
import pytest


@pytest.mark.vcr
def test_legacy():
    prompt = "bye" if os.environ.get("CHANGE") else "hi"
    response = httpx2.post(os.environ["ECHO_URL"], json={"prompt": prompt})
    assert response.status_code == 200
"""


def test_a_mismatch_a_drifted_legacy_cassette_and_an_unused_interaction_one_line_each(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, echo: Any
) -> None:
    """The issue's bar: one run, three events, one report line each with its code."""
    pytester.makepyfile(test_mod=MODULE, test_legacy=LEGACY_MODULE)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once", "test_mod.py").assert_outcomes(passed=5)
    # Recorded by plain pytest-recording and vcrpy, before llmcassette was installed.
    legacy = pytester.runpytest_subprocess(
        "-p", "no:llmcassette", "--record-mode=once", "test_legacy.py"
    )
    legacy.assert_outcomes(passed=1)
    yaml = pytester.path / "cassettes" / "test_legacy" / "test_legacy.yaml"
    assert yaml.is_file()
    echo.stop()
    monkeypatch.setenv("CHANGE", "1")
    result = pytester.runpytest_subprocess("--llmcassette-report=report.jsonl")
    result.assert_outcomes(passed=4, failed=2)
    events = report_lines(pytester.path / "report.jsonl")
    assert sorted(event["code"] for event in events) == [
        "LC301 cassette-mismatch",
        "LC302 unused-interactions",
        "LC304 legacy-drift",
    ], events
    found = by_code(events)
    for code, test in [
        ("LC301 cassette-mismatch", "test_mod.py::test_mismatch"),
        ("LC302 unused-interactions", "test_mod.py::test_unused"),
        ("LC304 legacy-drift", "test_legacy.py::test_legacy"),
    ]:
        event = found[code]
        assert event["test"] == test
        assert event["docs"] == "docs/errors.md#" + code.lower().replace(" ", "-")
        assert set(FIELDS) | {"message", "phase", "severity"} <= set(event)
    assert found["LC301 cassette-mismatch"]["differences"][0]["path"] == "body.messages[0].content"
    assert [entry.split(" ", 1)[0] for entry in found["LC302 unused-interactions"]["received"]] == [
        "#2",
        "#3",
    ]
    drift = found["LC304 legacy-drift"]
    assert (drift["severity"], drift["file"]) == ("warning", str(yaml))
    assert (drift["path"], drift["expected"], drift["received"]) == ("body.prompt", "'hi'", "'bye'")


def test_a_test_id_that_holds_a_key_is_written_redacted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    pytester.makepyfile(
        test_keyed=f"""
import httpx2
import os
import pytest

@pytest.mark.parametrize("key", ["{key}"])
@pytest.mark.vcr
def test_chat(key):
    httpx2.get(os.environ["PROVIDER_URL"] + "/v1/models", headers={{"authorization": "Bearer " + key}})
"""
    )
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        result = pytester.runpytest_subprocess(
            "--llmcassette-record-mode=none", "--llmcassette-report=report.jsonl"
        )
    result.assert_outcomes(failed=1)
    text = (pytester.path / "report.jsonl").read_text()
    assert key not in text
    (event,) = report_lines(pytester.path / "report.jsonl")
    assert event["test"] == "test_keyed.py::test_chat[<REDACTED:openai-api-key>]"
