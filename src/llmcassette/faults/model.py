"""What a fault is, and the overrides that place faults on a cassette's interactions.

A ``Fault`` changes what one request gets back: an HTTP error instead of the answer, a
transport failure before any response, a stream cut or left hanging after some events,
added latency, or recorded text rewritten (for ``{{fromRequest:...}}`` placeholders).
``Overrides`` say which interactions get which fault: they *patch* the recorded list by
index (an index one past the end appends) or *replace* it. Both come from a sidecar file
next to the cassette, from the ``overrides`` option, or from Python.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from llmcassette.errors import LlmCassetteError, OverridesError, shown_path

_T = TypeVar("_T")

# The longest string a message about a wrong value quotes (``unknown failure 'boom'``).
_QUOTED_AT_MOST = 16


def shown(value: Any) -> str:
    """A wrong value as an error message names it. A number, a boolean or null is quoted,
    and so is a short string (a typo: ``'dns'``); a longer string or a list or object only
    by its kind: a sidecar is written by hand, and a credential pasted into the wrong field
    (a header's value as vcrpy's list, ``["Bearer sk-..."]``) must not reach the output of
    ``llmcassette check`` or a test's error."""
    if isinstance(value, str):
        if len(value) <= _QUOTED_AT_MOST:
            return repr(value)
        return f"a string of {len(value)} characters"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float) or (isinstance(value, int) and abs(value) < 10**18):
        return repr(value)
    if isinstance(value, int):
        return "a very large number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


# Transport failures by name: the client library's exception class and the message a real
# failure of that kind carries.
FAILURES: dict[str, tuple[str, str]] = {
    "connect_error": ("ConnectError", "[Errno 111] Connection refused"),
    "connect_timeout": ("ConnectTimeout", "timed out while connecting"),
    "read_timeout": ("ReadTimeout", "timed out while reading the response"),
    "read_error": ("ReadError", "[Errno 104] Connection reset by peer"),
    "disconnect": ("RemoteProtocolError", "Server disconnected without sending a response."),
}

# How a cut stream ends: the exception class (None: the body just ends) and its message.
CUT_ENDINGS: dict[str, tuple[str | None, str]] = {
    "error": (
        "RemoteProtocolError",
        "peer closed connection without sending complete message body (incomplete chunked read)",
    ),
    "reset": ("ReadError", "[Errno 104] Connection reset by peer"),
    "end": (None, ""),
}


@dataclass(frozen=True)
class Fault:
    """One change to what a request gets back. Build it with the functions in ``llmcassette.faults``."""

    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: Any = None
    fail: str | None = None
    cut_after: int | None = None
    cut: str = "error"
    hang_after: int | None = None
    marker: str | None = None
    delay: float | None = None
    event_delay: float | None = None
    replace: tuple[tuple[str, str], ...] = ()

    @property
    def answers_alone(self) -> bool:
        """Whether it answers without a recorded response (an error or a transport failure)."""
        return self.fail is not None or self.status is not None

    def describe(self) -> str:
        """A short human description, for reports: ``http_error(429)``, ``cut_stream(after=3)``."""
        parts = []
        if self.fail is not None:
            parts.append(f"transport_error({self.fail!r})")
        if self.status is not None:
            parts.append(f"http_error({self.status})")
        if self.cut_after is not None:
            parts.append(f"cut_stream(after={self.cut_after}, then={self.cut!r})")
        if self.hang_after is not None:
            parts.append(f"hang(after={self.hang_after})")
        if self.delay is not None or self.event_delay is not None:
            parts.append(f"latency({self.delay or 0}, {self.event_delay or 0})")
        if self.replace:
            parts.append(f"replace_text({len(self.replace)} text(s))")
        return " + ".join(parts) or "no change"


