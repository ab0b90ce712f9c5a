"""llmcassette as a contender of the shared record/replay benchmark (``shared/bench``).

``benchmarks/run.py`` copies this module into a scratch copy of the harness, as
``contenders/llmcassette_contender.py``, so the relative import below resolves to the
harness's ``contenders`` package. It is not importable from this repository on its own.

llmcassette is driven through its public entry point, ``llmcassette.use_cassette``, with
its defaults: the ``jsonl`` serializer and vcrpy's default ``match_on`` plus the semantic
``llm_body`` matcher. The harness passes a path that already ends in ``.jsonl``.

A second contender, ``llmcassette-no-redaction``, is the same with ``redaction=False``: it
is not how anyone should record, but it tells in the same run what redaction (on by
default) adds to recording.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from . import Contender, register  # type: ignore[import-not-found]  # the harness's package


class LlmCassette(Contender):  # type: ignore[misc]
    id = "llmcassette"
    title = "llmcassette (this checkout), jsonl, match_on + llm_body"
    env = "llmcassette"
    suffix = ".jsonl"
    modules = ("llmcassette", "vcr")
    notes = (
        "llmcassette.use_cassette(path, record_mode=...): vcrpy 9.4.2 underneath, llmcassette's "
        "JSONL persister and its semantic llm_body matcher on top of vcrpy's default match_on."
    )

    @contextlib.contextmanager
    def recording(self, path: str, n: int, url: str) -> Iterator[Any]:
        import llmcassette  # imported here: the worker loads the registry before its clock

        with llmcassette.use_cassette(path, record_mode="once") as cassette:
            yield cassette

    @contextlib.contextmanager
    def replaying(self, path: str, n: int, url: str) -> Iterator[Any]:
        import llmcassette

        # The harness's cold load opens the cassette and plays nothing: like vcrpy, leave
        # unplayed interactions unreported (the harness checks every replayed answer).
        with llmcassette.use_cassette(path, record_mode="none", allow_unused=True) as cassette:
            yield cassette


class LlmCassetteWithoutRedaction(LlmCassette):
    id = "llmcassette-no-redaction"
    title = "llmcassette (this checkout), as above with redaction=False"
    notes = "llmcassette with redaction turned off, to show what redaction costs."

    @contextlib.contextmanager
    def recording(self, path: str, n: int, url: str) -> Iterator[Any]:
        import llmcassette

        with llmcassette.use_cassette(path, record_mode="once", redaction=False) as cassette:
            yield cassette

    @contextlib.contextmanager
    def replaying(self, path: str, n: int, url: str) -> Iterator[Any]:
        import llmcassette

        with llmcassette.use_cassette(
            path, record_mode="none", redaction=False, allow_unused=True
        ) as cassette:
            yield cassette


register(LlmCassette())
register(LlmCassetteWithoutRedaction())
