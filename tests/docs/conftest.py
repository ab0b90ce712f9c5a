"""Fixtures for running the docs examples: a live local provider the SDKs point at."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

# Dummy keys shaped like real ones, so examples show the placeholders a reader will see
# (`<REDACTED:openai-api-key>`); built in pieces so secret scanners leave this file alone.
OPENAI_KEY = "sk-proj-" + "docs-example-" + "0" * 32
ANTHROPIC_KEY = "sk-ant-" + "api03-docs-example-" + "0" * 24

# SDK settings a developer's shell may carry that would change what an example sends.
_LEAKY = (
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_WEBHOOK_SECRET",
    "ANTHROPIC_AUTH_TOKEN",
    "VCR_RECORD_MODE",
)


@pytest.fixture
def docs_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalProvider]:
    """A LocalProvider that `openai.OpenAI()` and `anthropic.Anthropic()` reach by default."""
    with LocalProvider() as provider:
        monkeypatch.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.anthropic_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        for name in _LEAKY:
            monkeypatch.delenv(name, raising=False)
        yield provider


@pytest.fixture
def docs_workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh directory, made the current one, where a page's examples run."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