@dataclass(frozen=True)
class Entry:
    """One interaction of the overridden list.

    ``index`` is its place in the list, from 0 as the sidecar's ``at`` counts;
    ``recorded`` is the recorded interaction whose request it answers and whose response it
    starts from (None for a scripted entry, which answers any request, or those named by
    ``match``), ``fault`` what is changed.
    """

    index: int
    recorded: int | None
    fault: Fault | None
    match: tuple[tuple[str, str], ...] = ()
    #: Where it was declared, for reports, with the sidecar's values as they are written:
    #: "at 3 in entries[1] of x.overrides.json"; "" for an interaction left as recorded.
    origin: str = ""
    #: Its index in the overrides' ``entries`` (None for an interaction left as recorded).
    position: int | None = None

    @property
    def number(self) -> int:
        """Its number as messages count interactions, from 1 (docs/errors.md, "Counting")."""
        return self.index + 1

    @property
    def where(self) -> str:
        """The interaction as an error names it: ``interaction #4 (at 3 in entries[1] of
        x.overrides.json)``, or ``interaction #2`` for one left as recorded."""
        return f"interaction #{self.number}" + (f" ({self.origin})" if self.origin else "")

    def accepts(self, method: str, path: str) -> bool:
        """Whether a scripted entry's ``match`` lets this request through."""
        for key, value in self.match:
            if key == "method" and value.upper() != method.upper():
                return False
            if key == "path" and value != path:
                return False
        return True


@dataclass(frozen=True)
class Overrides:
    """Entries that patch a cassette's interactions by index, or replace them all."""

    mode: str = "patch"
    entries: tuple[dict[str, Any], ...] = ()
    #: The sidecar file or option they came from, for error messages.
    source: str = "overrides"
    #: Relative marker paths are taken from here (the sidecar's folder).
    base_dir: str | None = None
    _validated: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def parse(cls, data: Any, source: str, base_dir: str | None = None) -> Overrides:
        """Validate sidecar content (a dict with ``mode`` and ``entries``); raises ``OverridesError``."""
        if isinstance(data, Overrides):
            return data
        if not isinstance(data, Mapping):
            raise OverridesError(
                source,
                None,
                None,
                f"expected a JSON object with 'entries', got {type(data).__name__}",
                'write {"mode": "patch", "entries": [{"at": 0, "status": 429}]}',
            )
        unknown = sorted(set(data) - {"mode", "entries", "$schema", "comment"})
        if unknown:
            raise OverridesError(
                source, None, unknown[0], "unknown key", "the top level takes 'mode' and 'entries'"
            )
        mode = data.get("mode", "patch")
        if mode not in ("patch", "replace"):
            raise OverridesError(
                source,
                None,
                "mode",
                f"must be 'patch' or 'replace', not {shown(mode)}",
                "'patch' changes recorded interactions by index, 'replace' lists them all anew",
            )
        entries = data.get("entries")
        if not isinstance(entries, list):
            raise OverridesError(
                source, None, "entries", "must be a list of entries", "see docs/faults.md"
            )
        validated = tuple(
            _parse_entry(entry, position, mode, source, base_dir)
            for position, entry in enumerate(entries)
        )
        if mode == "patch":
            seen: dict[int, int] = {}
            for position, (at, _, _, _) in enumerate(validated):
                if at in seen:
                    raise OverridesError(
                        source,
                        position,
                        "at",
                        f"index {at} is already patched by entries[{seen[at]}]",
                        "each index may be patched once; merge the two entries",
                    )
                seen[at] = position
        return cls(mode, tuple(entries), source, base_dir, validated)

    def resolve(self, recorded_count: int) -> list[Entry]:
        """The interaction list these overrides make of ``recorded_count`` recorded ones.

        Raises ``OverridesError`` for indexes the cassette does not have.
        """
        for position, (_, recorded, _fault, _match) in enumerate(self._validated):
            if recorded is not None and recorded >= recorded_count:
                raise OverridesError(
                    self.source,
                    position,
                    "recorded",
                    f"the cassette has {recorded_count} interaction(s), no index {recorded}",
                    _indexes_hint("recorded", recorded_count),
                )
        if self.mode == "replace":
            result = []
            for position, (_, recorded, fault, match) in enumerate(self._validated):
                self._needs_an_answer(position, recorded, fault, "a scripted entry")
                origin = self._origin(position)
                result.append(Entry(position, recorded, fault, match, origin, position))
            return result
        result = [Entry(i, i, None) for i in range(recorded_count)]
        appended = sorted(
            (at, position)
            for position, (at, *_) in enumerate(self._validated)
            if at >= recorded_count
        )
        for expected, (at, position) in enumerate(appended, start=recorded_count):
            if at != expected:
                raise OverridesError(
                    self.source,
                    position,
                    "at",
                    f"index {at} leaves a gap: the cassette has {recorded_count} interaction(s), "
                    f"so the next appended entry is at {expected}",
                    f"use at={expected}"
                    + (
                        f", or patch a recorded interaction with at 0-{recorded_count - 1}"
                        if recorded_count
                        else ""
                    ),
                )
        for position, (at, recorded, fault, match) in enumerate(self._validated):
            if at < recorded_count:
                base = recorded if recorded is not None else None if match else at
                self._needs_an_answer(position, base, fault, "an entry with 'match'")
                result[at] = Entry(at, base, fault, match, self._origin(position, at), position)
        for at, position in appended:
            _, recorded, fault, match = self._validated[position]
            self._needs_an_answer(position, recorded, fault, "an appended entry")
            origin = self._origin(position, at)
            result.append(Entry(at, recorded, fault, match, origin, position))
        return result

    def _origin(self, position: int, at: int | None = None) -> str:
        entry = f"entries[{position}] of {shown_path(self.source)}"
        return entry if at is None else f"at {at} in {entry}"

    def _needs_an_answer(
        self, position: int, recorded: int | None, fault: Fault | None, what: str
    ) -> None:
        if recorded is None and (fault is None or not fault.answers_alone):
            raise OverridesError(
                self.source,
                position,
                None,
                f"{what} needs 'recorded' (which recorded interaction it replays), "
                "'status' or 'fail'",
                'e.g. {"recorded": 0} to answer as the first recorded interaction (#1) did',
            )


