"""A pytest-vcr suite: llmcassette says how to move, and the documented move replays its
cassettes where pytest-vcr put them (docs/migrating.md, "From pytest-vcr")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
import vcr

DOCS = Path(__file__).resolve().parents[2] / "docs" / "migrating.md"

# The `echo` fixture (conftest.py) is an EchoServer.
EchoServer = Any

TESTS = """
import os
import httpx2
import pytest

@pytest.mark.vcr
def test_hello():
    assert httpx2.post(os.environ["ECHO_URL"], json={"q": "hello"}).json()["echo"]["q"] == "hello"

class TestChat:
    @pytest.mark.vcr
    def test_in_class(self):
        assert httpx2.post(os.environ["ECHO_URL"], json={"q": "class"}).status_code == 200
"""

NAMED_TESTS = """
import os
import httpx2
import pytest

@pytest.fixture
def vcr_cassette_name(request):
    return "scenario/" + request.node.name.upper()

@pytest.mark.vcr
def test_named():
    assert httpx2.post(os.environ["ECHO_URL"], json={"q": "named"}).status_code == 200
"""


def documented_conftest() -> str:
    """The conftest.py block of the page's "From pytest-vcr" section."""
    section = DOCS.read_text(encoding="utf-8").split("## From pytest-vcr", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, "docs/migrating.md: From pytest-vcr has no conftest.py block"
    return found.group(1)


def record_as_pytest_vcr_did(path: Path, url: str, question: str) -> None:
    """A cassette as pytest-vcr wrote it: plain vcrpy, YAML, at pytest-vcr's path."""
    with vcr.VCR(record_mode="once").use_cassette(str(path)):
        httpx2.post(url, json={"q": question})


def test_pytest_vcr_installed_stops_the_run_with_the_way_out(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mod="def test_nothing(): pass")
    # pytest-vcr's plugin is named "vcr"; vcrpy's package loaded under that name stands in.
    result = pytester.runpytest_subprocess("-p", "vcr")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*llmcassette extends pytest-recording*Uninstall pytest-vcr*"])
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_the_documented_fixtures_replay_pytest_vcr_cassettes_in_place(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    tests = pytester.mkpydir("tests")
    (tests / "test_mod.py").write_text(TESTS)
    (tests / "sub").mkdir()
    (tests / "sub" / "test_named.py").write_text(NAMED_TESTS)
    cassettes = tests / "cassettes"
    record_as_pytest_vcr_did(cassettes / "test_hello.yaml", echo.url, "hello")
    record_as_pytest_vcr_did(cassettes / "TestChat.test_in_class.yaml", echo.url, "class")
    named = tests / "sub" / "cassettes" / "scenario" / "TEST_NAMED.yaml"
    record_as_pytest_vcr_did(named, echo.url, "named")
    echo.stop()  # only the cassettes can answer now
    pytester.makeconftest(documented_conftest())
    result = pytester.runpytest_subprocess("--record-mode=none", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    assert not list(pytester.path.rglob("*.jsonl"))  # replayed where they are, as YAML
