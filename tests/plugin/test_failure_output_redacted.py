"""What pytest prints and stores of a test holds no secret the cassette would not.

A mismatch is raised inside the client's call: the frames' arguments (``--tb=long``, and
the last frame by default) and locals (``-l``) hold the live request, and httpx logs every
URL it sends. The plugin redacts the failure's text and its sections as the cassette is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

UNSHAPED_KEY = "q7Hc2LmX9vRt4PzW8sKd3NbY6fJg1A0e"  # no known shape: redacted by header name
GOOGLE_KEY = "AIzaSyD3x9Kq7Lm2Np5Rt8Vw1Yz4Bc6Df0Gh3Jk"

TEST = f"""
import logging, os
import httpx
import pytest

@pytest.mark.vcr
def test_call(caplog):
    caplog.set_level(logging.INFO)  # httpx logs "HTTP Request: POST <url>"
    headers = {{"x-api-key": "{UNSHAPED_KEY}"}}
    httpx.post(os.environ["ECHO_URL"] + "?key={GOOGLE_KEY}", headers=headers,
               json={{"prompt": os.environ.get("PROMPT", "hi")}})
"""


@pytest.mark.parametrize("style", [[], ["--tb=long", "-l"]])
def test_a_mismatch_prints_and_stores_no_secret(
    pytester: pytest.Pytester, echo: Any, monkeypatch: pytest.MonkeyPatch, style: list[str]
) -> None:
    pytester.makepyfile(test_secret=TEST)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT", "bye")
    junit = Path(pytester.path) / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--record-mode=none", f"--junitxml={junit}", "-o", "junit_logging=all", *style
    )
    result.assert_outcomes(failed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "body.prompt: recorded 'hi', incoming 'bye'" in output
    assert "<REDACTED:google-api-key>" in output
    for secret in (UNSHAPED_KEY, GOOGLE_KEY):
        assert secret not in output
        assert secret not in junit.read_text()


def test_a_passing_tests_captured_log_holds_no_secret(
    pytester: pytest.Pytester, echo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_secret=TEST)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    junit = Path(pytester.path) / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--record-mode=none", "-rA", f"--junitxml={junit}", "-o", "junit_logging=all"
    )
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert "HTTP Request: POST" in output  # the log is shown ...
    for secret in (UNSHAPED_KEY, GOOGLE_KEY):  # ... without the key in the URL
        assert secret not in output
        assert secret not in junit.read_text()
