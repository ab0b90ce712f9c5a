"""Error messages read as sentences whatever the counts."""

from __future__ import annotations

import pytest

from llmcassette.errors import UnusedInteractionsError


@pytest.mark.parametrize(
    ("unused", "total", "expected"),
    [
        (1, 1, "the 1 interaction recorded in c.jsonl was not played:"),
        (1, 3, "1 of the 3 interactions recorded in c.jsonl was not played:"),
        (2, 3, "2 of the 3 interactions recorded in c.jsonl were not played:"),
    ],
)
def test_unused_interactions_count(unused: int, total: int, expected: str) -> None:
    listed = [(position, "GET", "http://h/") for position in range(1, unused + 1)]
    error = UnusedInteractionsError("c.jsonl", listed, total)
    assert str(error).startswith(expected)
    assert error.unused == listed
    assert error.total == total
