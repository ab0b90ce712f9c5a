"""A live local provider and cassettes recorded from it through the real SDKs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmcassette.testing import LocalProvider


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as server:
        yield server
