"""DSPy records and replays on its litellm engine; its default engine is out of reach.

DSPy 3.4's ``dspy.LM`` picks its engine with ``engine="auto"``: lm15, vendored in DSPy, which
speaks HTTP/1.1 over the standard library's ``socket`` itself. No HTTP client vcrpy patches
sees those requests, so a cassette neither records nor answers them. With
``engine="litellm"`` the calls go through litellm and httpx, and record and replay like
litellm's own (docs/recipes.md, "DSPy"). ``dspy.Parallel`` runs its calls in threads.
Runs in the ``frameworks`` nox session; skipped where dspy is missing.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

import llmcassette
from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay

# DSPy opens its disk cache when imported: keep it out of the home folder.
os.environ.setdefault("DSPY_CACHEDIR", os.path.join(tempfile.gettempdir(), "llmcassette-dspy"))
dspy = pytest.importorskip("dspy")

KEY = "sk-proj-" + "DspyRecordingKey" * 3


def question(n: int) -> dict[str, str]:
    # The local provider echoes the prompt: the answer field it "writes" is in the question.
    return {"question": f"What is {n} plus {n}?\n\n[[ ## answer ## ]]\n{2 * n}"}


def lm(provider: LocalProvider, engine: str = "litellm") -> Any:
    return dspy.LM(
        "openai/gpt-4o-mini",
        api_base=provider.openai_base_url,
        api_key=KEY,
        cache=False,
        num_retries=0,
        engine=engine,
    )


def requests_in(cassette: Path) -> int:
    return cassette.read_text().count('"type":"request"') if cassette.exists() else 0


def test_predict_sync_and_async(tmp_path: Path) -> None:
    def run(provider: LocalProvider) -> list[str]:
        predict = dspy.Predict("question -> answer")
        with dspy.context(lm=lm(provider)):
            first = predict(**question(1)).answer
            second = asyncio.run(predict.acall(**question(2))).answer
        return [first, second]

    recorded, replayed, cassette = record_then_replay(tmp_path, run)
    assert replayed == recorded
    assert [answer.split()[0] for answer in replayed] == ["2", "4"]
    assert requests_in(cassette) == 2
    assert KEY not in cassette.read_text()


def test_parallel_runs_in_threads(tmp_path: Path) -> None:
    def run(provider: LocalProvider) -> list[str]:
        predict = dspy.Predict("question -> answer")
        with dspy.context(lm=lm(provider)):
            results = dspy.Parallel(num_threads=4)([(predict, question(n)) for n in range(6)])
        return [result.answer for result in results]

    recorded, replayed, cassette = record_then_replay(tmp_path, run)
    assert replayed == recorded
    assert [answer.split()[0] for answer in replayed] == [str(2 * n) for n in range(6)]
    assert requests_in(cassette) == 6


def test_the_default_engine_is_not_seen_by_the_cassette(tmp_path: Path) -> None:
    # What the recipe warns about: if DSPy's default engine moves onto httpx, this fails and
    # the recipe can drop its engine="litellm".
    cassette = tmp_path / "auto.jsonl"
    with LocalProvider() as provider:
        predict = dspy.Predict("question -> answer")
        with (
            llmcassette.use_cassette(cassette, record_mode="once"),
            dspy.context(lm=lm(provider, engine="auto")),
        ):
            answer = predict(**question(3)).answer
        assert answer.split()[0] == "6"
        assert len(provider.requests) == 1
    assert requests_in(cassette) == 0
