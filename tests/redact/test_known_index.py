"""KnownValues finds known credential values as a regular expression of them, longest
first, finds them, whether few are known (looked for one by one) or many (an index)."""

from __future__ import annotations

import re
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.redact import known
from llmcassette.redact.known import KnownValues, written_forms

# A small alphabet, so that values share starts, overlap and hold one another.
ALPHABET = "ab%+-/"
secrets = st.text(ALPHABET, min_size=known.MIN_LENGTH, max_size=known.MIN_LENGTH + 6)


def as_a_regex_finds(values: KnownValues, secrets: list[str], text: str) -> list[known.Span]:
    """The spans the redactor found before: one alternation of every form, longest first."""
    placeholders: dict[str, str] = {}
    for number, secret in enumerate(secrets):
        for form in written_forms(secret):
            placeholders.setdefault(form, f"<REDACTED:key:{number}>")
    if not placeholders:
        return []
    search = re.compile("|".join(map(re.escape, sorted(placeholders, key=len, reverse=True))))
    return [(m.start(), m.end(), placeholders[m.group()]) for m in search.finditer(text)]


@settings(max_examples=300)
@given(
    st.lists(secrets, min_size=1, max_size=8),
    st.lists(st.one_of(secrets, st.text(ALPHABET + "xyz", max_size=5)), max_size=12),
    st.booleans(),
)
def test_few_or_many_values_are_found_as_a_regex_finds_them(
    secret_values: list[str], pieces: list[str], many: bool
) -> None:
    values = KnownValues()
    for number, secret in enumerate(secret_values):
        values.add(secret, f"<REDACTED:key:{number}>")
    if many:  # past the count looked for one by one: the index is used
        filler = [f"unrelated-value-{number:04d}" for number in range(known._FEW)]
        for number, secret in enumerate(filler, start=len(secret_values)):
            values.add(secret, f"<REDACTED:key:{number}>")
        secret_values = secret_values + filler
    text = "".join(pieces)
    expected = as_a_regex_finds(values, secret_values, text)
    assert values.spans(text) == expected
    assert values.mentioned_in(text) == bool(expected)


def test_a_value_shorter_than_the_minimum_is_not_looked_for() -> None:
    values = KnownValues()
    values.add("1234567", "<REDACTED:key>")
    assert not values
    assert values.spans("id 1234567") == []


def test_a_form_keeps_its_first_placeholder() -> None:
    values = KnownValues()
    values.add("secret-value-1", "<REDACTED:key>")
    values.add("secret-value-1", "<REDACTED:key:2>")
    assert values.spans("x secret-value-1 y") == [(2, 16, "<REDACTED:key>")]


def with_filler(values: KnownValues, many: bool) -> KnownValues:
    """``values``, and past the count looked for one by one when ``many``."""
    if many:
        for number in range(known._FEW + 1):
            values.add(f"unrelated-value-{number:04d}", "<REDACTED:other>")
    return values


@pytest.mark.parametrize("many", [False, True])
def test_the_longest_value_at_a_position_wins_and_spans_never_overlap(many: bool) -> None:
    values = KnownValues()
    values.add("abcdefgh", "<REDACTED:short>")
    values.add("abcdefghij", "<REDACTED:long>")
    values.add("ghijklmnop", "<REDACTED:after>")
    values = with_filler(values, many)
    assert values.spans("xabcdefghijklmnop abcdefgh") == [
        (1, 11, "<REDACTED:long>"),
        (18, 26, "<REDACTED:short>"),
    ]


def test_values_added_while_other_threads_search_break_no_search() -> None:
    # Concurrent agents record through one redactor: each response may add a value (a new
    # cookie) while another thread searches its own request.
    values = KnownValues()
    text = "prefix " + " ".join(f"cookie-value-{number:05d}" for number in range(0, 400, 7))
    errors: list[BaseException] = []

    adding = threading.Event()
    adding.set()

    def search() -> None:
        try:
            while adding.is_set():
                values.spans(text)
                values.mentioned_in(text)
        except BaseException as error:
            errors.append(error)

    searchers = [threading.Thread(target=search) for _ in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as they can
    try:
        for thread in searchers:
            thread.start()
        for number in range(400):
            values.add(f"cookie-value-{number:05d}", f"<REDACTED:cookie:{number + 1}>")
        adding.clear()
        for thread in searchers:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(values.spans(text)) == len(range(0, 400, 7))
