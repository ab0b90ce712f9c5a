"""Calls made by a fixture of wider scope than a test (module, session): in the cassette of
whichever test first needed the fixture, they are the fixture's, not that test's."""

from __future__ import annotations

import pytest

from llmcassette.testing import LocalProvider

ASK = """
import os

import httpx2
import pytest

import llmcassette

URL = os.environ["PROVIDER_URL"]


def ask(prompt):
    response = httpx2.post(
        f"{URL}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        headers={"authorization": "Bearer sk-test"},
    )
    assert response.status_code == 200
    return response.json()
"""

# The fixture is set up inside the cassette of the test that asks for it first.
LAZY = (
    ASK
    + """

@pytest.fixture(scope="module")
def answer():
    return ask("shared")


@pytest.mark.vcr
def test_a(request):
    assert request.getfixturevalue("answer")


@pytest.mark.vcr
def test_b(request):
    assert request.getfixturevalue("answer")
"""
)

# docs/pytest.md, "Fixtures shared by several tests": a cassette of the fixture's own.
OWN_CASSETTE = (
    ASK
    + """

@pytest.fixture(scope="module")
def answer(vcr_cassette_dir, record_mode):
    mode = "all" if record_mode == "rewrite" else record_mode
    path = os.path.join(vcr_cassette_dir, "answer")
    with llmcassette.use_cassette(path, record_mode=mode, allow_unused=True):
        return ask("shared")


@pytest.mark.vcr
def test_a(request):
    assert request.getfixturevalue("answer")


@pytest.mark.vcr
def test_b(answer):
    assert answer


@pytest.mark.vcr
def test_c(request):
    assert request.getfixturevalue("answer")
    ask("own")
"""
)

WORKERS = pytest.mark.parametrize(
    "workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"]
)


@WORKERS
def test_a_fixture_call_in_a_tests_cassette_is_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    pytester.makepyfile(test_mod=LAZY)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        recorded = pytester.runpytest_subprocess("--record-mode=rewrite", *workers)
        recorded.assert_outcomes(passed=2)  # a warning from each worker that set it up
        alone = pytester.runpytest_subprocess("test_mod.py::test_b")
    recorded.stdout.fnmatch_lines(
        [
            "*test_mod.py:*: FixtureCallsWarning: *fixture 'answer' (module scope) made 1 call "
            "inside the cassette of test_mod.py::test_*, the test that first needed it*",
            '*how to fix: give the fixture a cassette of its own (docs/pytest.md, "Fixtures '
            'shared by several tests")',
        ]
    )
    if workers:  # each worker may have set the fixture up, in test_a's and in test_b's
        return
    # Run alone, test_b sets the fixture up in a cassette that never held its call: the
    # mismatch comes with the warning that says why.
    alone.assert_outcomes(failed=1, warnings=1)
    alone.stdout.fnmatch_lines(
        [
            "*the cassette does not exist: cassettes/test_mod/test_b.jsonl",
            "*made 1 call inside the cassette of test_mod.py::test_b*",
        ]
    )


@WORKERS
def test_a_fixture_with_its_own_cassette_replays_for_any_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    pytester.makepyfile(test_mod=OWN_CASSETTE)
    folder = pytester.path / "cassettes" / "test_mod"
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        recorded = pytester.runpytest_subprocess("--record-mode=rewrite", *workers)
        recorded.assert_outcomes(passed=3)
        assert sorted(path.name for path in folder.iterdir()) == ["answer.jsonl", "test_c.jsonl"]
        served = len(provider.requests)
        runs = [
            pytester.runpytest_subprocess(*workers),
            *(pytester.runpytest_subprocess(f"test_mod.py::test_{test}") for test in "abc"),
        ]
        assert len(provider.requests) == served  # every run replayed, the fixture's call too
    for run in [recorded, *runs]:
        assert "FixtureCallsWarning" not in run.stdout.str()
    runs[0].assert_outcomes(passed=3)
    for run in runs[1:]:
        run.assert_outcomes(passed=1)
