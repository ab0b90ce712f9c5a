"""Whole pytest runs: a changed request fails with the path that differs, for every client."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

# Each test module records with the provider up (PROVIDER_URL set) and is then run again
# against the cassette with one field of the request changed through the CHANGE variable.
OPENAI_TEST = """
import os
import openai
import pytest

CHANGE = os.environ.get("CHANGE", "")

@pytest.mark.vcr
def test_chat():
    client = openai.OpenAI(base_url=os.environ["PROVIDER_URL"] + "/v1", api_key="sk-test", max_retries=0)
    kwargs = dict(
        model="gpt-4o-mini" if CHANGE != "model" else "gpt-4o",
        messages=[{"role": "user", "content": "hi" if CHANGE != "prompt" else "bye"}],
        temperature=0.2 if CHANGE != "temperature" else 0.7,
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string" if CHANGE != "tool" else "integer"}},
        }}}],
    )
    client.chat.completions.create(**kwargs)
"""

ANTHROPIC_TEST = """
import os
import anthropic
import pytest

@pytest.mark.vcr
def test_messages():
    client = anthropic.Anthropic(base_url=os.environ["PROVIDER_URL"], api_key="sk-ant-test", max_retries=1)
    prompt = "bye" if os.environ.get("CHANGE") == "prompt" else "hi"
    client.messages.create(model="claude-haiku-4-5", max_tokens=20, messages=[{"role": "user", "content": prompt}])
"""

HTTPX_TEST = """
import os
import httpx2
import pytest

@pytest.mark.vcr
def test_query():
    region = "eu" if os.environ.get("CHANGE") == "query" else "us"
    httpx2.get(os.environ["PROVIDER_URL"] + "/v1/models", params={"region": region},
               headers={"authorization": "Bearer sk-test"})
"""


def literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches it literally."""
    return text.replace("[", "[[]")


class Recordings:
    """Cassettes recorded for a test module source, and the provider URL they hold."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.of: dict[str, tuple[Path, str]] = {}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Recordings:
    return Recordings(tmp_path_factory.mktemp("recorded"))


def record_then_change(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    change: str,
    recordings: Recordings | None = None,
) -> Any:
    """Record ``source`` with the provider up, then run it again with ``CHANGE`` set.

    With ``recordings``, a source recorded before in this module is not recorded again: its
    cassettes are copied, and PROVIDER_URL names the (stopped) provider they came from.
    """
    pytester.makepyfile(test_mod=source)
    cassettes = pytester.path / "cassettes"
    if recordings is not None and source in recordings.of:
        copy, url = recordings.of[source]
        shutil.copytree(copy, cassettes)
        monkeypatch.setenv("PROVIDER_URL", url)
    else:
        with LocalProvider() as provider:
            monkeypatch.setenv("PROVIDER_URL", provider.url)
            pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
        if recordings is not None:
            copy = recordings.folder / str(len(recordings.of))
            shutil.copytree(cassettes, copy)
            recordings.of[source] = (copy, provider.url)
    monkeypatch.setenv("CHANGE", change)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    return result


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("prompt", "body.messages[0].content: recorded 'hi', incoming 'bye'"),
        ("temperature", "body.temperature: recorded 0.2, incoming 0.7"),
        ("model", "body.model: recorded 'gpt-4o-mini', incoming 'gpt-4o'"),
        (
            "tool",
            "body.tools[0].function.parameters.properties.city.type: "
            "recorded 'string', incoming 'integer'",
        ),
    ],
)
def test_openai_sdk_reports_the_path(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    recordings: Recordings,
    change: str,
    expected: str,
) -> None:
    result = record_then_change(pytester, monkeypatch, OPENAI_TEST, change, recordings)
    result.stdout.fnmatch_lines(
        [
            f"*{literal(expected)}*[[]call #1 to POST /v1/chat/completions]*",
            "*cassette: *.jsonl (1 interaction, 0 played, record_mode 'none')*",
        ]
    )


def test_anthropic_sdk_gets_the_mismatch_once_and_unwrapped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK retried what its transport raised, twice with backoff, and raised
    # APIConnectionError; the mismatch is now also an AnthropicError, which it lets through.
    result = record_then_change(pytester, monkeypatch, ANTHROPIC_TEST, "prompt")
    output = result.stdout.str()
    assert "APIConnectionError" not in output
    assert "call #2" not in output  # one attempt
    result.stdout.fnmatch_lines(
        [
            "*CassetteMismatch: "
            + literal("body.messages[0].content: recorded 'hi', incoming 'bye'")
            + "*call #1*",
        ]
    )


def test_raw_httpx_reports_a_changed_query_parameter(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = record_then_change(pytester, monkeypatch, HTTPX_TEST, "query")
    result.stdout.fnmatch_lines(
        ["*" + literal("url.query.region[0]: recorded 'us', incoming 'eu'") + "*"]
    )


def test_the_closest_of_five_prompts_leads(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = """
import os
import httpx2
import pytest

PROMPTS = ["a question about cats", "what is the capital of France, in one word please",
           "tell me a joke", "summarise this text", "translate hello into German"]

@pytest.mark.vcr
def test_many():
    if os.environ.get("CHANGE"):
        PROMPTS[1] = "what is the capital of Spain, in one word please"
    for prompt in PROMPTS:
        httpx2.post(os.environ["PROVIDER_URL"] + "/v1/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
                    headers={"authorization": "Bearer sk-test"})
"""
    result = record_then_change(pytester, monkeypatch, source, "one")
    result.stdout.fnmatch_lines(
        [
            "*"
            + literal(
                "body.messages[0].content: recorded 'what is the capital of France, in one word "
                "please', incoming 'what is the capital of Spain, in one word please'"
            )
            + "*call #2 to POST*",
            "*closest recorded: interaction #2*",
            "*cassette: *.jsonl (5 interactions, 1 played, record_mode 'none')*",
        ]
    )


def test_more_calls_than_recorded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = """
import os
import httpx2
import pytest

@pytest.mark.vcr
def test_repeat():
    for _ in range(3 if os.environ.get("CHANGE") else 2):
        httpx2.get(os.environ["PROVIDER_URL"] + "/v1/models", headers={"authorization": "Bearer sk-test"})
"""
    result = record_then_change(pytester, monkeypatch, source, "more")
    result.stdout.fnmatch_lines(
        ["*call #3 to GET /v1/models, but the cassette recorded 2 such calls, all played*"]
    )


UNUSED_TEST = """
import os
import httpx2
import pytest

@pytest.mark.vcr{marker}
def test_calls():
    for name in ["a", "b", "c"][: 1 if os.environ.get("CHANGE") else 3]:
        httpx2.get(os.environ["PROVIDER_URL"] + "/v1/models", params={{"n": name}},
                   headers={{"authorization": "Bearer sk-test"}})
"""


def test_unplayed_interactions_fail_a_replayed_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = record_then_change(pytester, monkeypatch, UNUSED_TEST.format(marker=""), "fewer")
    result.stdout.fnmatch_lines(
        [
            "*UnusedInteractionsError: 2 of the 3 interactions recorded in *test_calls.jsonl "
            "were not played:*",
            "*#2: GET /v1/models?n=b",
            "*#3: GET /v1/models?n=c",
        ]
    )


def test_allow_unused_lets_a_test_play_a_subset(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=UNUSED_TEST.format(marker="(allow_unused=True)"))
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("CHANGE", "fewer")
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
