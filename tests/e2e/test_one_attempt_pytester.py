"""The one-attempt bar as a whole pytest run: a changed prompt through openai and anthropic
(sync and async, default ``max_retries``) fails at most 0.5 s slower than the same test
passing, and the failure the test shows names the path that changed (issue 19)."""

from __future__ import annotations

import re

import pytest

from llmcassette.testing import LocalProvider

ASK = """
import asyncio
import os

import anthropic
import openai
import pytest

URL = os.environ["PROVIDER_URL"]
KEY = "sk-local-key"


async def ask(sdk, is_async, prompt):
    messages = [{"role": "user", "content": prompt}]
    if sdk == "openai":
        options = {"base_url": URL + "/v1", "api_key": KEY}
        if is_async:
            async with openai.AsyncOpenAI(**options) as client:
                await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        else:
            with openai.OpenAI(**options) as client:
                client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        return
    options = {"base_url": URL, "api_key": KEY}
    request = {"model": "claude-haiku-4-5", "max_tokens": 32, "messages": messages}
    if is_async:
        async with anthropic.AsyncAnthropic(**options) as client:
            await client.messages.create(**request)
    else:
        with anthropic.Anthropic(**options) as client:
            client.messages.create(**request)


@pytest.mark.vcr
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_ask(sdk, is_async):
    asyncio.run(ask(sdk, is_async, os.environ["PROMPT"]))
"""

DURATION = re.compile(r"^([\d.]+)s call\s+test_mod\.py::test_ask\[(\w+)-(\w+)\]", re.MULTILINE)


def call_durations(output: str) -> dict[str, float]:
    return {f"{sdk}-{mode}": float(s) for s, sdk, mode in DURATION.findall(output)}


def test_a_changed_prompt_fails_as_fast_as_the_test_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=ASK)
    run = ("--durations=0", "--durations-min=0", "-p", "no:randomly")
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        monkeypatch.setenv("PROMPT", "the recorded prompt")
        pytester.runpytest_subprocess("--record-mode=once", *run).assert_outcomes(passed=4)
    passing = pytester.runpytest_subprocess("--record-mode=none", *run)
    passing.assert_outcomes(passed=4)
    monkeypatch.setenv("PROMPT", "a changed prompt")
    failing = pytester.runpytest_subprocess("--record-mode=none", *run)
    failing.assert_outcomes(failed=4)
    passed_in, failed_in = (
        call_durations(passing.stdout.str()),
        call_durations(failing.stdout.str()),
    )
    assert (
        set(failed_in)
        == set(passed_in)
        == {"openai-sync", "openai-async", "anthropic-sync", "anthropic-async"}
    )
    for test, seconds in failed_in.items():
        assert seconds <= passed_in[test] + 0.5, f"{test}: {seconds} s, passing {passed_in[test]} s"
    out = failing.stdout.str()
    # The SDK's own exception, as the test sees it, carries the path-level difference.
    assert out.count("body.messages[0].content: recorded 'the recorded prompt'") >= 4
    assert "call #2" not in out, "a retry would be a second call"
