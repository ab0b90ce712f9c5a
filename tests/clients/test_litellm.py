"""litellm replays what the current openai and anthropic SDKs recorded.

litellm's ``openai/`` route drives the openai SDK (whichever version is installed); its
``anthropic/`` route builds the request itself with httpx and always sends message content
as text blocks, which ``llmcassette.matching.normalizers.text_blocks`` matches to the SDK's string.
Runs in the ``openai2`` and ``frameworks`` nox sessions; skipped where litellm is missing
(the conftest switches its model cost map to the bundled copy: no network here).
"""

from __future__ import annotations

from typing import Any

import pytest

from llmcassette.matching.normalizers import text_blocks

from ._support import (
    ANTHROPIC_ANSWER,
    ANTHROPIC_MAX_TOKENS,
    ANTHROPIC_PROMPT,
    OPENAI_ANSWER,
    OPENAI_PROMPT,
    Replayer,
    error_chain_text,
)

litellm = pytest.importorskip("litellm")
litellm.suppress_debug_info = True

# litellm's own pydantic types warn on import; that is litellm's business, not this matrix's.
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* (is|are) using the `ReadOnly` qualifier")


async def ask(*, streamed: bool, run_async: bool, **request: Any) -> str:
    """The answer text, through ``completion`` or ``acompletion``, streamed or not."""
    if run_async:
        response = await litellm.acompletion(stream=streamed, num_retries=0, **request)
        if streamed:
            return "".join([c.choices[0].delta.content or "" async for c in response])
        return str(response.choices[0].message.content)
    response = litellm.completion(stream=streamed, num_retries=0, **request)
    if streamed:
        return "".join(c.choices[0].delta.content or "" for c in response)
    return str(response.choices[0].message.content)


CALLS = pytest.mark.parametrize(
    ("streamed", "run_async"),
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["completion", "completion-stream", "acompletion", "acompletion-stream"],
)


@CALLS
async def test_openai_route(replayer: Replayer, streamed: bool, run_async: bool) -> None:
    recording = "test_openai_chat_stream" if streamed else "test_openai_chat"
    with replayer.replay(recording):
        text = await ask(
            streamed=streamed,
            run_async=run_async,
            model="openai/gpt-4o-mini",
            messages=[{"role": "user", "content": OPENAI_PROMPT}],
            api_base=replayer.openai_base_url,
            api_key="sk-other",
        )
    assert text == OPENAI_ANSWER


@CALLS
async def test_anthropic_route(replayer: Replayer, streamed: bool, run_async: bool) -> None:
    recording = "test_anthropic_messages_stream" if streamed else "test_anthropic_messages"
    with replayer.replay(recording, text_blocks):
        text = await ask(
            streamed=streamed,
            run_async=run_async,
            model="anthropic/claude-haiku-4-5",
            max_tokens=ANTHROPIC_MAX_TOKENS,
            messages=[{"role": "user", "content": ANTHROPIC_PROMPT}],
            api_base=replayer.anthropic_base_url,
            api_key="sk-ant-other",
        )
    assert text == ANTHROPIC_ANSWER


async def test_anthropic_route_needs_the_text_blocks_normalizer(replayer: Replayer) -> None:
    """Without it the request differs from the SDK's, and the report says where."""
    with (
        pytest.raises(litellm.InternalServerError) as raised,
        replayer.replay("test_anthropic_messages"),
    ):
        await ask(
            streamed=False,
            run_async=False,
            model="anthropic/claude-haiku-4-5",
            max_tokens=ANTHROPIC_MAX_TOKENS,
            messages=[{"role": "user", "content": ANTHROPIC_PROMPT}],
            api_base=replayer.anthropic_base_url,
            api_key="sk-ant-other",
        )
    assert "body.messages[0].content: recorded 'Which clients" in error_chain_text(raised.value)


async def test_text_blocks_normalizer_still_tells_prompts_apart(replayer: Replayer) -> None:
    with (
        pytest.raises(litellm.InternalServerError) as raised,
        replayer.replay("test_anthropic_messages", text_blocks),
    ):
        await ask(
            streamed=False,
            run_async=False,
            model="anthropic/claude-haiku-4-5",
            max_tokens=ANTHROPIC_MAX_TOKENS,
            messages=[{"role": "user", "content": "Another question"}],
            api_base=replayer.anthropic_base_url,
            api_key="sk-ant-other",
        )
    assert "body.messages[0].content[0].text: recorded 'Which" in error_chain_text(raised.value)
