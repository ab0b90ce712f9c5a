"""An unused failure reads like a test failure: it points at the test, not at llmcassette's
hook, and tells each unplayed call apart by method, path, model and prompt (issue 19)."""

from __future__ import annotations

from typing import Any

import pytest

from llmcassette.matching.report import last_user_text
from llmcassette.testing import LocalProvider

ASKS_LESS = """
import os

import httpx2
import pytest

URL = os.environ["PROVIDER_URL"]


@pytest.mark.vcr
def test_asks_less():
    for prompt in os.environ["PROMPTS"].split(","):
        httpx2.post(
            f"{URL}/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": prompt},
            ]},
            headers={"authorization": "Bearer sk-test"},
        )
"""


def test_the_unused_failure_points_at_the_test_and_names_each_unplayed_prompt(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=ASKS_LESS)
    long_prompt = "What is the capital of France? Answer in one word and then explain why " * 2
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        monkeypatch.setenv("PROMPTS", f"one,two,{long_prompt}")
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
        monkeypatch.setenv("PROMPTS", "one")
        replayed = pytester.runpytest_subprocess("--record-mode=none")
    replayed.assert_outcomes(failed=1)
    out = replayed.stdout.str()
    replayed.stdout.fnmatch_lines(
        [
            "UnusedInteractionsError: 2 of the 3 interactions recorded in *test_asks_less.jsonl*",
            "E     #2: POST /v1/chat/completions model=gpt-4o-mini 'two'",
            "E     #3: POST /v1/chat/completions model=gpt-4o-mini 'What is the capital of*…'",
            "test_mod.py:9: in test_asks_less: the test passed, but its cassette holds calls*",
            "FAILED test_mod.py::test_asks_less - UnusedInteractionsError: 2 of the 3*",
        ]
    )
    assert "pytest_runtest_call" not in out, "the hook's source is not the failure"
    assert "pytest_plugin.py" not in out


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}, "b"),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
            "hi",
        ),
        ({"input": "plain"}, "plain"),
        ({"contents": [{"role": "user", "parts": [{"text": "gem"}]}]}, "gem"),
        ({"prompt": "complete me"}, "complete me"),
        ({"messages": [{"role": "assistant", "content": "x"}]}, None),
    ],
    ids=["openai", "anthropic-blocks", "responses", "gemini", "completion", "no-user"],
)
def test_the_last_user_text_of_each_api(body: dict[str, Any], text: str | None) -> None:
    assert last_user_text(body) == text


SWALLOWS = """
import contextlib
import os

import httpx2
import pytest

URL = os.environ["PROVIDER_URL"]


@pytest.mark.vcr
def test_swallows():
    for prompt in os.environ["PROMPTS"].split(","):
        with contextlib.suppress(Exception):  # as telemetry code swallows its own errors
            httpx2.post(
                f"{URL}/v1/chat/completions",
                json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]},
                headers={"authorization": "Bearer sk-test"},
            )
"""


def test_a_refusal_the_code_caught_is_the_reason_given(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=SWALLOWS)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        monkeypatch.setenv("PROMPTS", "one,two")
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
        monkeypatch.setenv("PROMPTS", "one,two changed")
        replayed = pytester.runpytest_subprocess("--record-mode=none")
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(
        [
            "UnusedInteractionsError: a request was refused and the code under test caught the "
            "error: body.messages[[]0[]].content: recorded 'two', incoming 'two changed'*",
            "E   1 of the 2 interactions recorded in *test_swallows.jsonl* was not played:",
            "test_mod.py:10: in test_swallows: the test passed, but a request it made was "
            "refused, and the code caught the error",
        ]
    )
