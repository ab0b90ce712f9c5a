"""Whole pytest runs: vcrpy cassettes written by a suite's own registered serializer replay.

pydantic-ai registers its own ``yaml`` serializer in ``pytest_recording_configure``: its
cassettes store a JSON body as a ``parsed_body`` mapping, which vcrpy's serializer cannot
read back. llmcassette reads a suite's vcrpy cassettes with the serializer the suite
registered under that name, as vcrpy would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# The `echo` fixture (conftest.py) is an EchoServer.
EchoServer = Any

CONFTEST = """
import json

import yaml
from vcr.serializers import yamlserializer


class parsed_body_serializer:
    # pydantic-ai's shape: a JSON body is stored as the mapping it holds.
    @staticmethod
    def serialize(cassette_dict):
        for interaction in cassette_dict["interactions"]:
            request = interaction["request"]
            request["parsed_body"] = json.loads(request.pop("body"))
        return yaml.safe_dump(cassette_dict)

    @staticmethod
    def deserialize(text):
        data = yamlserializer.deserialize(text)
        for interaction in data["interactions"]:
            request = interaction["request"]
            request["body"] = json.dumps(request.pop("parsed_body"))
        return data


def pytest_recording_configure(config, vcr):
    vcr.register_serializer("yaml", parsed_body_serializer)
"""

TEST_MODULE = """
import os
import httpx2
import pytest

@pytest.mark.vcr
def test_echo():
    response = httpx2.post(os.environ["ECHO_URL"], json={"prompt": "hi"})
    assert response.json()["echo"] == {"prompt": "hi"}
"""


def test_a_cassette_of_the_suites_own_serializer_replays(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_mod=TEST_MODULE)
    result = pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once")
    result.assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_mod" / "test_echo.yaml"
    assert "parsed_body:" in cassette.read_text()
    echo.stop()
    result = pytester.runpytest_subprocess("-W", "error::llmcassette.LlmCassetteWarning")
    result.assert_outcomes(passed=1)
    assert not Path(cassette.with_suffix(".jsonl")).exists()  # replayed, nothing recorded
