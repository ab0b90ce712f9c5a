"""What matching leaves out: ignored JSON paths, volatile values, host aliases, your own rules.

``MatchConfig`` is built once per VCR (``configure(vcr, match=...)``, ``use_cassette(...,
match=...)``, or ``match`` in pytest's ``vcr_config`` / the marker). Body rules are applied to
the parsed body of both the recorded and the incoming request before they are compared;
host aliases rewrite the origin of both, so a cassette recorded against one base URL
replays against another.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit

from llmcassette.errors import ConfigError
from llmcassette.matching.normalizers import (
    cache_key_left_out,
    empty_is_absent,
    stream_false_is_absent,
)

Normalizer = Callable[[Any], Any]

IGNORED = "<ignored>"

# Value shapes that change on every run, replaced wherever they occur inside a string.
VOLATILE_SHAPES: dict[str, re.Pattern[str]] = {
    "uuid": re.compile(
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    ),
    # ISO 8601 date and time (2026-12-01T05:40:00Z, with fractions and offsets).
    "timestamp": re.compile(
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b"
    ),
    # uuid4().hex and its kin: 32 hex digits with no dashes, also after a prefix such as
    # call_ (an underscore is a word character, so \b would not see the boundary).
    "hex_id": re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{32}(?![0-9A-Za-z])"),
}

# Epoch times between 2000-01-01 and 2100-01-01: a JSON number, or a string of its digits.
_EPOCH_RANGES: dict[str, tuple[int, int]] = {
    "epoch_seconds": (946_684_800, 4_102_444_800),
    "epoch_ms": (946_684_800_000, 4_102_444_800_000),
}

# Keys whose value is the id of a tool call or of its result, whoever made it: OpenAI chat
# (tool_call_id), the Responses API (call_id), Anthropic (tool_use_id).
_TOOL_ID_KEYS = frozenset({"tool_call_id", "tool_use_id", "call_id"})
# Objects whose ``id`` is a tool call's: OpenAI tool_calls items and Anthropic blocks by
# ``type``; Gemini's functionCall / functionResponse parts by the key that holds them, in
# either spelling the API takes (llm-gemini sends function_call / function_response).
_TOOL_ID_TYPES = frozenset(
    {"function", "tool_use", "tool_result", "function_call", "function_call_output"}
)
_TOOL_ID_HOLDERS = frozenset(
    {"functionCall", "functionResponse", "function_call", "function_response"}
)

#: A preset ``volatile`` name: a string shape, an epoch range or tool-call ids.
VolatileShape = Literal["uuid", "timestamp", "hex_id", "epoch_seconds", "epoch_ms", "tool_call_id"]
#: Every preset name, documented in docs/matching.md.
VOLATILE_PRESETS: tuple[str, ...] = (
    *VOLATILE_SHAPES,
    *_EPOCH_RANGES,
    "tool_call_id",
)

_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\*|\d+)\]|\[\"((?:[^\"\\]|\\.)*)\"\]")


def parse_path(path: str) -> tuple[str | int, ...]:
    """``$.messages[*].id`` (or ``body.messages[*].id``) as tokens: keys, indexes and ``*``."""
    text = path.strip()
    for prefix in ("$", "body"):
        if text == prefix:
            return ()
        if text.startswith(prefix + ".") or text.startswith(prefix + "["):
            text = text[len(prefix) :]
            break
    if not text.startswith((".", "[")):
        text = "." + text
    tokens: list[str | int] = []
    position = 0
    for match in _PATH_TOKEN.finditer(text):
        if match.start() != position:
            break
        key, index, quoted = match.groups()
        if key is not None:
            tokens.append("*" if key == "*" else key)
        elif index is not None:
            tokens.append("*" if index == "*" else int(index))
        else:
            tokens.append(quoted.replace('\\"', '"').replace("\\\\", "\\"))
        position = match.end()
    if position != len(text) or not tokens:
        raise ConfigError(
            f"cannot read the JSON path {path!r}: write it like $.metadata.request_id, "
            '$.messages[*].id or $["odd key"]'
        )
    return tuple(tokens)


class MatchOptions(TypedDict, total=False):
    """``match=`` as a dict (``vcr_config``, the marker, ``use_cassette``): ``MatchConfig``'s
    fields, each optional. ``hosts`` may also be a mapping ``{alias: origin}``."""

    ignore: Sequence[str]
    volatile: Sequence[VolatileShape]
    hosts: Mapping[str, str] | Sequence[tuple[str, str]]
    normalizers: Sequence[Normalizer]
    sdk_defaults: bool


@dataclass(frozen=True)
class MatchConfig:
    """How requests are normalized before they are compared.

    ``ignore``: JSON paths of the body left out (``$.metadata.request_id``,
    ``$.messages[*].id``). ``volatile``: value shapes replaced wherever they occur in a
    string (``"uuid"``, ``"timestamp"``). ``hosts``: origins treated as another
    (``{"http://localhost:4000": "https://api.openai.com"}``). ``normalizers``: functions
    called with the parsed body, returning the body to compare. ``sdk_defaults``: treat
    what clients spell differently but the API reads the same as equal (``"stream":
    false`` and no ``stream``, an empty value and no field) and leave out
    ``prompt_cache_key``; on by default.
    """

    ignore: tuple[str, ...] = ()
    volatile: tuple[str, ...] = ()
    hosts: tuple[tuple[str, str], ...] = ()
    normalizers: tuple[Normalizer, ...] = ()
    sdk_defaults: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.volatile) - set(VOLATILE_PRESETS)
        if unknown:
            raise ConfigError(
                f"unknown volatile shape(s) {sorted(unknown)}; known: "
                f"{', '.join(sorted(VOLATILE_PRESETS))}"
            )
        for path in self.ignore:
            parse_path(path)
        for alias, origin in self.hosts:
            for url in (alias, origin):
                parts = urlsplit(url)
                if not parts.scheme or not parts.netloc or parts.path not in ("", "/"):
                    raise ConfigError(
                        f"host alias {url!r} must be an origin like https://api.openai.com"
                    )

    @classmethod
    def from_options(cls, options: MatchConfig | MatchOptions | None) -> MatchConfig:
        """Accept a ``MatchConfig``, a mapping of its fields, or None (the defaults)."""
        if options is None:
            return cls()
        if isinstance(options, MatchConfig):
            return options
        known = list(MatchOptions.__annotations__)
        if not isinstance(options, Mapping):
            raise ConfigError(
                f"match must be a MatchConfig or a dict of {', '.join(known)}, not {options!r}"
            )
        unknown = set(options) - set(known)
        if unknown:
            raise ConfigError(f"unknown match option(s) {sorted(unknown)}; use {', '.join(known)}")
        hosts = options.get("hosts") or {}
        return cls(
            ignore=tuple(options.get("ignore") or ()),
            volatile=tuple(options.get("volatile") or ()),
            hosts=tuple(hosts.items() if isinstance(hosts, Mapping) else hosts),
            normalizers=tuple(options.get("normalizers") or ()),
            sdk_defaults=bool(options.get("sdk_defaults", True)),
        )

    @property
    def changes_bodies(self) -> bool:
        """Whether bodies need normalizing at all (the common case is no)."""
        return bool(self.ignore or self.volatile or self.normalizers)

    def body(self, value: Any) -> Any:
        """A normalized copy of a parsed body (the input is never changed)."""
        if self.sdk_defaults:
            value = cache_key_left_out(empty_is_absent(stream_false_is_absent(value)))
        if not self.changes_bodies or not isinstance(value, (dict, list, str)):
            return value
        for path in self.ignore:
            value = _drop(value, parse_path(path))
        if self.volatile:
            value = _replace_volatile(value, self.volatile)
        if self.normalizers:
            # Parsed bodies are kept by their bytes (``canonical.PARSED``): a normalizer
            # that changes its argument in place (``body.pop("user")``) would change it for
            # every later reader of the same bytes, another cassette's matching among them.
            value = _fresh(value)
        for normalizer in self.normalizers:
            value = normalizer(value)
        return value

    def rewrite_origin(self, uri: str) -> str:
        """``uri`` with an aliased origin replaced by the origin it stands for."""
        for alias, origin in self.hosts:
            alias = alias.rstrip("/")
            if uri == alias or uri.startswith(alias + "/") or uri.startswith(alias + "?"):
                return origin.rstrip("/") + uri[len(alias) :]
        return uri


def _fresh(value: Any) -> Any:
    """A copy of a parsed body's objects and lists (its strings and numbers are immutable)."""
    if isinstance(value, dict):
        return {key: _fresh(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh(item) for item in value]
    return value


def _drop(value: Any, tokens: tuple[str | int, ...]) -> Any:
    if not tokens:
        return IGNORED
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head] if head in value else []
        if not keys:
            return value
        copy = dict(value)
        for key in keys:
            if rest:
                copy[key] = _drop(copy[key], rest)
            else:
                del copy[key]
        return copy
    if isinstance(value, list):
        if head == "*":
            positions = range(len(value))
        elif isinstance(head, int) and head < len(value):
            positions = range(head, head + 1)
        else:
            return value
        items = list(value)
        for position in positions:
            items[position] = _drop(items[position], rest)
        return items
    return value


