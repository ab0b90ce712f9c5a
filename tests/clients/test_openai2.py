"""openai 2.x (on httpx) replays what the current openai SDK (on httpx2) recorded.

Runs in the ``tests(clients="openai2")`` nox session; skipped where openai 3.x is installed
(the two cannot share an environment).
"""

from __future__ import annotations

import httpx
import pytest

from ._support import OPENAI_ANSWER, OPENAI_PROMPT, Replayer

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
