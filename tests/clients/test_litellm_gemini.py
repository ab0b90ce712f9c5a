"""litellm's ``gemini/`` route records against the local provider and replays with it stopped.

litellm builds Gemini requests itself (httpx, not google-genai): ``api_base`` takes the place
of ``https://generativelanguage.googleapis.com/v1beta``, and litellm appends
``/models/{model}:generateContent`` (or ``:streamGenerateContent?alt=sse``) to it. Runs in
the ``frameworks`` nox session; skipped where litellm is missing (the conftest switches its
model cost map to the bundled copy: no network here).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay, stored_events

litellm = pytest.importorskip("litellm")
litellm.suppress_debug_info = True

pytestmark = pytest.mark.filterwarnings("ignore:Items? .* (is|are) using the `ReadOnly` qualifier")

PROMPT = "Which frameworks can replay Gemini?"
ANSWER = f"You said: {PROMPT}"
API_KEY = "AIzaSyD-litellm-gemini-key-0000000000000"


def ask(provider: LocalProvider, *, streamed: bool, run_async: bool) -> list[str]:
    """The answer's pieces as litellm hands them over (one piece when not streamed)."""
    request: dict[str, Any] = {
        "model": "gemini/gemini-2.0-flash",
        "messages": [{"role": "user", "content": PROMPT}],
        "api_base": provider.gemini_base_url + "/v1beta",
        "api_key": API_KEY,
        "num_retries": 0,
        "stream": streamed,
    }

    async def asynchronously() -> list[str]:
        response = await litellm.acompletion(**request)
        if streamed:
            return [c.choices[0].delta.content async for c in response]
        return [response.choices[0].message.content]

    if run_async:
        pieces = asyncio.run(asynchronously())
    elif streamed:
        pieces = [c.choices[0].delta.content for c in litellm.completion(**request)]
    else:
        pieces = [litellm.completion(**request).choices[0].message.content]
    # litellm's last streamed chunk carries the finish reason and no text.
    return [piece for piece in pieces if piece]


@pytest.mark.parametrize(
    ("streamed", "run_async"),
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["completion", "completion-stream", "acompletion", "acompletion-stream"],
)
def test_gemini_route(tmp_path: Any, streamed: bool, run_async: bool) -> None:
    recorded, replayed, cassette = record_then_replay(
        tmp_path, lambda provider: ask(provider, streamed=streamed, run_async=run_async)
    )
    assert replayed == recorded
    assert "".join(replayed) == ANSWER
    text = cassette.read_text()
    assert API_KEY not in text
    if streamed:
        assert ":streamGenerateContent?alt=sse" in text
        # One litellm chunk per recorded event: the replay was not merged into fewer reads.
        assert len(replayed) == len(stored_events(cassette)[0]) > 1
    else:
        assert stored_events(cassette) == []