def _indexes_hint(field_name: str, recorded_count: int) -> str:
    """How to name a recorded interaction in ``field_name``, which counts from 0 where
    ``llmcassette show`` numbers them from 1."""
    if not recorded_count:
        return "the cassette has no interactions to name: record it first"
    return (
        f"{field_name} counts from 0: use 0-{recorded_count - 1} for the interactions "
        f"`llmcassette show` lists as #1-#{recorded_count}"
    )


# An entry's own keys, and a fault's fields (the Fault dataclass is the list of them).
_ENTRY_KEYS = {"at", "recorded", "match", "comment", *Fault.__dataclass_fields__}


def _parse_entry(
    entry: Any, position: int, mode: str, source: str, base_dir: str | None
) -> tuple[int, int | None, Fault | None, tuple[tuple[str, str], ...]]:
    def error(field_name: str | None, problem: str, hint: str = "") -> OverridesError:
        return OverridesError(source, position, field_name, problem, hint)

    if not isinstance(entry, Mapping):
        raise error(None, f"must be an object, got {type(entry).__name__}")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise error(unknown[0], "unknown key", f"known keys: {', '.join(sorted(_ENTRY_KEYS))}")
    at = entry.get("at")
    if mode == "patch":
        if not _is_index(at):
            raise error("at", f"must be a 0-based interaction index, got {shown(at)}")
    elif at is not None and at != position:
        raise error(
            "at", f"is {shown(at)} but the entry is at position {position} of a replace list"
        )
    recorded = entry.get("recorded")
    if recorded is not None and not _is_index(recorded):
        raise error("recorded", f"must be a 0-based interaction index, got {shown(recorded)}")
    match = entry.get("match") or {}
    if not isinstance(match, Mapping) or set(match) - {"method", "path"}:
        raise error("match", "must be an object with 'method' and/or 'path'")
    for key, value in match.items():
        if not isinstance(value, str):
            raise error(f"match.{key}", f"must be a string, got {shown(value)}")
    if match and recorded is not None:
        raise error("match", "a replayed recorded interaction is matched by its own request")
    values = {key: entry[key] for key in entry if key not in ("at", "recorded", "match", "comment")}
    try:
        fault = fault_from_fields(values, base_dir) if values else None
    except FieldError as problem:
        raise error(problem.field, problem.problem, problem.hint) from None
    return (position if at is None else int(at)), recorded, fault, tuple(sorted(match.items()))


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class FieldError(LlmCassetteError):
    """A fault field has a value no fault can use (internal: re-raised as ``OverridesError``).

    ``field`` is the key at fault, ``problem`` what is wrong, ``hint`` how to fix it; the
    caller adds where the field came from (a sidecar entry, the ``faults`` functions).
    """

    code = "LC504 fault-field"

    def __init__(self, field_name: str, problem: str, hint: str = "") -> None:
        self.field = field_name
        self.problem = problem
        self.hint = hint
        super().__init__(f"{field_name}: {problem}" + (f" ({hint})" if hint else ""))

    def details(self) -> dict[str, Any]:
        return {"path": self.field, "how_to_fix": self.hint or None}


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise FieldError(name, f"must be a number of seconds >= 0, got {shown(value)}")
    if value > sys.float_info.max or not math.isfinite(value):  # a huge int: no float
        raise FieldError(name, "must be finite", "leave a stream hanging with hang_after")
    return float(value)


