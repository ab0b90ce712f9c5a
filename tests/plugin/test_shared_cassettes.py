"""A cassette shared between tests: a test that names another test's cassette may play a
part of it; only its own cassette must be played whole (issue 19, shared cassettes)."""

from __future__ import annotations

import pytest

from llmcassette.cli.main import main
from llmcassette.testing import LocalProvider

TESTS = """
import os

import httpx2
import pytest

URL = os.environ["PROVIDER_URL"]


def ask(prompt):
    response = httpx2.post(
        f"{URL}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        headers={"authorization": "Bearer sk-test"},
    )
    assert response.status_code == 200


@pytest.mark.vcr
def test_a_library():
    ask("one")
    ask("two")


@pytest.mark.vcr("test_a_library.jsonl")
def test_b_uses_one():
    ask("two")
"""

OWN_UNPLAYED = """
import os

import httpx2
import pytest

URL = os.environ["PROVIDER_URL"]


@pytest.mark.vcr
def test_c_asks_less():
    for prompt in os.environ["PROMPTS"].split(","):
        httpx2.post(
            f"{URL}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
            headers={"authorization": "Bearer sk-test"},
        )
"""


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_a_test_may_play_part_of_a_cassette_it_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    pytester.makepyfile(test_mod=TESTS)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        # test_a records first (serial); under xdist test_b may run before the shared
        # cassette exists, and records its one call into its own cassette
        recorded = pytester.runpytest_subprocess("--record-mode=once", "-p", "no:randomly")
        recorded.assert_outcomes(passed=2)
        replayed = pytester.runpytest_subprocess("--record-mode=none", *workers)
    replayed.assert_outcomes(passed=2)
    assert "test_b_uses_one.jsonl" not in replayed.stdout.str()


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_a_shared_cassette_records_and_replays_under_the_same_workers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    # Recording under xdist too: whichever of the two tests runs first, neither fails and
    # no message names a file that is never written.
    pytester.makepyfile(test_mod=TESTS)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        recorded = pytester.runpytest_subprocess("--record-mode=once", *workers)
        recorded.assert_outcomes(passed=2)
    replayed = pytester.runpytest_subprocess("--record-mode=none", *workers)
    replayed.assert_outcomes(passed=2)
    for run in (recorded, replayed):
        assert "test_b_uses_one.jsonl" not in run.stdout.str()


def test_a_test_that_leaves_its_own_cassette_unplayed_still_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=OWN_UNPLAYED)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        monkeypatch.setenv("PROMPTS", "one,two")
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
        monkeypatch.setenv("PROMPTS", "one")
        replayed = pytester.runpytest_subprocess("--record-mode=none")
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["*1 of the 2 interactions recorded in *test_c_asks_less.jsonl*"])


def test_a_marker_naming_a_vcrpy_cassette_plays_it_before_and_after_conversion(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pydantic-ai's tests name other tests' cassettes by their YAML names
    # (`@pytest.mark.vcr("test_x_real_api.yaml")`): once `convert` has made the .jsonl and
    # the .yaml is deleted, the marker still finds it.
    pytester.makepyfile(test_mod=TESTS.replace('"test_a_library.jsonl"', '"test_a_library.yaml"'))
    folder = pytester.path / "cassettes" / "test_mod"
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        recorded = pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once")
        recorded.assert_outcomes(passed=2)
    assert sorted(path.name for path in folder.iterdir()) == ["test_a_library.yaml"]
    pytester.runpytest_subprocess("--record-mode=none").assert_outcomes(passed=2)
    assert main(["convert", str(folder)]) == 0
    (folder / "test_a_library.yaml").unlink()
    pytester.runpytest_subprocess("--record-mode=none").assert_outcomes(passed=2)


def test_a_mismatch_names_the_cassette_the_test_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # test_b replays test_a's cassette and has none of its own: the message must point at
    # the file its recordings came from, not only at test_b's, which does not exist.
    pytester.makepyfile(test_mod=TESTS)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        recorded = pytester.runpytest_subprocess("--record-mode=once", "-p", "no:randomly")
        recorded.assert_outcomes(passed=2)
    pytester.makepyfile(
        test_mod=TESTS.replace(
            'def test_b_uses_one():\n    ask("two")', 'def test_b_uses_one():\n    ask("Two")'
        )
    )
    replayed = pytester.runpytest_subprocess("--record-mode=none", "-p", "no:randomly")
    replayed.assert_outcomes(passed=1, failed=1)
    replayed.stdout.fnmatch_lines(
        [
            "body.messages*.content: recorded 'two', incoming 'Two'  *",
            "  closest recorded: interaction #2 of test_a_library.jsonl (POST *)",
            "    #1 of test_a_library.jsonl: 1 difference, first *",
            "  cassette: */test_b_uses_one.jsonl (0 interactions, 0 played, record_mode 'none')",
            "  also loaded, as the test names it: */test_mod/test_a_library.jsonl "
            "(2 interactions, 0 played)",
        ]
    )
