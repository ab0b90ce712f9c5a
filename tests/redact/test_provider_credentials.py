"""Gemini, Mistral, Cohere and Groq credentials never reach a cassette.

Each test records through llmcassette against the local provider, with the key where that
provider's SDK puts it (google-genai: ``x-goog-api-key``; Gemini REST and older clients:
``?key=``; Mistral and Cohere: a bearer token with no recognisable prefix; Groq: a ``gsk_``
bearer token). The file must not hold the key, the independent fail-closed scan must find
nothing left in it, and it must replay with another key.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette.redact.rules import Rules
from llmcassette.redact.scan import find_in_jsonl
from llmcassette.testing import LocalProvider

GEMINI_KEY = "AIza" + "SyPlanted" + "x" * 26
GROQ_KEY = "gsk_" + "Planted0" * 6 + "Qr7z"
# Mistral and Cohere keys have no prefix: only the header they travel in gives them away.
MISTRAL_KEY = "Pl4ntedMistralKey0123456789abcdef"
COHERE_KEY = "Pl4ntedCohereKey0123456789abcdefgh"
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
CHAT = {"messages": [{"role": "user", "content": "hello"}]}


def _gemini(url: str, key: str, *, in_query: bool, stream: bool) -> httpx.Response:
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    target = f"{url}/v1beta/models/gemini-2.0-flash:{method}"
    if in_query:
        sep = "&" if "?" in target else "?"
        return httpx.post(f"{target}{sep}key={key}", json=GEMINI_BODY)
    return httpx.post(target, json=GEMINI_BODY, headers={"x-goog-api-key": key})


def _bearer(url: str, path: str, model: str, key: str, stream: bool) -> httpx.Response:
    body = {**CHAT, "model": model, "stream": stream}
    return httpx.post(f"{url}{path}", json=body, headers={"authorization": f"Bearer {key}"})


CALLS = {
    "gemini-header": (GEMINI_KEY, lambda u, k, s: _gemini(u, k, in_query=False, stream=s)),
    "gemini-query": (GEMINI_KEY, lambda u, k, s: _gemini(u, k, in_query=True, stream=s)),
    "mistral": (
        MISTRAL_KEY,
        lambda u, k, s: _bearer(u, "/v1/chat/completions", "mistral-small", k, s),
    ),
    "cohere": (COHERE_KEY, lambda u, k, s: _bearer(u, "/v2/chat", "command-r", k, s)),
    "groq": (GROQ_KEY, lambda u, k, s: _bearer(u, "/openai/v1/chat/completions", "llama3", k, s)),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", list(CALLS))
def test_recorded_cassette_holds_no_key(tmp_path: Path, name: str, stream: bool) -> None:
    key, call = CALLS[name]
    cassette = tmp_path / f"{name}.jsonl"
    with LocalProvider() as provider, llmcassette.use_cassette(str(cassette), record_mode="all"):
        recorded = call(provider.url, key, stream)
    assert recorded.status_code == 200, recorded.text
    text = cassette.read_text()
    assert key not in text
    assert find_in_jsonl(Rules(environ={}), text, str(cassette)) == []
    # The provider is stopped; the cassette answers a request sent with another key.
    other = key[:-4] + "Zz99"
    with llmcassette.use_cassette(str(cassette), record_mode="none"):
        replayed = call(provider.url, other, stream)
    assert replayed.content == recorded.content
