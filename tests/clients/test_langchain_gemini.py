"""langchain-google-genai records against the local provider and replays with it stopped.

``ChatGoogleGenerativeAI`` drives google-genai underneath; its ``base_url`` replaces
``https://generativelanguage.googleapis.com`` (google-genai appends ``/v1beta/models/...``).
Runs in the ``frameworks`` nox session; skipped where langchain-google-genai is missing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import llmcassette
from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay, stored_events
from ._support import error_chain_text

langchain_google_genai = pytest.importorskip("langchain_google_genai")

PROMPT = "Which chains can replay Gemini?"
ANSWER = f"You said: {PROMPT}"
API_KEY = "AIzaSyD-langchain-gemini-key-00000000000"


def ask(provider: LocalProvider, call: str) -> list[str]:
    """The answer's pieces through one of the chat model's four ways of asking."""
    model = langchain_google_genai.ChatGoogleGenerativeAI(
        model="gemini-2.0-flash",
        google_api_key=API_KEY,
        base_url=provider.gemini_base_url,
        max_retries=0,
    )

    async def asynchronously() -> list[str]:
        if call == "ainvoke":
            return [(await model.ainvoke(PROMPT)).text]
        return [chunk.text async for chunk in model.astream(PROMPT)]

    if call == "invoke":
        pieces = [model.invoke(PROMPT).text]
    elif call == "stream":
        pieces = [chunk.text for chunk in model.stream(PROMPT)]
    else:
        pieces = asyncio.run(asynchronously())
    # The stream ends with a chunk that carries the usage and no text.
    return [str(piece) for piece in pieces if piece]


@pytest.mark.parametrize("call", ["invoke", "stream", "ainvoke", "astream"])
def test_chat_google_generative_ai(tmp_path: Path, call: str) -> None:
    recorded, replayed, cassette = record_then_replay(tmp_path, lambda p: ask(p, call))
    assert replayed == recorded
    assert "".join(replayed) == ANSWER
    text = cassette.read_text()
    assert API_KEY not in text
    if "stream" in call:
        assert ":streamGenerateContent?alt=sse" in text
        # One langchain chunk per recorded event: the replay was not merged into fewer reads.
        assert len(replayed) == len(stored_events(cassette)[0]) > 1
    else:
        assert stored_events(cassette) == []


def test_another_prompt_is_not_answered_from_the_cassette(tmp_path: Path) -> None:
    """Replay matches the Gemini body: the mismatch reaches the caller unwrapped, with the path."""
    urls: list[str] = []

    def remember(provider: LocalProvider) -> list[str]:
        urls.append(provider.gemini_base_url)
        return ask(provider, "invoke")

    _, _, cassette = record_then_replay(tmp_path, remember)
    model = langchain_google_genai.ChatGoogleGenerativeAI(
        model="gemini-2.0-flash", google_api_key=API_KEY, base_url=urls[0], max_retries=0
    )
    with (
        pytest.raises(llmcassette.CassetteMismatch) as raised,
        llmcassette.use_cassette(str(cassette), record_mode="none"),
    ):
        model.invoke("Another question")
    report = error_chain_text(raised.value)
    assert "body.contents[0].parts[0].text: recorded 'Which chains" in report
