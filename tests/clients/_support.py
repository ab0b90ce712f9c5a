"""The clients matrix's shared parts: the SDK recordings and the replay driver.

The recordings are made by the current openai and anthropic SDKs in
``tests/examples/test_cross_client_sources.py`` (``nox -s record`` writes them again) and
committed under ``cassettes/test_cross_client_sources/``, stored under the stable origin
``http://llm.local``. Here every client points at a live LocalProvider; the ``hosts`` match
option maps its address to that origin, so a request the cassette did not answer would
reach the provider, and the replayer checks that none did.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import llmcassette
from llmcassette.testing import LocalProvider

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "cassettes" / "test_cross_client_sources"
STABLE_ORIGIN = "http://llm.local"

# The prompts of the recordings, and what the SDK got back while recording (the examples
# tests assert the same answers when they replay them with that SDK).
OPENAI_PROMPT = "Which clients can replay this?"
OPENAI_ANSWER = f"You said: {OPENAI_PROMPT}"
ANTHROPIC_PROMPT = "Which clients can replay this answer?"
ANTHROPIC_ANSWER = f"You said: {ANTHROPIC_PROMPT}"
ANTHROPIC_MAX_TOKENS = 64


def error_chain_text(error: BaseException) -> str:
    """Every message along ``__cause__`` / ``__context__``: clients wrap the mismatch."""
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


class Replayer:
    """Replays one committed recording while a client runs, and checks nothing went live."""

    def __init__(self, provider: LocalProvider) -> None:
        self.provider = provider

    @property
    def openai_base_url(self) -> str:
        return self.provider.openai_base_url

    @property
    def anthropic_base_url(self) -> str:
        return self.provider.anthropic_base_url

    @contextmanager
    def replay(
        self, recording: str, *normalizers: Any, sdk_defaults: bool = True
    ) -> Iterator[None]:
        """Answer the client's requests from ``recording`` only (record mode ``none``)."""
        path = SOURCES / f"{recording}.jsonl"
        saved = path.read_bytes()
        before = len(self.provider.requests)
        match = {
            "hosts": {self.provider.url: STABLE_ORIGIN},
            "normalizers": list(normalizers),
            "sdk_defaults": sdk_defaults,
        }
        try:
            with llmcassette.use_cassette(str(path), record_mode="none", match=match) as cassette:
                yield
            assert cassette.all_played, f"the client did not replay {path.name}"
            assert cassette.play_count == 1, f"{path.name} was played {cassette.play_count} times"
        finally:
            assert len(self.provider.requests) == before, "a request reached the provider"
            assert path.read_bytes() == saved, "replaying changed the recording"
