"""A suite that registers a persister of its own in its ``pytest_recording_configure``
(which pytest runs after llmcassette's) keeps working once llmcassette is installed.

Found running simonw's llm-openrouter (helper round 6): the suite's persister replaced
llmcassette's, so each vcrpy cassette was read with the ``jsonl`` serializer and every test
was an error. It now becomes the persister llmcassette hands vcrpy's serializers to.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
from vcr.persisters.filesystem import FilesystemPersister


class OwnPersister(FilesystemPersister):
    @staticmethod
    def save_cassette(cassette_path, cassette_dict, serializer):
        for response in cassette_dict["responses"]:
            response["headers"].pop("Content-Length", None)  # what a suite trims
        FilesystemPersister.save_cassette(cassette_path, cassette_dict, serializer)


def pytest_recording_configure(config, vcr):
    vcr.register_persister(OwnPersister)


@pytest.fixture(scope="session")
def vcr_config():
    return {"persister": OwnPersister}  # llm-openrouter names it here too
"""

TEST = """
import os

import httpx
import pytest


@pytest.mark.vcr
def test_echo():
    assert httpx.post(os.environ["ECHO_URL"], json={"q": 1}).json()["echo"] == {"q": 1}
"""


def test_a_suites_own_persister_replays_its_vcrpy_cassettes(
    pytester: pytest.Pytester, echo: Any
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_own=TEST)
    # recorded before llmcassette, with the suite's persister: vcrpy YAML, trimmed
    vcrpy_only = pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once")
    vcrpy_only.assert_outcomes(passed=1)
    cassettes = pytester.path / "cassettes" / "test_own"
    assert "Content-Length" not in (cassettes / "test_echo.yaml").read_text()
    echo.stop()  # only the cassette can answer now
    pytester.runpytest_subprocess("--record-mode=none").assert_outcomes(passed=1)


def test_a_suite_with_its_own_persister_records_llmcassette_cassettes(
    pytester: pytest.Pytester, echo: Any
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_own=TEST)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    written = sorted(p.name for p in (pytester.path / "cassettes" / "test_own").iterdir())
    assert written == ["test_echo.jsonl"]
    echo.stop()
    pytester.runpytest_subprocess("--record-mode=none").assert_outcomes(passed=1)
