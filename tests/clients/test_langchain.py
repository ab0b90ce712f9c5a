"""langchain-openai and langchain-anthropic replay what the current SDKs recorded.

Both drive the official SDK underneath. langchain-openai sends ``"stream": false`` on a
plain call, which the SDK leaves out; matching's default ``sdk_defaults`` makes
the two match. Runs in the ``openai2`` (langchain-openai on openai 2.x) and ``frameworks``
nox sessions; each part is skipped where its package is missing.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

import llmcassette

from ._support import (
    ANTHROPIC_ANSWER,
    ANTHROPIC_MAX_TOKENS,
    ANTHROPIC_PROMPT,
    OPENAI_ANSWER,
    OPENAI_PROMPT,
    Replayer,
    error_chain_text,
)

# openai 3.x lets the mismatch through; openai 2.x, which would retry it, gets a response
# that says not to and holds the report (its APIStatusError, status 460).
MISMATCH = (llmcassette.CassetteMismatch, openai.APIStatusError)
CALLS = pytest.mark.parametrize("call", ["invoke", "stream", "ainvoke", "astream"])


async def ask(model: Any, call: str, prompt: str) -> str:
    """The answer text through one of a chat model's four ways of asking."""
    if call == "invoke":
        return str(model.invoke(prompt).text)
    if call == "ainvoke":
        return str((await model.ainvoke(prompt)).text)
    if call == "stream":
        return "".join(chunk.text for chunk in model.stream(prompt))
    return "".join([chunk.text async for chunk in model.astream(prompt)])


def chat_openai(replayer: Replayer) -> Any:
    langchain_openai = pytest.importorskip("langchain_openai")
    return langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", base_url=replayer.openai_base_url, api_key="sk-other", max_retries=0
    )


def chat_anthropic(replayer: Replayer) -> Any:
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    return langchain_anthropic.ChatAnthropic(
        model="claude-haiku-4-5",
        max_tokens=ANTHROPIC_MAX_TOKENS,
        base_url=replayer.anthropic_base_url,
        api_key="sk-ant-other",
        max_retries=0,
    )


@CALLS
async def test_chat_openai(replayer: Replayer, call: str) -> None:
    model = chat_openai(replayer)
    recording = "test_openai_chat_stream" if "stream" in call else "test_openai_chat"
    with replayer.replay(recording):
        text = await ask(model, call, OPENAI_PROMPT)
    assert text == OPENAI_ANSWER


async def test_chat_openai_needs_the_sdk_defaults(replayer: Replayer) -> None:
    """Without them the plain call differs from the SDK's by one field, and the report says so."""
    model = chat_openai(replayer)
    with pytest.raises(MISMATCH) as raised, replayer.replay("test_openai_chat", sdk_defaults=False):
        model.invoke(OPENAI_PROMPT)
    assert "body.stream: recorded (absent), incoming False" in error_chain_text(raised.value)


async def test_stream_normalizer_keeps_streamed_and_plain_apart(replayer: Replayer) -> None:
    """``stream: true`` is not dropped: a streamed call never gets the plain recording."""
    model = chat_openai(replayer)
    with pytest.raises(MISMATCH) as raised, replayer.replay("test_openai_chat"):
        "".join(chunk.text for chunk in model.stream(OPENAI_PROMPT))
    assert "body.stream: recorded (absent), incoming True" in error_chain_text(raised.value)


@CALLS
async def test_chat_anthropic(replayer: Replayer, call: str) -> None:
    model = chat_anthropic(replayer)
    recording = "test_anthropic_messages_stream" if "stream" in call else "test_anthropic_messages"
    with replayer.replay(recording):
        text = await ask(model, call, ANTHROPIC_PROMPT)
    assert text == ANTHROPIC_ANSWER
