"""Module-level state stays bounded in a long-lived process (outside pytest nobody clears it)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

import llmcassette
from llmcassette import config
from llmcassette._vcr import mismatch
from llmcassette.faults import sidecar


@pytest.fixture
def raised() -> Iterator[None]:
    """RAISED as the pytest plugin leaves it between tests: empty, and emptied again after."""
    mismatch.RAISED.clear()
    yield
    mismatch.RAISED.clear()


def test_raised_keeps_only_the_last_mismatches(tmp_path: Path, raised: None) -> None:
    last = None
    with llmcassette.use_cassette(tmp_path / "empty.jsonl", record_mode="none"):
        for attempt in range(3 * mismatch.RAISED_LIMIT):
            with pytest.raises(llmcassette.CassetteMismatch) as caught:
                httpx2.get(f"http://127.0.0.1:9/v1/models?attempt={attempt}")
            last = caught.value
    assert len(mismatch.RAISED) == mismatch.RAISED_LIMIT
    assert mismatch.RAISED[-1] is last
    assert [error.call for error in mismatch.RAISED] == list(  # type: ignore[attr-defined]
        range(2 * mismatch.RAISED_LIMIT + 1, 3 * mismatch.RAISED_LIMIT + 1)
    )


def test_the_sidecar_cache_drops_the_oldest(tmp_path: Path) -> None:
    sidecar._CACHE.clear()
    paths = []
    for number in range(sidecar._CACHE_LIMIT + 10):
        path = tmp_path / f"c{number}.overrides.json"
        path.write_text(json.dumps({"entries": [{"at": 0, "status": 500}]}), encoding="utf-8")
        assert sidecar.load(path) is not None
        paths.append(str(path))
    assert len(sidecar._CACHE) == sidecar._CACHE_LIMIT
    assert list(sidecar._CACHE) == paths[-sidecar._CACHE_LIMIT :]
    # a cached sidecar is still read from the cache, not parsed again
    assert sidecar.load(Path(paths[-1])) is sidecar._CACHE[paths[-1]][1]


def test_the_pyproject_cache_drops_the_oldest(tmp_path: Path) -> None:
    config._tables.clear()
    for number in range(config._TABLES_LIMIT + 5):
        project = tmp_path / f"p{number}"
        project.mkdir()
        (project / "pyproject.toml").write_text(
            f"[tool.llmcassette]\nmax_age = '{number + 1}d'\n", encoding="utf-8"
        )
        _, settings = config.project_settings(project)
        assert settings == {"max_age": f"{number + 1}d"}
    assert len(config._tables) == config._TABLES_LIMIT
    config._tables.clear()


def test_the_cached_pyproject_is_read_again_once_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.llmcassette]\ndrift = 'strict'\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    assert config.project_settings() == (pyproject, {"drift": "strict"})
    assert config.project_settings()[0] is config.project_settings()[0]  # from the cache
    written = pyproject.stat().st_mtime_ns
    pyproject.write_text("[tool.llmcassette]\ndrift = 'off'\n", encoding="utf-8")
    os.utime(pyproject, ns=(written + 10**9, written + 10**9))  # whatever the clock's grain
    assert config.project_settings() == (pyproject, {"drift": "off"})
    (tmp_path / "tests" / "pyproject.toml").mkdir()  # a folder of that name is no project
    assert config.project_settings() == (pyproject, {"drift": "off"})


FAULT_WHILE_RECORDING = """
import httpx2
import pytest
from llmcassette import faults

@pytest.mark.vcr
@pytest.mark.llm_faults(faults.cut_stream(1))
def test_cut():
    httpx2.get("http://127.0.0.1:9/v1/models")
"""

MANY_MISMATCHES = """
import httpx2
import pytest

@pytest.mark.vcr
def test_many():
    for attempt in range(25):
        try:
            httpx2.get(f"http://127.0.0.1:9/v1/models?attempt={attempt}")
        except Exception:
            pass
    assert False
"""


def test_a_fault_error_is_shown_in_the_report(pytester: pytest.Pytester) -> None:
    # RAISED holds fault errors too: the plugin used to read `.reason` from them and crash.
    pytester.makepyfile(test_fault=FAULT_WHILE_RECORDING)
    result = pytester.runpytest_subprocess("--record-mode=once")
    result.assert_outcomes(failed=1)
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*llmcassette: requests the cassette could not answer*",
            "*scheduled fault #1: cut_stream(after=1, then='error')*",
        ]
    )


def test_the_report_says_when_only_the_last_mismatches_are_shown(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_many=MANY_MISMATCHES)
    result = pytester.runpytest_subprocess("--record-mode=none")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "call #25 to GET /v1/models" in output
    assert "call #5 to" not in output
    assert "call #6 to" in output
    assert f"(only the last {mismatch.RAISED_LIMIT} are shown)" in output


def test_parsed_bodies_are_kept_up_to_a_budget_of_bytes() -> None:
    from llmcassette.matching.canonical import _ParsedBodies

    parsed = _ParsedBodies(budget=1000, largest=300)
    bodies = [json.dumps({"n": n, "text": "x" * 180}).encode() for n in range(10)]
    first = [parsed.parse(body, False, None) for body in bodies]
    assert parsed.kept_bytes() <= 1000
    assert parsed.parse(bodies[-1], False, None) is first[-1]  # read last: kept
    assert parsed.parse(bodies[0], False, None) is not first[0]  # the oldest went
    assert parsed.parse(bodies[0], False, None) == first[0]
    large = json.dumps({"text": "y" * 400}).encode()
    assert parsed.parse(large, False, None) is not parsed.parse(large, False, None)
    assert parsed.kept_bytes() <= 1000


def test_matching_keeps_no_body_once_the_budget_is_spent() -> None:
    """A suite of multimodal requests: once their cassettes are closed, their bodies and
    parses are not all held (8,192 of them were, 128 MB for the pydantic-ai corpus)."""
    import gc
    import tracemalloc

    from llmcassette.matching import canonical

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(128):  # 32 MB of request bodies, 256 KB each
            body = json.dumps({"n": number, "image": "A" * 256 * 1024}).encode()
            canonical.body_value(body, "application/json")
            del body
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 20 * 1024 * 1024  # 64 MB of bodies and parses were held
    assert canonical.PARSED.kept_bytes() <= canonical.PARSED.budget
