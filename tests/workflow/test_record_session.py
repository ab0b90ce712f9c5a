"""``nox -s record`` records the real-provider example tests when their keys are set.

The session runs ``pytest tests/examples --record-mode=rewrite``. Here the same command runs
on a copy of the project's examples with the keys set and the SDKs' base URLs pointed at the
bundled LocalProvider, so the path is exercised without the real APIs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
KEYS = {
    "OPENAI_API_KEY": "sk-proj-recordsessiontest0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-api03-recordsessiontest0123456789",
}


def copy_examples(pytester: pytest.Pytester) -> None:
    target = pytester.path / "tests" / "examples"
    target.mkdir(parents=True)
    for name in ("conftest.py", "test_real_providers.py"):
        shutil.copy(EXAMPLES / name, target / name)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nmarkers = ["real_provider: recorded against the real API"]\n'
    )


def test_real_provider_tests_record_when_their_keys_are_set(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_examples(pytester)
    folder = pytester.path / "cassettes" / "test_real_providers"
    with LocalProvider() as provider:
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.anthropic_base_url)
        for name in KEYS:
            monkeypatch.delenv(name, raising=False)
        pytester.runpytest_subprocess(
            "tests/examples/test_real_providers.py", "--record-mode=rewrite"
        ).assert_outcomes(skipped=2)
        assert not folder.exists(), "without keys nothing is recorded"

        for name, value in KEYS.items():
            monkeypatch.setenv(name, value)
        pytester.runpytest_subprocess(
            "tests/examples/test_real_providers.py", "--record-mode=rewrite"
        ).assert_outcomes(passed=2)
        assert len(provider.requests) == 2

    recorded = sorted(p.name for p in folder.iterdir())
    assert recorded == ["test_anthropic_messages_stream.jsonl", "test_openai_chat_stream.jsonl"]
    for path in folder.iterdir():
        text = path.read_text()
        assert all(value not in text for value in KEYS.values()), "a key reached the cassette"

    # The normal run replays them with no key and no provider.
    for name in KEYS:
        monkeypatch.delenv(name)
    pytester.runpytest_subprocess("tests/examples/test_real_providers.py").assert_outcomes(passed=2)