def _replace_volatile(value: Any, names: tuple[str, ...]) -> Any:
    """``value`` with every preset in ``names`` replaced by ``<name>``."""
    shapes = [(name, VOLATILE_SHAPES[name]) for name in names if name in VOLATILE_SHAPES]
    epochs = [(name, _EPOCH_RANGES[name]) for name in names if name in _EPOCH_RANGES]
    tool_ids = "tool_call_id" in names

    def walk(item: Any, key: str | None, holder: Holder | None) -> Any:
        if tool_ids and isinstance(item, str) and _is_tool_id(key, holder):
            return "<tool_call_id>"
        if isinstance(item, dict):
            inner = Holder(item, key)
            return {k: walk(v, k if isinstance(k, str) else None, inner) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(element, None, None) for element in item]
        for name, (low, high) in epochs:
            if _epoch_in(item, low, high):
                return f"<{name}>"
        if isinstance(item, str):
            for name, shape in shapes:
                item = shape.sub(f"<{name}>", item)
        return item

    return walk(value, None, None)


@dataclass(frozen=True)
class Holder:
    """The object a value sits in, and the key that object sits under."""

    fields: dict[str, Any]
    key: str | None


def _is_tool_id(key: str | None, holder: Holder | None) -> bool:
    if key in _TOOL_ID_KEYS:
        return True
    if key != "id" or holder is None:
        return False
    return holder.fields.get("type") in _TOOL_ID_TYPES or holder.key in _TOOL_ID_HOLDERS


def _epoch_in(value: Any, low: int, high: int) -> bool:
    # bool is an int in Python; true is never a time.
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return low <= value < high
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return low <= int(value) < high
    return False
