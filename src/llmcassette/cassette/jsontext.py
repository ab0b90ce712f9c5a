"""Store JSON text as a JSON value, but only when the exact original bytes can be rebuilt.

A body like ``{"a":1}`` is kept in the cassette as the object ``{"a": 1}`` plus the name of
the *layout* that reproduces the original text (compact, spaced, indented, ASCII-escaped,
trailing newline, spaces before the closing bracket as Anthropic pads its stream events). If no known layout reproduces the text byte for byte, the caller keeps
the text itself: a cassette never trades fidelity for readability.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

DEFAULT_LAYOUT = "compact"

_JSON_START = frozenset("{[")
_MAX_INDENT = 8
_MAX_PAD = 4096  # Anthropic pads stream events with up to a few dozen spaces


class _NoConstants(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    # NaN/Infinity are not JSON: a cassette line holding them could not be read elsewhere.
    raise _NoConstants(name)


_decoder = json.JSONDecoder(parse_constant=_reject_constant)
# The decoder's scanner, called directly: one value from an index, without the checks for
# whitespace around it that ``decode`` adds (the text is exact only without any anyway).
_scan: Callable[[str, int], tuple[Any, int]] = _decoder.scan_once  # type: ignore[attr-defined]


@cache
def _layout(name: str) -> tuple[dict[str, Any], str]:
    """Layout names are a base (``compact``, ``spaced``, ``indent<N>``) plus ``+ascii``/``+nl``
    (``+pad<N>``, N spaces before the last bracket, is applied by ``render``)."""
    parts = [part for part in name.split("+") if not _pad_flag(part)]
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


def _pad_flag(part: str) -> bool:
    return part.startswith("pad") and part[3:].isdigit() and 0 < int(part[3:]) <= _MAX_PAD


def _pad_of(layout: str) -> int:
    return next((int(part[3:]) for part in layout.split("+")[1:] if _pad_flag(part)), 0)


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


def stored_layout(layout: str) -> dict[str, Any]:
    """The fields that store ``layout`` beside a JSON value in a cassette line: ``layout``
    unless it is ``compact``, and ``pad`` (an integer) for the spaces of ``+pad<N>``.

    The padding is a field of its own so that a padded stream event (Anthropic pads most
    of them) costs a few characters, not a layout name per line; ``layout_of`` reads it.
    """
    parts = layout.split("+")
    pads = [part for part in parts[1:] if _pad_flag(part)]
    base = "+".join(part for part in parts if part not in pads)
    fields: dict[str, Any] = {} if base == DEFAULT_LAYOUT else {"layout": base}
    if pads:
        fields["pad"] = int(pads[0][3:])
    return fields


def layout_of(fields: Mapping[str, Any]) -> str:
    """The layout named by the ``layout`` and ``pad`` fields beside a stored JSON value
    (``stored_layout``'s inverse); ``ValueError`` for a ``pad`` that is not 1 to 4096."""
    layout = fields.get("layout", DEFAULT_LAYOUT)
    if "pad" not in fields:
        return layout  # type: ignore[no-any-return]
    pad = fields["pad"]
    if type(pad) is not int or not 0 < pad <= _MAX_PAD:
        raise ValueError(f"field 'pad' must be a whole number from 1 to {_MAX_PAD}, not {pad!r}")
    return f"{layout}+pad{pad}"


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
    rendered = str(encode(value))
    pad = _pad_of(layout) if "+pad" in layout else 0
    if pad and rendered[-1:] in ("}", "]"):
        rendered = rendered[:-1] + " " * pad + rendered[-1]
    return rendered + suffix


@cache
def _encoder(layout: str) -> tuple[Any, str]:
    # One encoder per layout: json.dumps with options builds a new JSONEncoder on every call,
    # which dominates the cost of rebuilding thousands of small stream events at load time.
    kwargs, suffix = _layout(layout)
    if "indent" not in kwargs:
        item, key = kwargs.get("separators", (", ", ": "))
        return encoder(item, key, ensure_ascii=kwargs["ensure_ascii"], allow_nan=True), suffix
    return json.JSONEncoder(**kwargs).encode, suffix


def encoder(
    item_separator: str, key_separator: str, *, ensure_ascii: bool, allow_nan: bool
) -> Callable[[Any], str]:
    """``json.dumps`` with these options (no indent) as one reusable function.

    It calls the C encoder directly, when there is one: ``JSONEncoder.encode`` builds a new
    one for every value, about a third of the time of encoding a stream event. Without a
    circular-reference check: what is encoded here was parsed from JSON, so has no cycles.
    """
    plain = json.JSONEncoder(
        separators=(item_separator, key_separator), ensure_ascii=ensure_ascii, allow_nan=allow_nan
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return plain.encode
    strings = (
        json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    )
    encode_c = make(
        None, plain.default, strings, None, key_separator, item_separator, False, False, allow_nan
    )

    def encode(value: Any) -> str:
        return "".join(encode_c(value, 0))

    return encode


def parse_exact(text: str) -> tuple[Any, str] | None:
    """Parse JSON text and name a layout that rebuilds it exactly, or return None."""
    first = text[:1]
    if first not in _JSON_START and first != '"':
        stripped = text.lstrip()
        if not stripped or (stripped[0] not in _JSON_START and stripped[0] != '"'):
            # Scalars like `1e5` or `true` rarely round-trip and are not worth structuring.
            return None
    try:
        value, end = _scan(text, 0)
        if end != len(text):
            value = _decoder.decode(text)  # whitespace around the value, or more after it
    except (ValueError, StopIteration, RecursionError):
        return None
    if nests_too_deep(text, value):
        return None  # kept as text: see MAX_BODY_DEPTH
    # Only the layouts the text's shape allows: a spaced object (as Python's json.dumps
    # writes it) is not rendered compact first, a megabyte image in it twice.
    for name in _candidates(text):
        if render(value, name) == text:
            return value, name
    return _padded(value, text)


def _padded(value: Any, text: str) -> tuple[Any, str] | None:
    # Spaces before the closing bracket (Anthropic's stream events): the layout of the text
    # without them, plus ``+pad<N>``.
    body = text[:-1] if text.endswith("\n") else text
    last = body[-1:]
    if last not in ("}", "]") or not body[:-1].endswith(" ") or "\n" in body:
        return None  # one-line bodies only: an indented one keeps its text
    pad = len(body[:-1]) - len(body[:-1].rstrip(" "))
    if pad > _MAX_PAD:
        return None
    inner = body[:-1].rstrip(" ") + last + text[len(body) :]
    for name in [DEFAULT_LAYOUT, *_candidates(inner)]:
        padded = f"{name}+pad{pad}"
        if render(value, padded) == text:
            return value, padded
    return None


def value_end(text: str, index: int) -> int | None:
    """Where the JSON value starting at ``index`` ends, or None when none starts there
    (or it holds NaN or Infinity, or nests deeper than Python's recursion)."""
    try:
        return int(_scan(text, index)[1])
    except (ValueError, StopIteration, RecursionError):
        return None


def loads_strict(text: str) -> Any:
    """Parse JSON text, refusing NaN and Infinity."""
    return _decoder.decode(text)


def strings_in(value: Any) -> Iterator[str]:
    """The strings in a parsed JSON value, not its keys, in order (a stack, not recursion:
    any depth)."""
    stack = [iter((value,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.append(iter(item.values()))
        elif isinstance(item, list):
            stack.append(iter(item))


_END = object()

#: How deep a body's JSON may nest to be read as JSON. Deeper, it is text: llmcassette's
#: walkers recurse (Python stops at 1000 calls), and a cassette line, which holds a body two
#: levels down, nests at most 128 levels (``jsonl.MAX_DEPTH``).
MAX_BODY_DEPTH = 100


class TooDeep(ValueError):
    """JSON text whose arrays and objects nest more than ``MAX_BODY_DEPTH`` levels."""

    def __init__(self) -> None:
        super().__init__(f"arrays and objects nest more than {MAX_BODY_DEPTH} levels deep")


#: A body's text holds about this many characters per child of its arrays and objects, at
#: the least, before a walk of them (``_nests_deeper``) costs more than counting its
#: openings. Most bodies hold far more: long strings (prompts, images in base64).
_CHARS_PER_CHILD = 128


def nests_too_deep(text: str | bytes, value: Any, limit: int = MAX_BODY_DEPTH) -> bool:
    """Whether arrays and objects in ``value``, parsed from JSON ``text``, nest more than
    ``limit`` levels.

    The value is walked while that costs less than counting the openings in ``text``
    would: for one child per ``_CHARS_PER_CHILD`` characters. A walk that runs past it
    counts them: fewer than ``limit`` cannot nest deeper; only the rest are walked in full.
    """
    deeper = _nests_deeper(value, limit, len(text) // _CHARS_PER_CHILD)
    if deeper is not None:
        return deeper
    if isinstance(text, bytes):
        openings = text.count(b"{") + text.count(b"[")
    else:
        openings = text.count("{") + text.count("[")
    return openings > limit and bool(_nests_deeper(value, limit))


def _nests_deeper(value: Any, limit: int, budget: int | None = None) -> bool | None:
    """Whether arrays and objects in ``value`` nest more than ``limit`` levels (a walk, on a
    stack); None once it has met more than ``budget`` children, when there is a budget."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if budget is not None:
            budget -= len(item)
            if budget < 0:
                return None
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def loads_body(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)`` for a body (or JSON text inside one); ``TooDeep``
    (a ``ValueError``, as for text that is no JSON) past ``MAX_BODY_DEPTH`` levels."""
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise TooDeep from None
    if nests_too_deep(text, value):
        raise TooDeep
    return value
