"""Recognise a compact JSON text by its shape, without parsing it.

The events of a streamed completion repeat one JSON shape with other strings in it::

    {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":" Hello"}}]}
    {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":" world"}}]}

Cut at its quotes, such a text alternates between what lies outside strings and the
strings themselves; a string is a key when a colon follows it. The *skeleton* of a text
is everything but its string values. Once one text has been parsed and found to be in the
compact layout (``jsontext.parse_exact``), every text with the same skeleton is compact
too, as long as its string values are spelled the way the JSON encoder spells them: the
encoder writes the skeleton's parts as they are and each string on its own. The same
holds for the ``spaced`` layout. Writing a cassette then needs neither a parse nor a
second encoding of those events, and redaction gets their strings, each with its JSON
path, from the cut.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

Path = tuple[Any, ...]

_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]
_encode_string: Any = json.encoder.encode_basestring


@dataclass(frozen=True)
class Skeleton:
    """The parts of a compact JSON text other than its string values."""

    layout: str  # the ``jsontext`` layout of every text with this skeleton
    structure: tuple[str, ...]  # the parts outside strings (even positions of the cut)
    keys: tuple[str, ...]
    paths: tuple[Path, ...]  # the JSON path of each string value
    outline: str  # the text with every string value emptied: all that is not a value
    keys_of: Callable[[list[str]], tuple[str, ...]]  # the keys in a cut, in text order
    values_of: Callable[[list[str]], tuple[str, ...]]  # the string values, as spelled
    value_slots: tuple[int, ...]  # where the string values are in a cut


#: A text that has a known skeleton, and its string values (decoded) in text order. A
#: plain tuple: one is made for every streamed event.
Match = tuple[Skeleton, Sequence[str]]


class Skeletons:
    """The skeletons of compact texts seen so far; ``match`` recognises their kin."""

    def __init__(self, root: Path = ()) -> None:
        self._root = root  # where the texts' values sit: the paths start with it
        self._known: dict[tuple[str, ...], list[Skeleton]] = {}

    def match(self, text: str, safe: bool = False) -> Match | None:
        """The skeleton and values of ``text`` if it is compact JSON of a known shape.

        ``safe``: the caller knows that ``text`` holds no character that ``safe_text``
        refuses (it checked the whole stream at once).
        """
        escaped = "\\" in text
        if not escaped and text[:1] in _OPENINGS and (safe or safe_text(text)):
            parts = text.split('"')  # _cut written out for the usual text: it runs per event
        else:
            cut = _cut(text)
            if cut is None:
                return None
            parts = cut
        candidates = self._known.get(tuple(parts[0::2]))
        if candidates is None:
            return None
        for skeleton in candidates:
            if skeleton.keys_of(parts) == skeleton.keys:
                if not escaped:
                    return skeleton, skeleton.values_of(parts)
                decoded = _decoded(skeleton.values_of(parts))
                return None if decoded is None else (skeleton, decoded)
        return None

    def learn(self, text: str, value: Any, layout: str) -> Match | None:
        """Remember the skeleton of ``text``, the rendering of ``value`` in ``layout``.

        The caller has checked that ``value`` renders back to ``text`` exactly in a layout
        without indentation or escaped non-ASCII (``compact`` or ``spaced``); the cut is
        still compared with ``value`` before anything is remembered.
        """
        parts = _cut(text)
        if parts is None or not isinstance(value, (dict, list)):
            return None
        expected = list(_strings(value, self._root))
        if len(expected) * 2 + 1 != len(parts):
            return None
        key_slots, keys, value_slots, paths = [], [], [], []
        for index, (is_key, string, path) in enumerate(expected):
            slot = 2 * index + 1
            if is_key != parts[slot + 1].startswith(":"):
                return None
            if is_key:
                if "\\" in parts[slot] or parts[slot] != string:
                    return None
                key_slots.append(slot)
                keys.append(string)
            else:
                value_slots.append(slot)
                paths.append(path)
        values_of = _getter(value_slots)
        values = _decoded(values_of(parts))
        if values is None or values != [s for is_key, s, _ in expected if not is_key]:
            return None
        outline = list(parts)
        for slot in value_slots:
            outline[slot] = ""
        skeleton = Skeleton(
            layout,
            tuple(parts[0::2]),
            tuple(keys),
            tuple(paths),
            '"'.join(outline),
            _getter(key_slots),
            values_of,
            tuple(value_slots),
        )
        self._known.setdefault(skeleton.structure, []).append(skeleton)
        return (skeleton, values)


class OneValueApart:
    """Recognises the texts that differ from a known one in a single string value.

    The usual stream repeats one event with only its text delta changed. A text that starts
    with everything before that value (its opening quote included), ends with everything
    after it, and holds neither a quote nor a backslash in between cuts at its quotes
    exactly as the known text does but for that value: it has the same skeleton, and its
    other values are the known text's. Checking that takes a few comparisons of whole
    strings, where ``Skeletons.match`` cuts the text into one string per part.
    """

    __slots__ = ("after", "before", "prefix", "skeleton", "suffix")

    def __init__(self, text: str, match: Match, previous: Sequence[str]) -> None:
        skeleton, values = match
        if len(previous) != len(values):
            raise ValueError("not the same skeleton")
        changed = [
            i for i, (old, new) in enumerate(zip(previous, values, strict=True)) if old != new
        ]
        if len(changed) != 1:
            raise ValueError("not one value apart")
        index = changed[0]
        parts = _cut(text, safe=True) or []  # a text ``match`` recognised: it is safe
        slot = skeleton.value_slots[index]
        if len(parts) <= slot or "\\" in parts[slot]:
            raise ValueError("the changing value is escaped")
        self.skeleton = skeleton
        self.prefix = '"'.join(parts[:slot]) + '"'
        self.suffix = '"' + '"'.join(parts[slot + 1 :])
        self.before = tuple(values[:index])
        self.after = tuple(values[index + 1 :])

    @classmethod
    def of(cls, text: str, match: Match, previous: Sequence[str]) -> OneValueApart | None:
        """The template of ``text`` (matched as ``match``) if one value changed since
        ``previous`` (the values of the last text of the same skeleton), else None."""
        try:
            return cls(text, match, previous)
        except ValueError:
            return None

    def match(self, text: str) -> Match | None:
        """The skeleton and values of ``text`` if it is this text but for the one value.

        The caller has checked that ``text`` holds no character ``safe_text`` refuses.
        """
        value = self.value_in(text)
        return None if value is None else (self.skeleton, (*self.before, value, *self.after))

    def value_in(self, text: str) -> str | None:
        """The changing value as ``text`` spells it, if ``text`` is this text but for it."""
        prefix, suffix = self.prefix, self.suffix
        end = len(text) - len(suffix)
        if end < len(prefix) or not text.startswith(prefix) or not text.endswith(suffix):
            return None
        value = text[len(prefix) : end]
        if '"' in value or "\\" in value:
            return None
        return value


def _getter(slots: list[int]) -> Callable[[list[str]], tuple[str, ...]]:
    """A function giving the items at ``slots`` of a list, as a tuple (done in C)."""
    if not slots:
        return lambda parts: ()
    if len(slots) == 1:
        slot = slots[0]
        return lambda parts: (parts[slot],)
    return operator.itemgetter(*slots)


_OPENINGS = ("{", "[")


def _cut(text: str, safe: bool = False) -> list[str] | None:
    """``text`` cut at the quotes that open and close strings, or None if not worth it.

    ``safe``: the caller knows that ``text`` holds no character ``safe_text`` refuses.
    """
    if text[:1] not in _OPENINGS or not (safe or safe_text(text)):
        return None
    parts = text.split('"')
    if "\\" in text:
        return _join_escaped_quotes(parts)
    return parts


def safe_text(text: str, line_ends: bool = False) -> bool:
    """No raw control character nor line separator in ``text`` (``line_ends``: but "\\n").

    ``in`` tests, one character each: each is a vectorised memchr, several times faster
    than one regex or ``str.isprintable`` going through the text character by character.
    """
    unsafe = _UNSAFE_BUT_LF if line_ends else _UNSAFE_CHARACTERS
    if not text.isascii():
        unsafe += _SEPARATORS
    return not any(character in text for character in unsafe)


# Characters that make a text not worth matching: raw control characters (not valid JSON,
# the parse decides what happens to them), and the line separators that a cassette line
# escapes (the line would then differ from the text as streamed).
_UNSAFE_CHARACTERS = tuple(chr(code) for code in range(0x20))
_UNSAFE_BUT_LF = tuple(c for c in _UNSAFE_CHARACTERS if c != "\n")
_SEPARATORS = ("\x85", "\u2028", "\u2029")


def _join_escaped_quotes(parts: list[str]) -> list[str] | None:
    # A quote after an odd number of backslashes is inside a string, not its end.
    out: list[str] = []
    pending: str | None = None
    for part in parts:
        piece = part if pending is None else pending + '"' + part
        backslashes = len(piece) - len(piece.rstrip("\\"))
        if backslashes % 2 and len(out) % 2:  # inside a string: the quote was escaped
            pending = piece
            continue
        pending = None
        out.append(piece)
    if pending is not None or len(out) % 2 == 0:
        return None
    return out


def _decoded(values: Sequence[str]) -> list[str] | None:
    """String values as spelled in a text, decoded; None if one is not spelled as encoded."""
    out = list(values)
    for index, raw in enumerate(out):
        if "\\" in raw:
            try:
                decoded, _ = _scanstring(raw + '"', 0)
            except ValueError:
                return None
            if _encode_string(decoded) != '"' + raw + '"':
                return None  # e.g. "\/" or "\u00e9": the encoder would spell it otherwise
            out[index] = decoded
    return out


def _strings(value: Any, path: Path) -> Iterator[tuple[bool, str, Path]]:
    """Every key and string value in ``value``, in text order: (is a key, string, path)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield True, key, path
            if isinstance(item, str):
                yield False, item, (*path, key)
            elif isinstance(item, (dict, list)):
                yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                yield False, item, (*path, index)
            elif isinstance(item, (dict, list)):
                yield from _strings(item, (*path, index))
