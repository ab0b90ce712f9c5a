"""The "to fix" hints of a mismatch name the command of where the cassette is used."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

import llmcassette
from llmcassette import CassetteMismatch  # imported now: pytester forgets modules it saw imported
from llmcassette.testing import LocalProvider

TEST = """
import os
import httpx2
import pytest

@pytest.mark.vcr
def test_chat():
    prompt = os.environ.get("PROMPT", "hi")
    httpx2.post(os.environ["PROVIDER_URL"] + "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
                headers={"authorization": "Bearer sk-test"})
"""

PYTEST_HINTS = ("pytest --record-mode=rewrite", "in vcr_config or the vcr marker")
USE_CASSETTE_HINTS = (
    "use_cassette(..., record_mode='all')",
    "record_mode='new_episodes'",
    "use_cassette(..., match={'ignore': ['$.messages[0].content']})",
)


def ask(url: str, prompt: str) -> None:
    httpx2.post(
        f"{url}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        headers={"authorization": "Bearer sk-test"},
    )


def test_pytest_and_use_cassette_hints_name_their_own_command(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=TEST)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    (cassette,) = (pytester.path / "cassettes").rglob("*.jsonl")

    # The same changed prompt against the same cassette: under pytest...
    monkeypatch.setenv("PROMPT", "bye")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "body.messages[0].content: recorded 'hi', incoming 'bye'" in output
    assert all(hint in output for hint in PYTEST_HINTS), output
    assert "use_cassette(" not in output

    # ...and in use_cassette.
    replay = llmcassette.use_cassette(cassette, record_mode="none")
    with pytest.raises(CassetteMismatch) as raised, replay:
        ask(provider.url, "bye")
    message = str(raised.value)
    assert raised.value.context == "use_cassette"
    assert "body.messages[0].content: recorded 'hi', incoming 'bye'" in message
    assert all(hint in message for hint in USE_CASSETTE_HINTS), message
    assert not any(hint in message for hint in PYTEST_HINTS), message


def test_a_missing_cassette_says_how_to_record_it_with_use_cassette(tmp_path: Path) -> None:
    replay = llmcassette.use_cassette(tmp_path / "missing.jsonl", record_mode="none")
    with pytest.raises(CassetteMismatch) as raised, replay:
        ask("http://127.0.0.1:9", "hi")
    assert "record it: use_cassette(..., record_mode='once')" in str(raised.value)
    assert "--record-mode" not in str(raised.value)


CONFTEST_FIXING_THE_MODE = """
import pytest

@pytest.fixture(scope="session")
def vcr_config():
    # As langchain's and openinference's suites do: pytest-recording lets this record_mode
    # win over --record-mode.
    return {"record_mode": "once"}
"""


def test_a_record_mode_set_in_vcr_config_is_overridden_by_the_hinted_flag(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST_FIXING_THE_MODE)
    pytester.makepyfile(test_mod=TEST)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess().assert_outcomes(passed=1)
        (cassette,) = (pytester.path / "cassettes").rglob("*.jsonl")
        monkeypatch.setenv("PROMPT", "bye")

        # The hint pytest users know does nothing here: vcr_config's "once" wins.
        pytester.runpytest_subprocess("--record-mode=rewrite").assert_outcomes(failed=1)
        assert "bye" not in cassette.read_text()
        # So the mismatch gives the flag that wins over it...
        result = pytester.runpytest_subprocess()
        result.assert_outcomes(failed=1)
        hint = (
            "record again (pytest --llmcassette-record-mode=rewrite; vcr_config or the vcr "
            "marker sets record_mode, which --record-mode does not override)"
        )
        assert hint in result.stdout.str().replace("\nE         ", " ")
        # ...and following it records the test again.
        pytester.runpytest_subprocess("--llmcassette-record-mode=rewrite").assert_outcomes(passed=1)
    assert cassette.read_text().count('"type":"request"') == 1
    assert "bye" in cassette.read_text()
    # Replaying is a replay too, whatever vcr_config says: a missing cassette fails.
    cassette.unlink()
    result = pytester.runpytest_subprocess("--llmcassette-record-mode=none")
    result.assert_outcomes(failed=1)
    assert not cassette.exists()


def test_a_marker_record_mode_is_overridden_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_mod=TEST.replace("@pytest.mark.vcr", '@pytest.mark.vcr(record_mode="none")')
    )
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(failed=1)
        assert not (pytester.path / "cassettes").exists()
        pytester.runpytest_subprocess("--llmcassette-record-mode=once").assert_outcomes(passed=1)
    assert len(list((pytester.path / "cassettes").rglob("*.jsonl"))) == 1
