"""Store JSON text as a JSON value, but only when the exact original bytes can be rebuilt.

A body like ``{"a":1}`` is kept in the cassette as the object ``{"a": 1}`` plus the name of
the *layout* that reproduces the original text (compact, spaced, indented, ASCII-escaped,
trailing newline). If no known layout reproduces the text byte for byte, the caller keeps
the text itself: a cassette never trades fidelity for readability.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

DEFAULT_LAYOUT = "compact"

_JSON_START = frozenset("{[")
_MAX_INDENT = 8


class _NoConstants(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    # NaN/Infinity are not JSON: a cassette line holding them could not be read elsewhere.
    raise _NoConstants(name)


_decoder = json.JSONDecoder(parse_constant=_reject_constant)


@cache
def _layout(name: str) -> tuple[dict[str, Any], str]:
    """Layout names are a base (``compact``, ``spaced``, ``indent<N>``) plus ``+ascii``/``+nl``."""
    parts = name.split("+")
    base, flags = parts[0], set(parts[1:])
    kwargs: dict[str, Any] = {"ensure_ascii": "ascii" in flags}
    if base == "compact":
        kwargs["separators"] = (",", ":")
    elif base.startswith("indent") and base[6:].isdigit() and 0 < int(base[6:]) <= _MAX_INDENT:
        kwargs["indent"] = int(base[6:])
    elif base != "spaced":
        raise ValueError(f"unknown JSON layout {name!r}")
    if flags - {"ascii", "nl"}:
        raise ValueError(f"unknown JSON layout {name!r}")
    return kwargs, "\n" if "nl" in flags else ""


def _candidates(text: str) -> list[str]:
    """The few layouts that could have produced ``text``, judged from its shape."""
    body = text[:-1] if text.endswith("\n") else text
    suffix = "+nl" if body is not text else ""
    if "\n" in body:
        first = body.split("\n", 2)[1]
        indent = len(first) - len(first.lstrip(" "))
        bases = [f"indent{indent}"] if 0 < indent <= _MAX_INDENT else []
    elif body.startswith("{") and body != "{}" and '": ' in body:
        # An object with keys renders differently in the two, so the order cannot change
        # the layout chosen; spaced first saves a rendering for the spaced text it looks like.
        bases = ["spaced", "compact"]
    else:
        bases = ["compact", "spaced"]
    # ``+ascii`` can only be needed for ASCII text with \u escapes: ASCII text without them
    # holds only ASCII characters (both flavours render it alike, and the plain one is
    # named first), and ``+ascii`` never renders text that is not ASCII.
    flavours = ("", "+ascii") if "\\u" in body and body.isascii() else ("",)
    return [base + flavour + suffix for base in bases for flavour in flavours]


def check_layout(layout: object) -> None:
    """Raise ``ValueError`` unless ``layout`` names a known layout."""
    if not isinstance(layout, str):
        raise ValueError(f"unknown JSON layout {layout!r}")
    _layout(layout)


def render(value: Any, layout: str = DEFAULT_LAYOUT) -> str:
    """Rebuild JSON text from a stored value and layout name."""
    if not isinstance(layout, str):  # a hand-edited cassette line: report, don't crash
        raise ValueError(f"unknown JSON layout {layout!r}")
    encode, suffix = _encoder(layout)
    return str(encode(value)) + suffix


@cache
def _encoder(layout: str) -> tuple[Any, str]:
    # One encoder per layout: json.dumps with options builds a new JSONEncoder on every call,
    # which dominates the cost of rebuilding thousands of small stream events at load time.
    kwargs, suffix = _layout(layout)
    return json.JSONEncoder(**kwargs).encode, suffix


def parse_exact(text: str) -> tuple[Any, str] | None:
    """Parse JSON text and name a layout that rebuilds it exactly, or return None."""
    stripped = text.lstrip()
    if not stripped or (stripped[0] not in _JSON_START and stripped[0] != '"'):
        # Scalars like `1e5` or `true` rarely round-trip and are not worth structuring.
        return None
    try:
        value = _decoder.decode(text)
    except ValueError:
        return None
    for name in _candidates(text):
        if render(value, name) == text:
            return value, name
    return None


def loads_strict(text: str) -> Any:
    """Parse JSON text, refusing NaN and Infinity."""
    return _decoder.decode(text)
