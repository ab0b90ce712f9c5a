"""The credential values a redactor has replaced, found again in any text.

A credential replaced in one place is replaced everywhere: an API key sent in a header is
taken out of the body that echoes it. A cassette may learn thousands of values (a server
that sets a new cookie on every response), so finding them must not cost more with each
one learnt. A regular expression of every value, compiled anew whenever one was added and
tried at every position of a text, made recording 1,000 such calls take 20 s instead of 3.

Few values are looked for one by one (``str.find``, in C); many through an index on the
first ``MIN_LENGTH`` characters of each, one dictionary lookup per position of the text.
Both find the same spans: leftmost first, the longest value at a position, none
overlapping (what a regular expression of the values, longest first, finds).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

# A credential value shorter than this is not searched for elsewhere: too likely to be
# found by chance in other text ("1234", "enabled").
MIN_LENGTH = 8
# Up to this many written forms are looked for one by one; past it, through the index.
_FEW = 64

Span = tuple[int, int, str]  # start, end, placeholder


def written_forms(secret: str) -> tuple[str, ...]:
    """How ``secret`` may be written: as is, URL-encoded (both ways) and JSON-escaped."""
    return (secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1])


class KnownValues:
    """Credential values and their placeholders, by every form each may be written in."""

    # Concurrent callers record through one redactor: a value is added under a lock, and
    # what a search iterates (``_few``, the tuples of ``_by_prefix``) is replaced, never
    # changed in place, so a search in another thread needs no lock.
    __slots__ = ("_adding", "_by_prefix", "_count", "_few", "_placeholders")

    def __init__(self) -> None:
        self._adding = threading.Lock()
        self._placeholders: dict[str, str] = {}  # a written form -> its placeholder
        self._count = 0  # of forms
        self._few: tuple[str, ...] = ()  # every form, while there are no more than _FEW
        # The first MIN_LENGTH characters of each form -> the forms, longest first.
        self._by_prefix: dict[str, tuple[str, ...]] = {}

    def __bool__(self) -> bool:
        return self._count > 0

    def add(self, secret: str, placeholder: str) -> None:
        """Look for ``secret`` from now on (unless it is shorter than ``MIN_LENGTH``); a form
        already known keeps the placeholder it had."""
        if len(secret) < MIN_LENGTH:
            return
        with self._adding:
            new = [
                form
                for form in dict.fromkeys(written_forms(secret))
                if form not in self._placeholders
            ]
            for form in new:
                self._placeholders[form] = placeholder
                start = form[:MIN_LENGTH]
                same_start = (*self._by_prefix.get(start, ()), form)
                self._by_prefix[start] = tuple(sorted(same_start, key=len, reverse=True))
            if self._count + len(new) <= _FEW:
                self._few = (*self._few, *new)
            self._count += len(new)  # after ``_few``: a search that reads it finds them all

    def mentioned_in(self, text: str) -> bool:
        """Whether ``text`` holds a known value in one of its forms."""
        if self._count <= _FEW:
            return any(form in text for form in self._few)
        return next(self._found(text), None) is not None

    def spans(self, text: str) -> list[Span]:
        """Where ``text`` holds known values, in text order, and their placeholders."""
        if self._count <= _FEW:
            starts = sorted(
                (start, -len(form), form)
                for form in self._few
                for start in _occurrences(text, form)
            )
            spans: list[Span] = []
            end = 0
            for start, _, form in starts:
                if start >= end:
                    end = start + len(form)
                    spans.append((start, end, self._placeholders[form]))
            return spans
        return [
            (start, start + len(form), self._placeholders[form])
            for start, form in self._found(text)
        ]

    def _found(self, text: str) -> Iterator[tuple[int, str]]:
        """The known forms in ``text`` and where each starts, through the index."""
        by_prefix = self._by_prefix
        position = 0
        last = len(text) - MIN_LENGTH
        while position <= last:
            forms = by_prefix.get(text[position : position + MIN_LENGTH])
            if forms is not None:
                form = next((form for form in forms if text.startswith(form, position)), None)
                if form is not None:
                    yield position, form
                    position += len(form)
                    continue
            position += 1


def _occurrences(text: str, form: str) -> list[int]:
    """Every index where ``form`` starts in ``text``, overlapping ones included."""
    found = []
    start = text.find(form)
    while start >= 0:
        found.append(start)
        start = text.find(form, start + 1)
    return found
