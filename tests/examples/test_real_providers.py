"""Example cassettes recorded against the real APIs, for the tests marked ``real_provider``.

``nox -s record`` records them when ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` are set;
otherwise, and in normal runs without a recorded cassette, they are skipped. Keys never
reach the cassette: redaction replaces them before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_provider


def _needs(key: str, record_mode: str, request: pytest.FixtureRequest, cassette_dir: str) -> None:
    cassette = Path(cassette_dir) / f"{request.node.name}.jsonl"
    if record_mode == "none" and not cassette.exists():
        pytest.skip(f"not recorded yet: run `nox -s record` with {key} set")
    if record_mode != "none" and not os.environ.get(key):
        pytest.skip(f"{key} is not set: the real API cannot be recorded")


@pytest.mark.vcr
def test_openai_chat_stream(
    record_mode: str, request: pytest.FixtureRequest, vcr_cassette_dir: str
) -> None:
    _needs("OPENAI_API_KEY", record_mode, request, vcr_cassette_dir)
    import openai

    client = openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY", "sk-replay"), max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Reply with the single word: cassette"}],
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert "cassette" in text.lower()


@pytest.mark.vcr
def test_anthropic_messages_stream(
    record_mode: str, request: pytest.FixtureRequest, vcr_cassette_dir: str
) -> None:
    _needs("ANTHROPIC_API_KEY", record_mode, request, vcr_cassette_dir)
    import anthropic

    client = anthropic.Anthropic(
        api_key=os.environ.get("ANTHROPIC_API_KEY", "sk-ant-replay"), max_retries=0
    )
    with client.messages.stream(
        model="claude-haiku-4-5",
        max_tokens=32,
        messages=[{"role": "user", "content": "Reply with the single word: cassette"}],
    ) as stream:
        text = "".join(stream.text_stream)
    assert "cassette" in text.lower()
