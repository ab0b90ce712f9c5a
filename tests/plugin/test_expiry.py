"""Cassette expiry under pytest: ``max_age`` with ``expired="warn"|"fail"|"rerecord"``.

Whole pytest runs (pytester, in subprocesses) against the bundled LocalProvider; a cassette
is made old by editing its header's ``created_at``, as time passing would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmcassette.config import ConfigError, Expiry, format_age, parse_age
from llmcassette.testing import LocalProvider

OLD = "2020-01-01T00:00:00Z"

TEST_MODULE = """
import os
import httpx2
import pytest


@pytest.mark.vcr{marker}
def test_it():
    response = httpx2.post(
        os.environ["PROVIDER_URL"] + "/v1/chat/completions",
        json={{"model": "gpt-4o-mini", "messages": [{{"role": "user", "content": "hi"}}]}},
        headers={{"authorization": "Bearer sk-test"}},
    )
    assert response.status_code == 200
"""


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalProvider]:
    with LocalProvider() as server:
        monkeypatch.setenv("PROVIDER_URL", server.url)
        yield server


def cassette(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "test_mod" / "test_it.jsonl"


def header(pytester: pytest.Pytester) -> dict[str, object]:
    first = cassette(pytester).read_text().splitlines()[0]
    loaded: dict[str, object] = json.loads(first)
    return loaded


def recorded_then_aged(pytester: pytest.Pytester, marker: str = "") -> bytes:
    """Record the test's cassette, then date it back to 2020; returns the aged file."""
    pytester.makepyfile(test_mod=TEST_MODULE.format(marker=""))
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    path = cassette(pytester)
    text = path.read_text()
    created = json.loads(text.splitlines()[0])["created_at"]
    path.write_text(text.replace(f'"created_at":"{created}"', f'"created_at":"{OLD}"', 1))
    pytester.makepyfile(test_mod=TEST_MODULE.format(marker=marker))
    return path.read_bytes()


def test_expired_warn_replays_and_warns(pytester: pytest.Pytester, provider: LocalProvider) -> None:
    aged = recorded_then_aged(pytester, '(max_age="30d")')
    provider.stop()
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [  # at the test (it warns as the cassette loads, before the test's code runs)
            "*test_mod.py:*: CassetteExpiredWarning: "
            f"*test_it.jsonl: cassette expired: recorded {OLD}, *"
        ]
    )
    assert cassette(pytester).read_bytes() == aged


def test_expired_fail_is_an_error_that_says_how_to_re_record(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    recorded_then_aged(pytester, '(max_age="30d", expired="fail")')
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*CassetteExpiredError: *test_it.jsonl: cassette expired: recorded {OLD}, * ago, "
            "max_age is 30d",
            "*how to fix: record it again (pytest test_mod.py::test_it --record-mode=rewrite, "
            "or python -m llmcassette.workflow --only expired), or raise max_age",
        ]
    )


def test_a_fresh_cassette_is_not_expired(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    pytester.makepyfile(test_mod=TEST_MODULE.format(marker='(max_age="1h", expired="fail")'))
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    provider.stop()
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_expired_rerecord_records_again_when_recording_is_allowed(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    recorded_then_aged(pytester, '(max_age="30d", expired="rerecord")')
    sent = len(provider.requests)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    assert len(provider.requests) == sent + 1, "the test went to the provider again"
    assert header(pytester)["created_at"] != OLD, "the new recording's age starts now"

    provider.stop()
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_expired_rerecord_in_replay_only_mode_warns(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    aged = recorded_then_aged(pytester, '(max_age="30d", expired="rerecord")')
    provider.stop()
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*CassetteExpiredWarning*expired='rerecord' needs a record mode*"])
    assert cassette(pytester).read_bytes() == aged


def test_project_default_from_pyproject(pytester: pytest.Pytester, provider: LocalProvider) -> None:
    recorded_then_aged(pytester)
    pytester.makepyprojecttoml('[tool.llmcassette]\nmax_age = "90d"\nexpired = "fail"\n')
    pytester.runpytest_subprocess().assert_outcomes(errors=1)
    # The test's own settings win over the project's.
    pytester.makepyfile(test_mod=TEST_MODULE.format(marker='(expired="warn")'))
    pytester.runpytest_subprocess().assert_outcomes(passed=1, warnings=1)


def test_rewrite_renews_an_expired_cassette_and_keeps_a_fresh_one_byte_identical(
    pytester: pytest.Pytester, provider: LocalProvider
) -> None:
    recorded_then_aged(pytester, '(max_age="30d", expired="fail")')
    pytester.runpytest_subprocess("--record-mode=rewrite").assert_outcomes(passed=1)
    renewed = cassette(pytester).read_bytes()
    assert header(pytester)["created_at"] != OLD

    # Unchanged traffic from a deterministic server: a fresh cassette is not rewritten.
    pytester.runpytest_subprocess("--record-mode=rewrite").assert_outcomes(passed=1)
    assert cassette(pytester).read_bytes() == renewed


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("45m", 2700), ("12h", 43200), ("30d", 2592000), ("2w", 1209600), ("10", 10)],
)
def test_parse_age(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("bad", ["30 days", "-1d", "0", "d", True])
def test_parse_age_rejects(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_age"):
        parse_age(bad)  # type: ignore[arg-type]


def test_unknown_expired_action_is_rejected() -> None:
    with pytest.raises(ConfigError, match="'warn', 'fail', 'rerecord'"):
        Expiry.from_options("1d", "delete")


def test_format_age() -> None:
    assert [format_age(s) for s in (5, 125, 7200, 93600, 86400 * 31)] == [
        "5s",
        "2m 5s",
        "2h",
        "1d 2h",
        "31d",
    ]
