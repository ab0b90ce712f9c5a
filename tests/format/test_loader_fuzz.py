"""The loader raises nothing but ``CassetteFormatError``, and raises it at load (issue #17).

Mutations of real cassettes (``loader_mutations.py``, also run for minutes by
``nox -s fuzz``) either load, and then every body builds, or fail with a
``CassetteFormatError``; any other exception is a bug. The tests after it pin the
messages of the cases the fuzz first found.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loader_mutations import PATH, mutate, outcome, seed_cassettes

from llmcassette import CassetteFormatError
from llmcassette.cassette import jsonl as cassette_file

SEEDS = seed_cassettes()


def test_every_seed_cassette_loads() -> None:
    assert len(SEEDS) >= 10
    assert all(outcome(seed) == "load" for seed in SEEDS)


@settings(
    max_examples=3000,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(seed=st.sampled_from(SEEDS), rng=st.randoms(use_true_random=False))
def test_mutated_cassettes_load_or_raise_cassette_format_error(
    seed: bytes, rng: random.Random
) -> None:
    assert outcome(mutate(rng, seed)) in ("load", "format_error")


# ------------------------------------------------------------------ what the fuzz found

HEADER = '{"format": "llmcassette", "format_version": 1}'
REQUEST = '{"type": "request", "method": "GET", "uri": "https://example.com/"}'
STREAM = '{"type": "response", "status": 200, "body": {"stream": "sse"}}'


def _cassette(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _error(data: bytes, line: int, *fragments: str) -> CassetteFormatError:
    with pytest.raises(CassetteFormatError) as info:
        cassette_file.read(data, PATH)
    assert info.value.line == line
    assert info.value.hint
    for fragment in fragments:
        assert fragment in str(info.value)
    return info.value


@pytest.mark.parametrize("status", ["99999999999999999999", "-5", "0", "99", "600"])
def test_status_out_of_range(status: str) -> None:
    response = '{"type": "response", "status": ' + status + "}"
    data = _cassette(HEADER, REQUEST, response, '{"type": "end", "events": 0}')
    _error(data, 3, "field 'status' must be an HTTP status from 100 to 599")


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('{"type": "response", "status": ' + "1" * 5000 + "}", "more than 1000 digits"),
        ('{"type": "response", "status": 200, "x": ' + "9" * 1001 + "}", "field 'x'"),
        ('{"type": "response", "status": 200, "x": 1e400}', "overflows"),
        ('{"type": "response", "status": 200, "x": [1, {"y": -1e400}]}', "overflows"),
        ('{"type": "response", "status": 200, "x": {"y": [0.5, ' + "8" * 1001 + "]}}", "digits"),
        ('{"type": "response", "status": 200, "x": NaN}', "NaN is not JSON"),
        ('{"type": "response", "status": 200, "x": ' + "[" * 10_000 + "]" * 10_000 + "}", "deep"),
        ('{"type": "response", "status": 200, "x": ' + "[" * 128 + "]" * 128 + "}", "field 'x'"),
    ],
)
def test_numbers_and_nesting_beyond_the_limits(line: str, where: str) -> None:
    data = _cassette(HEADER, REQUEST, line, '{"type": "end", "events": 0}')
    error = _error(data, 3, where)
    assert "128 deep" in str(error.hint)


def test_nesting_up_to_the_limit_loads() -> None:
    # the line is level 1, "x" holds the other 127
    line = '{"type": "response", "status": 200, "x": ' + "[" * 127 + "]" * 127 + "}"
    data = _cassette(HEADER, REQUEST, line, '{"type": "end", "events": 0}')
    assert outcome(data) == "load"


def test_huge_format_version() -> None:
    _error(_cassette('{"format": "llmcassette", "format_version": ' + "1" * 5000 + "}"), 1)


@pytest.mark.parametrize(
    ("event", "fragment"),
    [
        ('{"type": "event", "retry": "12a"}', "'retry' must be a string of digits"),
        ('{"type": "event", "text": 5}', "'text' must be a string"),
        ('{"type": "event", "raw": 5}', "'raw' must be a string"),
        ('{"type": "event", "t": -1, "text": "x"}', "field 't' must be a number of seconds"),
        ('{"type": "event", "t": "1", "text": "x"}', "field 't'"),
        ('{"type": "event", "t": 1e300, "text": "x"}', "field 't'"),
        ('{"type": "event", "data": 1, "layout": "pretty"}', "unknown JSON layout"),
        ('{"type": "event", "text": "\\ud800"}', "event line is invalid"),
        ('{"type": "event", "text": "trunc', "not valid JSON"),
        ('{"type": "event", "text": "a\x00b"}', "not valid JSON"),
    ],
)
def test_a_bad_event_line_fails_at_load_when_never_played(event: str, fragment: str) -> None:
    data = _cassette(HEADER, REQUEST, STREAM, event, '{"type": "end", "events": 1}')
    _error(data, 4, fragment)


def test_ndjson_text_is_one_line() -> None:
    response = '{"type": "response", "status": 200, "body": {"stream": "ndjson"}}'
    event = json.dumps({"type": "event", "text": "a\nb"})
    data = _cassette(HEADER, REQUEST, response, event, '{"type": "end", "events": 1}')
    _error(data, 4, "cannot hold")


@pytest.mark.parametrize(
    ("line", "number", "fragment"),
    [
        ('{"type": "end", "events": -1}', 4, "field 'events' must be 0 or more"),
        (
            '{"type": "end", "events": 0, "cut_short": "yes"}',
            4,
            "'cut_short' must be true or false",
        ),
        ('{"type": "end", "events": 0, "error": 3}', 4, "'error' must be a string"),
        ('{"type": "response", "status": 200, "t": -0.5}', 3, "field 't'"),
    ],
)
def test_end_and_response_fields(line: str, number: int, fragment: str) -> None:
    lines = [HEADER, REQUEST, '{"type": "response", "status": 200}', '{"type": "end", "events": 0}']
    lines[number - 1] = line
    _error(_cassette(*lines), number, fragment)


@pytest.mark.parametrize("field", ['"metadata": []', '"created_at": 5', '"redaction": "x"'])
def test_header_field_types(field: str) -> None:
    _error(_cassette('{"format": "llmcassette", "format_version": 1, ' + field + "}"), 1)
