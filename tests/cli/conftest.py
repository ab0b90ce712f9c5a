"""Cassettes recorded for real against the LocalProvider, and the CLI run as a subprocess."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import openai
import pytest
from _cli_support import WEATHER_TOOL, Record

import llmcassette
from llmcassette.testing import LocalProvider


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


@pytest.fixture
def record(provider: LocalProvider) -> Record:
    """``record(path, prompts, ...)``: one OpenAI SDK call per prompt into ``path`` (.jsonl).

    The first call streams; ``tool_prompt`` adds a call that answers with a tool call whose
    ``city`` argument is that prompt.
    """

    def run(
        path: Path,
        prompts: Sequence[str] = ("Hi", "Yo"),
        *,
        tool_prompt: str | None = None,
        stream_first: bool = True,
    ) -> Path:
        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-t", max_retries=0)
        with llmcassette.use_cassette(path.with_suffix("")):
            for number, prompt in enumerate(prompts):
                messages: Any = [{"role": "user", "content": prompt}]
                if number == 0 and stream_first:
                    list(
                        client.chat.completions.create(
                            model="gpt-4o-mini", messages=messages, stream=True
                        )
                    )
                else:
                    client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            if tool_prompt is not None:
                client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[{"role": "user", "content": tool_prompt}],
                    tools=[WEATHER_TOOL],
                )
        assert path.is_file(), f"{path}: give record() a .jsonl path"
        return path

    return run
