"""Fixtures for the clients matrix: a live provider that must stay silent, and the replayer.

litellm fetches its model cost map (and would fetch tiktoken encodings) from the network when
it is imported; no network exists in tests, so its documented offline switches are set here,
before any test module imports it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from llmcassette.testing import LocalProvider

from ._support import Replayer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    """A running provider the clients point at; replay must not send it anything."""
    with LocalProvider() as server:
        yield server


@pytest.fixture
def replayer(provider: LocalProvider) -> Replayer:
    """Replays the committed SDK recordings for clients pointed at ``provider``."""
    return Replayer(provider)
