"""Example cassettes recorded through the anthropic SDK (httpx2)."""

from __future__ import annotations

import anthropic
import pytest


def client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key="sk-ant-example", max_retries=0)


@pytest.mark.vcr
def test_messages_stream(base_url: str) -> None:
    with client(base_url).messages.stream(
        model="claude-haiku-4-5",
        max_tokens=64,
        messages=[{"role": "user", "content": "Name a colour"}],
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "You said: Name a colour"
    assert final.usage.output_tokens > 0
    assert final.stop_reason == "end_turn"
