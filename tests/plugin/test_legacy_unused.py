"""Whole pytest runs: what vcrpy left unplayed does not fail a test once llmcassette is in.

Found in a real suite (traceloop's opentelemetry-instrumentation-openai, issue 19's first
bar): its vcrpy cassettes hold the same call recorded several times, and its tests make it
once. vcrpy passed them; llmcassette's unused check failed 137 of them. Of a legacy cassette
an unplayed interaction is drift (an LC304 warning, ``strict`` fails it), and under
``allow_playback_repeats`` (langchain's suites) a later copy of a played call can never
play, so it is no unused call at all. Runs are subprocesses, as in test_legacy_drift.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# The `echo` fixture (conftest.py) is an EchoServer.
EchoServer = Any

TEST_MODULE = """
import os
import httpx2
import pytest

@pytest.mark.vcr{marker_args}
def test_asks():
    for prompt in os.environ["PROMPTS"].split(","):
        response = httpx2.post(os.environ["ECHO_URL"], json={{"model": "m", "prompt": prompt}})
        assert response.status_code == 200
"""


def write_test(pytester: pytest.Pytester, marker_args: str = "") -> None:
    pytester.makepyfile(test_mod=TEST_MODULE.format(marker_args=marker_args))


def record_legacy(
    pytester: pytest.Pytester, echo: EchoServer, monkeypatch: pytest.MonkeyPatch, prompts: str
) -> Path:
    """Record with plain pytest-recording (YAML), then stop the server; the cassette, as
    messages name it (relative to the directory pytest runs in)."""
    monkeypatch.setenv("PROMPTS", prompts)
    result = pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once")
    result.assert_outcomes(passed=1)
    echo.stop()
    cassette = pytester.path / "cassettes" / "test_mod" / "test_asks.yaml"
    assert cassette.read_text().count("uri:") == len(prompts.split(","))
    return cassette.relative_to(pytester.path)


def test_an_unplayed_legacy_interaction_is_drift_and_strict_fails_it(
    pytester: pytest.Pytester, echo: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_test(pytester)
    cassette = record_legacy(pytester, echo, monkeypatch, "one,two")
    monkeypatch.setenv("PROMPTS", "one")

    warned = pytester.runpytest_subprocess("--record-mode=none", "-rP")
    warned.assert_outcomes(passed=1)
    warned.stdout.fnmatch_lines(
        [
            "*llmcassette: legacy cassette drift*",  # the test's report section (-rP)
            f"{cassette}: interaction #2: recorded POST /echo model=m 'two', "
            "incoming (not requested)",
        ]
    )
    warned.stdout.fnmatch_lines(
        [
            "*= llmcassette: legacy cassette drift =*",
            "*1 test replayed cassettes that drifted since recording*",
            f"  test_mod.py::test_asks: {cassette}: interaction #2",
        ]
    )

    strict = pytester.runpytest_subprocess("--record-mode=none", "--llmcassette-drift=strict")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        [
            f"UnusedInteractionsError: 1 of the 2 interactions recorded in {cassette}*",
            "E     #2: POST /echo model=m 'two'",
        ]
    )
    assert "test_asks.jsonl" not in strict.stdout.str()  # the file read is the YAML one

    off = pytester.runpytest_subprocess("--record-mode=none", "--llmcassette-drift=off")
    off.assert_outcomes(passed=1)
    assert "legacy cassette drift" not in off.stdout.str()


def test_a_repeat_of_a_played_call_is_no_unused_call_even_when_strict(
    pytester: pytest.Pytester, echo: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vcrpy records the same call twice (without repeats: with them, it would answer the
    # second from the first while recording); replayed with repeats allowed, the first
    # answers both, as vcrpy itself replays it, so the second copy never plays.
    write_test(pytester)
    record_legacy(pytester, echo, monkeypatch, "same,same,other")
    write_test(pytester, marker_args="(allow_playback_repeats=True)")
    monkeypatch.setenv("PROMPTS", "same,same")

    result = pytester.runpytest_subprocess("--record-mode=none", "--llmcassette-drift=strict")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # Only the call the test no longer makes is reported, not the shadowed copy.
    result.stdout.fnmatch_lines(
        [
            "UnusedInteractionsError: 1 of the 3 interactions recorded in *test_asks.*",
            "E     #3: POST /echo model=m 'other'",
        ]
    )
    assert "#2: POST" not in out

    monkeypatch.setenv("PROMPTS", "same,same,other")
    pytester.runpytest_subprocess(
        "--record-mode=none", "--llmcassette-drift=strict"
    ).assert_outcomes(passed=1)


OWN_PERSISTER = """
import pytest
from vcr.persisters.filesystem import FilesystemPersister


class ProjectPersister(FilesystemPersister):
    pass


@pytest.fixture(scope="session")
def vcr_config():
    return {"serializer": "yaml"}


def pytest_recording_configure(config, vcr):
    vcr.register_persister(ProjectPersister)
"""


def test_a_cassette_read_by_the_projects_own_persister_is_treated_as_vcrpys(
    pytester: pytest.Pytester, echo: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # langchain's suites register their own persister and serializer: llmcassette cannot
    # tell who recorded those cassettes, and vcrpy did not fail on unplayed interactions.
    pytester.makeconftest(OWN_PERSISTER)
    write_test(pytester)
    cassette = record_legacy(pytester, echo, monkeypatch, "one,two")
    monkeypatch.setenv("PROMPTS", "one")

    warned = pytester.runpytest_subprocess("--record-mode=none")
    warned.assert_outcomes(passed=1)
    warned.stdout.fnmatch_lines(
        [f"*{cassette}: legacy cassette drift: interaction #2: recorded POST /echo model=m*"]
    )
    strict = pytester.runpytest_subprocess("--record-mode=none", "--llmcassette-drift=strict")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["E     #2: POST /echo model=m 'two'"])
