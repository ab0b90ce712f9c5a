"""A JSON array streamed element by element (Gemini's ``streamGenerateContent`` without
``alt=sse``): one event per element, rebuilt byte for byte.

Such a body is ``application/json`` like any JSON body, but its server writes it one
element at a time: ``[{...}``, then ``,\\r\\n{...}`` for each further element, the last one
followed by ``]`` (the bundled local provider); Google's servers put line ends around the
commas and before the ``]``. An event is the text before an element (the ``[``, or the
comma and the whitespace around it), the element, and for the last element the ``]`` and
whatever whitespace follows. The element is stored like an SSE event's payload: ``data``
(with ``layout``) when it is JSON that rebuilds exactly, else ``text``. A piece of the body
that is not such an event (the rest of an element cut off mid-way, text after the ``]``)
is kept as ``raw`` text, so rebuilding the stream gives back the exact bytes.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from llmcassette.cassette import jsontext

KIND = "json-array"

_WS = "[ \t\n\r]*"  # JSON's whitespace
_OPEN = re.compile(_WS + r"\[" + _WS)
_COMMA = re.compile(_WS + "," + _WS)
_BEFORE = re.compile(_WS + r"[\[,]" + _WS)
_AFTER = re.compile(_WS + r"(?:\]" + _WS + ")?")
_CLOSE = re.compile(_WS + r"\]" + _WS)
_EMPTY = re.compile(_WS + r"\[" + _WS + r"\]" + _WS)
_STREAMED_METHOD = ":streamGenerateContent"


def is_streamed_array(media: str, uri: str | None, body: bytes | str | None = None) -> bool:
    """Whether a response of media type ``media`` to a request for ``uri`` is a JSON array
    streamed element by element.

    That is Gemini's (and Vertex AI's) ``...:streamGenerateContent`` without ``alt=sse``
    in the query (``alt=json`` or none), answered ``application/json``. ``body``, when
    given, must start with ``[`` (whitespace aside): an error sent as one JSON object stays
    an ordinary body.
    """
    if media != "application/json" or not uri:
        return False
    try:
        parts = urlsplit(uri)
    except ValueError:  # "[...]" that is no IPv6 address: no Gemini URL (and its error
        return False  # quotes the text between the brackets, a URL's password maybe)
    if not parts.path.endswith(_STREAMED_METHOD):
        return False
    if parse_qs(parts.query).get("alt", [""])[-1].lower() == "sse":
        return False
    if body is None:
        return True
    if isinstance(body, bytes):
        return body.lstrip(b" \t\r\n")[:1] == b"["
    return body.lstrip(" \t\r\n")[:1] == "["


def split(text: str) -> list[str]:
    """Cut a whole body into event texts whose concatenation is ``text``.

    Each piece ends where an element ends; the last one also takes the closing ``]`` and
    the whitespace after it. What follows the last whole element otherwise (a cut-off
    element, a lone comma, anything after the ``]``) is one more piece.
    """
    ends: list[int] = []
    position = 0
    separator = _OPEN
    while True:
        found = separator.match(text, position)
        if found is None:
            break
        end = jsontext.value_end(text, found.end())
        if end is None:
            break
        ends.append(end)
        position, separator = end, _COMMA
    if not ends:
        return [text] if text else []
    pieces = [text[start:end] for start, end in zip([0, *ends], ends, strict=False)]
    tail = text[ends[-1] :]
    if _CLOSE.fullmatch(tail):
        pieces[-1] += tail
    elif tail:
        pieces.append(tail)
    return pieces


def parse_piece(piece: str) -> tuple[str, str, str] | None:
    """One event's text before the element, the element's text and the text after it;
    None when the piece is not one element with its separators (it is kept ``raw``)."""
    before = _BEFORE.match(piece)
    if before is None:
        return None
    end = jsontext.value_end(piece, before.end())
    if end is None or not _AFTER.fullmatch(piece, end):
        return None
    return before.group(), piece[before.end() : end], piece[end:]


def is_closed(pieces: list[str]) -> bool:
    """Whether the last event of a stream ends the array with its ``]``."""
    if not pieces:
        return False
    parsed = parse_piece(pieces[-1])
    if parsed is None:
        return _EMPTY.fullmatch(pieces[-1]) is not None
    return "]" in parsed[2]


def check_separators(before: str, after: str) -> None:
    """Raise ``ValueError`` unless ``before`` and ``after`` are what an event can hold:
    ``[`` or ``,`` with whitespace around it, and whitespace with at most one ``]``."""
    if not _BEFORE.fullmatch(before):
        raise ValueError(f"field 'before' must be '[' or ',' with whitespace, not {before!r}")
    if not _AFTER.fullmatch(after):
        raise ValueError(f"field 'after' must be whitespace around one ']', not {after!r}")
