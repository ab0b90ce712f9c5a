"""A live local provider for the tests of the public API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmcassette.testing import LocalProvider


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running
