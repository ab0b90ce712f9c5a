"""The alias check of vcrpy YAML cassettes (``cassette.vcrpy_files``): a tree of any size
passes, aliases that stand for too much do not, and a text without anchors is not walked."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.cassette import vcrpy_files
from llmcassette.cassette.vcrpy_files import AliasBombError, check_aliases, may_hold_aliases

MANY = vcrpy_files.MAX_ALIASED_VALUES + 100_000


def test_a_tree_of_more_than_a_million_values_is_no_alias_bomb() -> None:
    """A parsed_body cassette of embeddings holds millions of numbers, none by an alias:
    they are values the file holds, not values its aliases add."""
    check_aliases({"interactions": [{"response": {"parsed_body": [0.5] * MANY}}]})


def test_a_million_values_beside_an_ordinary_alias_pass() -> None:
    shared = {"accept": ["application/json"]}
    check_aliases({"a": shared, "b": shared, "embedding": [0.5] * MANY})


def test_aliases_that_stand_for_more_than_the_file_holds_are_refused() -> None:
    level: Any = ["x"] * 10
    for _ in range(7):  # 10**8 values by 70 references
        level = [level] * 10
    with pytest.raises(AliasBombError, match="stand for"):
        check_aliases({"body": level, "padding": [0] * 1000})


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


def _containers(value: Any) -> list[Any]:
    """Every list and mapping met walking ``value`` as a tree."""
    if isinstance(value, dict):
        return [value, *(c for item in value.values() for c in _containers(item))]
    if isinstance(value, list):
        return [value, *(c for item in value for c in _containers(item))]
    return []


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(_VALUES, st.booleans())
def test_a_text_without_anchors_parses_to_a_tree_the_check_passes(value: Any, share: bool) -> None:
    """``parse`` walks only texts that may hold aliases (``may_hold_aliases``): where it
    says none, the data holds no mapping or list twice, so the walk would pass."""
    data = {"a": value, "b": value if share else None}  # shared: PyYAML writes &id001
    text = yaml.safe_dump(data)
    loaded = vcrpy_files.parse(text, json_file=False)
    met = _containers(loaded)
    if not may_hold_aliases(text):
        assert len({id(c) for c in met}) == len(met)
        check_aliases(loaded)
    if len({id(c) for c in met}) < len(met):
        assert may_hold_aliases(text)
