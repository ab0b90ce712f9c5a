"""What the plugin saves while recording: nothing of a failed test, no error responses.

Whole pytest runs (pytester, in subprocesses) against the bundled LocalProvider.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

TEST_MODULE = """
import os
import httpx2
import pytest

URL = os.environ["PROVIDER_URL"] + "/v1/chat/completions"


def chat(model="gpt-4o-mini", content="hi"):
    body = {{"model": model, "messages": [{{"role": "user", "content": content}}]}}
    return httpx2.post(URL, json=body, headers={{"authorization": "Bearer sk-test"}})

{body}
"""


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalProvider]:
    with LocalProvider() as server:
        monkeypatch.setenv("PROVIDER_URL", server.url)
        yield server


def write(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_mod=TEST_MODULE.format(body=body))


def cassette(pytester: pytest.Pytester, name: str = "test_it") -> Path:
    return pytester.path / "cassettes" / "test_mod" / f"{name}.jsonl"


def statuses(path: Path) -> list[int]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line["status"] for line in lines if line.get("type") == "response"]


PASSING = """
@pytest.mark.vcr
def test_it():
    assert chat().status_code == 200
"""

FAILING = """
@pytest.mark.vcr{marker}
def test_it():
    assert chat().status_code == 200
    assert False, "the test fails after recording"
"""


def test_a_failed_test_records_no_new_cassette(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    write(pytester, FAILING.format(marker=""))
    result = pytester.runpytest_subprocess("--record-mode=once")
    result.assert_outcomes(failed=1)
    assert len(provider.requests) == 1, "the test did reach the provider"
    assert not cassette(pytester).exists()
    result.stdout.fnmatch_lines(
        [
            "*- llmcassette -*",
            "*the test failed while recording: its 1 new interaction(s) were not saved",
            "*cassette: *test_it.jsonl (not created)",
            "*record_failed=True*",
        ]
    )


def test_a_failed_rerecording_leaves_the_old_cassette_byte_identical(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    write(pytester, PASSING)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    before = cassette(pytester).read_bytes()

    write(pytester, FAILING.format(marker="").replace("chat()", 'chat(content="changed")'))
    result = pytester.runpytest_subprocess("--record-mode=rewrite")
    result.assert_outcomes(failed=1)
    assert cassette(pytester).read_bytes() == before
    result.stdout.fnmatch_lines(["*cassette: *test_it.jsonl (left as it was)"])


FAILING_SETUP = """
@pytest.fixture
def seeded():
    assert chat(content="seed").status_code == 200
    raise RuntimeError("the fixture fails after recording")


@pytest.mark.vcr
def test_it(seeded):
    assert chat().status_code == 200
"""


def test_a_setup_that_fails_after_recording_records_no_cassette(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    # A fixture's calls are recorded like the test's: saved, they would replay the seed
    # alone and fail the fixed test with a mismatch until it is recorded again.
    write(pytester, FAILING_SETUP)
    result = pytester.runpytest_subprocess("--record-mode=once")
    result.assert_outcomes(errors=1)
    assert len(provider.requests) == 1, "the fixture did reach the provider"
    assert not cassette(pytester).exists()
    result.stdout.fnmatch_lines(
        [
            "*the test failed while recording: its 1 new interaction(s) were not saved",
            "*cassette: *test_it.jsonl (not created)",
        ]
    )


FAILING_TEARDOWNS = """
@pytest.fixture
def yielding():
    yield
    assert chat(content="clean up").status_code == 200
    raise RuntimeError("the teardown fails after recording")


@pytest.fixture
def finalizing(request):
    def finalize():
        assert chat(content="clean up").status_code == 200
        raise RuntimeError("the finalizer fails after recording")

    request.addfinalizer(finalize)


@pytest.mark.vcr
def test_yielding(yielding):
    assert chat().status_code == 200


@pytest.mark.vcr
def test_finalizing(finalizing):
    assert chat().status_code == 200


@pytest.mark.vcr(record_failed=True)
def test_kept(yielding):
    assert chat().status_code == 200
