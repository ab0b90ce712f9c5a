"""Compare two parsed values and name every place they differ with a JSON path."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from llmcassette.matching.canonical import fills_placeholders

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Difference:
    """One differing place: its path and the recorded and incoming values there.

    ``reordered``: the two values are lists of the same items in another order (told as
    one difference, not one per item that moved).
    """

    path: str
    recorded: Any
    incoming: Any
    reordered: bool = False

    def shown(self, width: int = 80) -> tuple[str, str]:
        """Both values as a message shows them: long ones shortened around the change, a
        reordered list as the labels of its items (``['text', 'image']``)."""
        if not self.reordered:
            return shorten_pair(self.recorded, self.incoming, width)
        recorded, incoming = _labels(self.recorded), _labels(self.incoming)
        if recorded == incoming:  # alike at a glance: the items themselves
            recorded, incoming = self.recorded, self.incoming
        shown = shorten_pair(recorded, incoming, width)
        return shown[0], f"{shown[1]} (the same {len(self.recorded)} items, reordered)"

    def describe(self, width: int = 80) -> str:
        """``path: recorded 'x', incoming 'y'`` with long values shortened around the change."""
        recorded, incoming = self.shown(width)
        return f"{self.path}: recorded {recorded}, incoming {incoming}"


class Missing:
    """Stands for a key or list item that one side does not have."""

    def __repr__(self) -> str:
        return "(absent)"


MISSING = Missing()


def child_path(parent: str, key: str | int) -> str:
    """Append a dict key or list index to a path: ``a.b``, ``a[3]``, ``a["odd key"]``."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if _IDENTIFIER.match(key):
        return f"{parent}.{key}" if parent else key
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{parent}["{escaped}"]'


def same_scalar(recorded: Any, incoming: Any) -> bool:
    """Scalars are equal by value (1 == 1.0), but booleans never equal numbers."""
    if isinstance(recorded, bool) or isinstance(incoming, bool):
        return type(recorded) is type(incoming) and recorded == incoming
    if isinstance(recorded, (int, float)) and isinstance(incoming, (int, float)):
        return bool(recorded == incoming)
    return type(recorded) is type(incoming) and bool(recorded == incoming)


def differences(
    recorded: Any, incoming: Any, path: str = "", *, placeholders: bool = False
) -> list[Difference]:
    """Every place where ``incoming`` differs from ``recorded``, in a deterministic order.

    With ``placeholders`` (matching a live request), a recorded string holding redaction
    placeholders equals an incoming one that has a value where each stands
    (``canonical.fills_placeholders``); comparing two cassettes, it does not.
    """
    found: list[Difference] = []
    _walk(recorded, incoming, path, found, placeholders)
    return found


def _walk(
    recorded: Any, incoming: Any, path: str, found: list[Difference], placeholders: bool
) -> None:
    if isinstance(recorded, dict) and isinstance(incoming, dict):
        for key in sorted(set(recorded) | set(incoming), key=str):
            _walk(
                recorded.get(key, MISSING),
                incoming.get(key, MISSING),
                child_path(path, str(key)),
                found,
                placeholders,
            )
        return
    if isinstance(recorded, list) and isinstance(incoming, list):
        if _reordered(recorded, incoming):
            found.append(Difference(path or "(root)", recorded, incoming, reordered=True))
            return
        for index in range(max(len(recorded), len(incoming))):
            _walk(
                recorded[index] if index < len(recorded) else MISSING,
                incoming[index] if index < len(incoming) else MISSING,
                child_path(path, index),
                found,
                placeholders,
            )
        return
    if same_scalar(recorded, incoming):
        return
    filled = (
        placeholders
        and isinstance(recorded, str)
        and isinstance(incoming, str)
        and fills_placeholders(recorded, incoming)
    )
    if not filled:
        found.append(Difference(path or "(root)", recorded, incoming))


def _reordered(recorded: list[Any], incoming: list[Any]) -> bool:
    """Whether two lists hold the same items (equal as JSON) in another order."""
    if len(recorded) != len(incoming) or len(recorded) < 2 or recorded == incoming:
        return False
    ours = [json.dumps(item, sort_keys=True, default=repr) for item in incoming]
    theirs = [json.dumps(item, sort_keys=True, default=repr) for item in recorded]
    return ours != theirs and sorted(ours) == sorted(theirs)


def _labels(items: list[Any]) -> list[Any]:
    """A list's items by what tells them apart at a glance: a block's ``type``, a message's
    ``role``, else the item itself."""
    return [
        next((item[k] for k in ("type", "role") if isinstance(item.get(k), str)), item)
        if isinstance(item, dict)
        else item
        for item in items
    ]


def shorten_pair(recorded: Any, incoming: Any, width: int) -> tuple[str, str]:
    """``repr`` both values, cutting long strings (and bytes: an upload's file) to a window
    around their first difference."""
    both_text = isinstance(recorded, str) and isinstance(incoming, str)
    both_bytes = isinstance(recorded, bytes) and isinstance(incoming, bytes)
    if not (both_text or both_bytes):
        left, right = repr(recorded), repr(incoming)
        if len(left) <= width and len(right) <= width:
            return left, right
        return _cut(left, 0, width), _cut(right, 0, width)
    if len(recorded) <= width and len(incoming) <= width:
        left, right = repr(recorded), repr(incoming)
        if len(left) <= width and len(right) <= width:
            return left, right
    start = _first_difference(recorded, incoming)
    # A character or byte may take four in its repr (b'\x00'): the window is as many of
    # them as keep the repr of either side within about ``width``.
    count = width
    while (
        count > 8
        and max(
            len(repr(side[max(0, start - count // 3) : max(0, start - count // 3) + count]))
            for side in (recorded, incoming)
        )
        > width + width // 4
    ):
        count //= 2
    begin = max(0, start - count // 3)
    return _window(recorded, begin, count), _window(incoming, begin, count)


def _first_difference(recorded: str | bytes, incoming: str | bytes) -> int:
    limit = min(len(recorded), len(incoming))
    start = 0
    while start < limit and recorded[start] == incoming[start]:
        start += 1
    return start


def _window(text: str | bytes, begin: int, width: int) -> str:
    piece = repr(text[begin : begin + width])
    return ("…" if begin else "") + piece + ("…" if begin + width < len(text) else "")


def _cut(text: str, begin: int, width: int) -> str:
    return text[begin : begin + width] + ("…" if len(text) > width else "")
