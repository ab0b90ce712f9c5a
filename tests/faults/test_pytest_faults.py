"""Faults in whole pytest runs: the ``llm_faults`` marker and fixture, sidecars, the checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

TEST_MODULE = """
import os

import openai
import pytest

from llmcassette import faults

REPLAY = os.environ.get("REPLAY") == "1"


def ask(**options):
    client = openai.OpenAI(base_url=os.environ["PROVIDER_URL"], api_key="sk-test", **options)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}], stream=True
    )
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


@pytest.mark.vcr
@pytest.mark.llm_faults(faults.http_error(429, retry_after=0))
def test_marker_retry():
    assert ask() == "You said: hello"


@pytest.mark.vcr
def test_fixture_cut(llm_faults):
    if REPLAY:
        llm_faults.schedule(faults.cut_stream(2))
        with pytest.raises(openai.APIConnectionError):
            ask(max_retries=0)
        assert llm_faults.pending == 0
    else:
        ask()


@pytest.mark.vcr
def test_fixture_unused(llm_faults):
    ask()
    if REPLAY:
        llm_faults.schedule(faults.http_error(500), faults.transport_error("read_timeout"))
"""


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """The project's cassettes and the provider address they hold, once recorded."""
    return {"copy": tmp_path_factory.mktemp("recorded") / "cassettes"}


@pytest.fixture
def project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, recording: dict[str, Path | str]
) -> pytest.Pytester:
    """The test module, recorded against a provider that is stopped since, in replay mode.

    The first test of the module records (a whole pytest run through the openai SDK) and
    checks the recording; the others start from a copy of those cassettes.
    """
    pytester.makepyfile(test_faults=TEST_MODULE)
    cassettes = pytester.path / "cassettes"
    copy = Path(recording["copy"])
    if "url" in recording:
        shutil.copytree(copy, cassettes)
    else:
        provider = LocalProvider().start()
        monkeypatch.setenv("PROVIDER_URL", provider.openai_base_url)
        result = pytester.runpytest_subprocess("--record-mode=once")
        result.assert_outcomes(passed=3)
        # A 429 answered by the marker is not recorded: only the retry's answer is.
        cassette = cassettes / "test_faults" / "test_marker_retry.jsonl"
        assert cassette.read_text().count('"type":"request"') == 1
        provider.stop()
        shutil.copytree(cassettes, copy)
        recording["url"] = provider.openai_base_url
    monkeypatch.setenv("PROVIDER_URL", str(recording["url"]))
    monkeypatch.setenv("REPLAY", "1")
    return pytester


def test_marker_fixture_and_unused_faults(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--record-mode=none")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UnusedInteractionsError: 2 scheduled fault(s) were never used (the test made "
            "fewer calls than scripted):*",
            "*http_error(500)",
            "*transport_error('read_timeout')",
        ]
    )


def test_a_sidecar_in_a_pytest_project(project: pytest.Pytester) -> None:
    cassettes = project.path / "cassettes" / "test_faults"
    sidecar = cassettes / "test_fixture_unused.overrides.json"
    sidecar.write_text(
        json.dumps(
            {
                "entries": [
                    {"at": 0, "status": 503},
                    {"at": 1, "recorded": 0},
                    {"at": 2, "recorded": 0},
                ]
            }
        )
    )
    result = project.runpytest_subprocess("--record-mode=none", "-k", "unused")
    result.assert_outcomes(failed=1)
    # 503 retried by the SDK, entry 1 answered, entry 2 (and the scheduled faults) unused
    result.stdout.fnmatch_lines(
        [
            "*1 of the 3 interactions the overrides script for *test_fixture_unused.jsonl "
            "was not played:*",
            "*#3: POST http://127.0.0.1:*/v1/chat/completions*",
        ]
    )


def test_a_bad_sidecar_fails_the_test_before_it_runs(project: pytest.Pytester) -> None:
    sidecar = project.path / "cassettes" / "test_faults" / "test_marker_retry.overrides.json"
    sidecar.write_text(json.dumps({"entries": [{"at": 0, "status": "429"}]}))
    result = project.runpytest_subprocess("--record-mode=none", "-k", "marker_retry")
    result.assert_outcomes(errors=1)  # at setup: the sidecar is read as the cassette opens
    result.stdout.fnmatch_lines(
        [
            "*OverridesError: *test_marker_retry.overrides.json: entries?0?.status: must be an "
            "HTTP status 100-599, got '429'*"
        ]
    )


def test_overrides_from_the_marker(project: pytest.Pytester, tmp_path: Path) -> None:
    project.makeconftest(
        """
import pytest

@pytest.fixture
def vcr_config():
    return {"overrides": {"entries": [{"at": 0, "fail": "connect_error"}, {"at": 1, "recorded": 0}]}}
"""
    )
    result = project.runpytest_subprocess("--record-mode=none", "-k", "marker_retry")
    # the marker's 429, then the override's connection failure, then the recorded answer
    result.assert_outcomes(passed=1)