def _count(name: str, value: Any) -> int:
    if not _is_index(value):
        raise FieldError(name, f"must be a whole number of events >= 0, got {shown(value)}")
    return int(value)


def _optional(values: Mapping[str, Any], name: str, check: Callable[[str, Any], _T]) -> _T | None:
    """``values[name]`` checked by ``check``, or None when it is absent or null."""
    return None if values.get(name) is None else check(name, values[name])


def _text_pairs(name: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise FieldError(name, f"must be an object of strings, got {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(item, (str, int, float)) or isinstance(item, bool):
            raise FieldError(f"{name}.{key}", f"must be a string, got {shown(item)}")
    return tuple((str(key), str(item)) for key, item in value.items())


def fault_from_fields(values: Mapping[str, Any], base_dir: str | None = None) -> Fault:
    """A validated ``Fault`` from sidecar-style fields (``status``, ``fail``, ``cut_after``...)."""
    status = values.get("status")
    if status is not None and (
        isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599
    ):
        raise FieldError("status", f"must be an HTTP status 100-599, got {shown(status)}")
    fail = values.get("fail")
    if fail is not None and fail not in FAILURES:
        raise FieldError(
            "fail", f"unknown failure {shown(fail)}", f"use one of {', '.join(FAILURES)}"
        )
    cut = values.get("cut", "error")
    if cut not in CUT_ENDINGS:
        raise FieldError("cut", f"must be one of {', '.join(CUT_ENDINGS)}, got {shown(cut)}")
    cut_after = _optional(values, "cut_after", _count)
    hang_after = _optional(values, "hang_after", _count)
    marker = values.get("marker")
    if marker is not None:
        if not isinstance(marker, str) or not marker:
            raise FieldError("marker", f"must be a file path, got {shown(marker)}")
        if hang_after is None:
            raise FieldError("marker", "is touched when a hang starts: add hang_after")
        if base_dir is not None:  # a sidecar's: a file from a pull request names it
            import os

            folder = os.path.realpath(base_dir)
            joined = os.path.realpath(os.path.join(folder, marker))
            if os.path.commonpath([folder, joined]) != folder:
                raise FieldError(
                    "marker",
                    "must be a file in the sidecar's folder or below it (the hang creates "
                    f"it), got {shown(marker)}",
                )
            marker = os.path.join(base_dir, marker)
    delay = _optional(values, "delay", _seconds)
    event_delay = _optional(values, "event_delay", _seconds)
    headers = _text_pairs("headers", values.get("headers") or {})
    replace = _text_pairs("replace", values.get("replace") or {})
    for old, _ in replace:
        if not old:
            raise FieldError("replace", "cannot replace the empty string")
    if "cut" in values and cut_after is None:
        raise FieldError("cut", "says how a cut stream ends: add cut_after")
    if fail is not None and (status is not None or cut_after is not None or hang_after is not None):
        raise FieldError(
            "fail", "a transport failure happens before any response", "drop status/cut/hang"
        )
    if cut_after is not None and hang_after is not None:
        raise FieldError("hang_after", "a stream is either cut or left hanging, not both")
    if status is not None and (
        cut_after is not None or hang_after is not None or event_delay is not None
    ):
        raise FieldError(
            "status", "an error response is not streamed", "drop cut_after/hang_after/event_delay"
        )
    if (headers or values.get("body") is not None) and status is None:
        raise FieldError(
            "headers" if headers else "body",
            "only an error response (status) takes headers and a body",
            "add status, or use replace to change recorded text",
        )
    body = values.get("body")
    return Fault(
        status=status,
        headers=headers,
        body=body,
        fail=fail,
        cut_after=cut_after,
        cut=cut,
        hang_after=hang_after,
        marker=marker,
        delay=delay,
        event_delay=event_delay,
        replace=replace,
    )
