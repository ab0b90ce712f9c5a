"""A cassette shared between tests: a test that names another test's cassette may play a
part of it; only its own cassette must be played whole (issue 19, shared cassettes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmcassette.cassette import jsonl as cassette_file
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


# Three tests recording one cassette file (the default_cassette_name fixture overridden):
# under -n 2 at least one worker records it twice in turn, and two workers may at once.
SHARING = """
import os

import httpx2
import pytest

URL = os.environ["PROVIDER_URL"]


@pytest.fixture
def default_cassette_name():
    return "shared"


@pytest.fixture
def vcr_config():
    return {"allow_unused": True}  # each test plays only its own calls


def ask(prompt):
    response = httpx2.post(
        f"{URL}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        headers={"authorization": "Bearer sk-test"},
    )
    assert response.status_code == 200


@pytest.mark.vcr
@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_ask(name):
    ask(os.environ["ROUND"] + "-" + name)
"""


def _prompts(path: Path) -> list[str]:
    """The prompt of every recorded request, in file order."""
    cassette = cassette_file.read(path.read_bytes(), path)
    bodies = [json.loads(item.request_body or b"null") for item in cassette.interactions]
    return [body["messages"][0]["content"] for body in bodies]


@pytest.mark.parametrize(
    ("mode", "workers"),
    [
        ("--record-mode=rewrite", []),
        ("--record-mode=rewrite", ["-p", "xdist", "-n", "2"]),
        ("--llmcassette-record-mode=rewrite", []),
        ("--record-mode=all", []),
    ],
    ids=["rewrite", "rewrite-xdist", "llmcassette-rewrite", "all"],
)
def test_tests_sharing_a_cassette_keep_each_others_calls_when_recorded_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str, workers: list[str]
) -> None:
    # The session's first save replaces the cassette, its later saves add to it: every
    # test's calls are in the file, and none of the session before.
    pytester.makepyfile(test_mod=SHARING)
    path = pytester.path / "cassettes" / "test_mod" / "shared.jsonl"
    temp = pytester.mkdir("temp")  # where the session notes the cassettes it saved
    monkeypatch.setenv("TMPDIR", str(temp))
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        for round_ in ("old", "new"):
            monkeypatch.setenv("ROUND", round_)
            recorded = pytester.runpytest_subprocess(mode, *workers)
            recorded.assert_outcomes(passed=3)
            assert sorted(_prompts(path)) == [f"{round_}-a", f"{round_}-b", f"{round_}-c"]
    replayed = pytester.runpytest_subprocess("--record-mode=none", *workers)
    replayed.assert_outcomes(passed=3)
    assert list(temp.iterdir()) == []  # the session cleaned up after itself


# A test that no longer makes a call, recorded again from scratch: its own cassette goes;
# a cassette another test of the session shares, or one whose test failed, stays.
QUIETER = """
import os

import httpx2
import pytest

URL = os.environ["PROVIDER_URL"]
CALLING = os.environ["CALLING"] == "yes"


def ask(prompt):
    response = httpx2.post(
        f"{URL}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        headers={"authorization": "Bearer sk-test"},
    )
    assert response.status_code == 200


@pytest.mark.vcr
def test_alone():
    if CALLING:
        ask("alone")


@pytest.mark.vcr
def test_fails():
    if CALLING:
        ask("fails")
    else:
        pytest.fail("broken for now")


@pytest.mark.vcr(allow_unused=True)
@pytest.mark.default_cassette("shared")
def test_quiet():
    if CALLING:
        ask("quiet")


@pytest.mark.vcr(allow_unused=True)
@pytest.mark.default_cassette("shared")
def test_talks():
    ask("talks")
"""


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_a_test_that_no_longer_calls_loses_its_own_cassette_only(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    pytester.makepyfile(test_mod=QUIETER)
    folder = pytester.path / "cassettes" / "test_mod"
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        monkeypatch.setenv("CALLING", "yes")
        pytester.runpytest_subprocess("--record-mode=rewrite", *workers).assert_outcomes(passed=4)
        monkeypatch.setenv("CALLING", "no")
        recorded = pytester.runpytest_subprocess("--record-mode=rewrite", *workers)
    recorded.assert_outcomes(passed=3, failed=1)
    recorded.stdout.fnmatch_lines(
        ["*llmcassette: cassettes removed*", "  cassettes/test_mod/test_alone.jsonl"]
    )
    assert sorted(path.name for path in folder.iterdir()) == ["shared.jsonl", "test_fails.jsonl"]
    assert _prompts(folder / "shared.jsonl") == ["talks"]
    assert _prompts(folder / "test_fails.jsonl") == ["fails"]  # kept, as failed tests keep it
    replayed = pytester.runpytest_subprocess("--record-mode=none", "-k", "not fails", *workers)
    replayed.assert_outcomes(passed=3)
