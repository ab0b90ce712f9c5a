"""llmcassette's warnings point at the test in pytest's warnings summary, not at the
library code that issues them (pytest-recording's fixture, vcrpy, llmcassette itself).

One whole pytest run (pytester, in a subprocess) against the bundled LocalProvider.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider
from llmcassette.testing._state import StreamBehaviour

TEST_MODULE = """
import os
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

URL = os.environ["PROVIDER_URL"] + "/v1/chat/completions"
HEADERS = {"authorization": "Bearer sk-test"}


def chat(model):
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    return httpx2.post(URL, json=body, headers=HEADERS)


def read_cut_stream():
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a story"}]}
    with pytest.raises(httpx2.RemoteProtocolError):
        with httpx2.stream("POST", URL, json=body, headers=HEADERS) as response:
            response.read()


@pytest.mark.vcr  # at_exit
def test_at_exit():
    assert chat("error-429").status_code == 429


@pytest.mark.vcr
def test_in_the_call():
    read_cut_stream()  # in_the_call


@pytest.mark.vcr  # in_a_thread
def test_in_a_thread():
    with ThreadPoolExecutor() as pool:
        pool.submit(read_cut_stream).result()
"""


def line_of(module: Path, tag: str) -> int:
    """The line of ``module`` that ends in ``# tag``."""
    lines = module.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.endswith(f"# {tag}"))


def test_warnings_point_at_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = pytester.makepyfile(test_mod=TEST_MODULE)
    with LocalProvider() as provider:
        provider.behaviour = StreamBehaviour(cut_after=1)
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        result = pytester.runpytest_subprocess("--record-mode=once", "-p", "no:randomly")
    result.assert_outcomes(passed=3, warnings=3)
    result.stdout.fnmatch_lines(
        [
            "*= warnings summary =*",
            "test_mod.py::test_at_exit",
            # Saved at the cassette's exit, in the teardown: the test, as pytest locates it.
            f"  *test_mod.py:{line_of(module, 'at_exit')}: ErrorResponseNotRecordedWarning: *",
            "test_mod.py::test_in_the_call",
            # Issued inside the test's call: the test's line that made it.
            f"  *test_mod.py:{line_of(module, 'in_the_call')}: IncompleteStreamWarning: *",
            "test_mod.py::test_in_a_thread",
            # In another thread, the test's frame is not on the stack: the test.
            f"  *test_mod.py:{line_of(module, 'in_a_thread')}: IncompleteStreamWarning: *",
        ]
    )
    summary = result.stdout.str().partition("warnings summary")[2]
    assert "site-packages" not in summary
    assert "llmcassette/" not in summary
