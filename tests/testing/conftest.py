"""Fixtures for the tests of the bundled local provider."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmcassette.testing import LocalProvider


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    """A fresh provider on 127.0.0.1, stopped after the test."""
    with LocalProvider() as server:
        yield server
