"""``index._canonical``: two bodies get equal index keys exactly when the reference form
(every value tagged with its kind, as the index first wrote it) calls them equal."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.matching.index import _canonical

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, database=None)


def _reference(value: Any) -> Hashable:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, dict):
        return ("object", tuple(sorted((str(k), _reference(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("array", tuple(_reference(item) for item in value))
    if value is None:
        return ("null",)
    return (type(value).__name__, value)


_leaves = (
    st.none()
    | st.booleans()
    | st.sampled_from([0, 1, 1.0, -0.0, 2, "1", "true", "str", "null", "", b"x", "x"])
    | st.text(max_size=3)
)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "str", "1"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@SETTINGS
@given(a=_values, b=_values)
def test_keys_are_equal_exactly_when_the_reference_keys_are(a: Any, b: Any) -> None:
    assert (_canonical(a) == _canonical(b)) == (_reference(a) == _reference(b))
    if _canonical(a) == _canonical(b):
        assert hash(_canonical(a)) == hash(_canonical(b))


@SETTINGS
@given(a=_values)
def test_a_value_equals_itself_and_its_copy(a: Any) -> None:
    import copy

    assert _canonical(a) == _canonical(copy.deepcopy(a))


def test_examples() -> None:
    assert _canonical({"a": 1, "b": "x"}) == _canonical({"b": "x", "a": 1.0})
    assert _canonical("1") != _canonical(1)
    assert _canonical(True) != _canonical(1)
    assert _canonical("null") != _canonical(None)
    assert _canonical(["str", "x"]) != _canonical("x")
    assert _canonical(b"x") != _canonical("x")
