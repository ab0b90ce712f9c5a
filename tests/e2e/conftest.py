"""End-to-end fixtures: a live local provider, a cassette path, and a record/replay driver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

from ._support import Recorder


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    """A local OpenAI/Anthropic/Ollama look-alike on 127.0.0.1, one per test."""
    server = LocalProvider(host="127.0.0.1", port=0)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def cassette_path(tmp_path: Path) -> Path:
    """Where this test's cassette goes; it does not exist yet."""
    return tmp_path / "cassettes" / "e2e.jsonl"


@pytest.fixture
def recorder(provider: LocalProvider, cassette_path: Path) -> Recorder:
    """Record-then-replay driver bound to this test's provider and cassette."""
    return Recorder(provider, cassette_path)