"""


def test_a_teardown_that_fails_after_recording_records_no_cassette(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    # The test errors: saved, its cassette would replay the body's call without the
    # teardown's (or with calls of a teardown that never finished) until recorded again.
    write(pytester, FAILING_TEARDOWNS)
    result = pytester.runpytest_subprocess("--record-mode=once", "-p", "no:randomly")
    result.assert_outcomes(passed=3, errors=3)
    assert len(provider.requests) == 6, "every test and teardown reached the provider"
    assert not cassette(pytester, "test_yielding").exists()
    assert not cassette(pytester, "test_finalizing").exists()
    assert statuses(cassette(pytester, "test_kept")) == [200, 200]
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_yielding*",
            "*a fixture's teardown failed while recording: the test's 2 new interaction(s) "
            "were not saved",
            "*cassette: *test_yielding.jsonl (not created)",
            "*ERROR at teardown of test_finalizing*",
            "*a fixture's teardown failed while recording: the test's 2 new interaction(s) "
            "were not saved",
            "*cassette: *test_finalizing.jsonl (not created)",
        ]
    )
    assert "pytest_plugin.py" not in result.stdout.str(), "tracebacks show the fixture only"


XFAIL = """
@pytest.mark.vcr
@pytest.mark.xfail(reason="a known bug", raises=AssertionError)
def test_it():
    assert chat().status_code == 200
    assert False, "the known bug"
"""


def test_an_xfail_test_keeps_what_it_recorded(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    # It failed as expected: without its cassette, the replay fails on the missing
    # cassette instead of the known bug, and recording it again never helps.
    write(pytester, XFAIL)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(xfailed=1)
    assert statuses(cassette(pytester)) == [200]
    pytester.runpytest_subprocess().assert_outcomes(xfailed=1)


def test_record_failed_keeps_what_a_failed_test_recorded(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    write(pytester, FAILING.format(marker="(record_failed=True)"))
    result = pytester.runpytest_subprocess("--record-mode=once")
    result.assert_outcomes(failed=1)
    assert statuses(cassette(pytester)) == [200]
    assert "- llmcassette -" not in result.stdout.str()


def test_a_test_failing_on_replay_changes_nothing_and_says_nothing(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    write(pytester, PASSING)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    before = cassette(pytester).read_bytes()
    write(pytester, FAILING.format(marker=""))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    assert cassette(pytester).read_bytes() == before
    assert "- llmcassette -" not in result.stdout.str()


MIXED = """
@pytest.mark.vcr{marker}
def test_it():
    assert chat(model="error-429").status_code == 429
    assert chat().status_code == 200
    assert chat(model="error-500", content="boom").status_code == 500
"""


def test_error_responses_reach_the_test_but_not_the_cassette(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    write(pytester, MIXED.format(marker=""))
    result = pytester.runpytest_subprocess("--record-mode=once")
    result.assert_outcomes(passed=1, warnings=1)
    assert statuses(cassette(pytester)) == [200]
    result.stdout.fnmatch_lines(
        [
            "*ErrorResponseNotRecordedWarning*test_it.jsonl: error responses received while "
            "recording were not saved*",
            "*POST http://127.0.0.1:*/v1/chat/completions -> 429",
            "*POST http://127.0.0.1:*/v1/chat/completions -> 500",
            "*record_errors=True*",
        ]
    )

    # The cassette answers the one request it holds; the others are not in it.
    provider.stop()
    write(pytester, PASSING)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_only_errors_while_rerecording_keeps_the_old_cassette(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    write(pytester, PASSING)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    before = cassette(pytester).read_bytes()
    provider.queue_error(503)
    write(pytester, PASSING.replace("== 200", "== 503"))
    pytester.runpytest_subprocess("--record-mode=rewrite").assert_outcomes(passed=1, warnings=1)
    assert cassette(pytester).read_bytes() == before


@pytest.mark.parametrize("where", ["marker", "vcr_config"])
def test_record_errors_keeps_error_responses(
    pytester: pytest.Pytester, provider: LocalProvider, where: str
) -> None:
    if where == "marker":
        write(pytester, MIXED.format(marker="(record_errors=True)"))
    else:
        write(pytester, MIXED.format(marker=""))
        pytester.makeconftest(
            "import pytest\n\n@pytest.fixture\ndef vcr_config():\n"
            "    return {'record_errors': True}\n"
        )
    result = pytester.runpytest_subprocess("--record-mode=once")
    result.assert_outcomes(passed=1)
    assert statuses(cassette(pytester)) == [429, 200, 500]
    assert "ErrorResponseNotRecordedWarning" not in result.stdout.str()

    provider.stop()
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
