"""openai 2.x (on httpx) replays what the current openai SDK (on httpx2) recorded.

Runs in the ``tests(clients="openai2")`` nox session; skipped where openai 3.x is installed
(the two cannot share an environment).
"""

from __future__ import annotations

import httpx
import pytest

import llmcassette
from llmcassette._vcr.mismatch import RAISED

from ._support import OPENAI_ANSWER, OPENAI_PROMPT, SOURCES, STABLE_ORIGIN, Replayer

openai = pytest.importorskip("openai")
if not openai.__version__.startswith("2."):
    pytest.skip(f"needs openai 2.x, found {openai.__version__}", allow_module_level=True)

MESSAGES = [{"role": "user", "content": OPENAI_PROMPT}]


def test_openai2_uses_httpx(replayer: Replayer) -> None:
    """The point of this module: the SDK's requests go through httpx, not httpx2."""
    with openai.OpenAI(base_url=replayer.openai_base_url, api_key="sk-other") as client:
        assert isinstance(client._client, httpx.Client)


def test_chat(replayer: Replayer) -> None:
    with (
        replayer.replay("test_openai_chat"),
        openai.OpenAI(
            base_url=replayer.openai_base_url, api_key="sk-other", max_retries=0
        ) as client,
    ):
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert completion.choices[0].message.content == OPENAI_ANSWER


def test_chat_stream(replayer: Replayer) -> None:
    with (
        replayer.replay("test_openai_chat_stream"),
        openai.OpenAI(
            base_url=replayer.openai_base_url, api_key="sk-other", max_retries=0
        ) as client,
    ):
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(pieces) == OPENAI_ANSWER
    assert len(pieces) > 1, "the replayed stream came as one piece"


async def test_async_chat(replayer: Replayer) -> None:
    with replayer.replay("test_openai_chat"):
        async with openai.AsyncOpenAI(
            base_url=replayer.openai_base_url, api_key="sk-other", max_retries=0
        ) as client:
            completion = await client.chat.completions.create(
                model="gpt-4o-mini", messages=MESSAGES
            )
    assert completion.choices[0].message.content == OPENAI_ANSWER


async def test_async_chat_stream(replayer: Replayer) -> None:
    with replayer.replay("test_openai_chat_stream"):
        async with openai.AsyncOpenAI(
            base_url=replayer.openai_base_url, api_key="sk-other", max_retries=0
        ) as client:
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", messages=MESSAGES, stream=True
            )
            pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    assert "".join(pieces) == OPENAI_ANSWER
    assert len(pieces) > 1, "the replayed stream came as one piece"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_mismatch_costs_one_attempt_and_names_the_path(
    replayer: Replayer, is_async: bool
) -> None:
    """openai 2.x retries whatever its transport raises, with backoff; llmcassette answers
    an unanswerable request with ``x-should-retry: false`` and the report as the error."""
    changed = [{"role": "user", "content": "a prompt never recorded"}]

    async def ask() -> None:
        if is_async:
            async with openai.AsyncOpenAI(
                base_url=replayer.openai_base_url, api_key="sk-other"
            ) as client:
                await client.chat.completions.create(model="gpt-4o-mini", messages=changed)
        else:
            with openai.OpenAI(base_url=replayer.openai_base_url, api_key="sk-other") as client:
                client.chat.completions.create(model="gpt-4o-mini", messages=changed)

    path = SOURCES / "test_openai_chat.jsonl"
    match = {"hosts": {replayer.provider.url: STABLE_ORIGIN}}
    raised = len(RAISED)
    with (
        llmcassette.use_cassette(str(path), record_mode="none", match=match),
        pytest.raises(openai.APIStatusError) as caught,
    ):
        await ask()
    # One attempt: the SDK's two retries, and the backoff before them, never happened.
    assert len(RAISED) == raised + 1
    assert caught.value.status_code == 460
    assert "body.messages[0].content: recorded" in str(caught.value)
    assert "incoming 'a prompt never recorded'" in str(caught.value)
