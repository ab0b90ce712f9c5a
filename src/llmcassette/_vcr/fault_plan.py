"""Which fault (if any) answers an incoming request, and what was left unused.

A cassette in use gets a ``FaultPlan`` when it has overrides (a sidecar file or the
``overrides`` option) or when faults are scheduled on it. With overrides, the plan *is*
the list of interactions to replay: each incoming request takes the first unplayed entry
that answers it. Scheduled faults apply to the next calls in order: one that answers on its
own (an HTTP error, a transport failure) answers without using up a recorded interaction,
so the retry that follows gets the recording; one that changes a stream (cut, hang,
latency, text) applies to the interaction the request replays.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

from vcr.matchers import requests_match

from llmcassette._vcr.lookup import body_matcher
from llmcassette._vcr.persister import display_path, owned_count
from llmcassette.errors import FaultError, OverridesError, UnusedInteractionsError
from llmcassette.faults import sidecar
from llmcassette.faults.model import Entry, Fault, Overrides
from llmcassette.faults.scheduled import scheduled_on
from llmcassette.matching.index import request_key

_PLAN = "_llmcassette_fault_plan"
# How many requests vcrpy's own stubs asked the cassette about (llmcassette._vcr.vcrpy_lookups).
STUB_CALLS = "_llmcassette_stub_calls"
_NO_PLAN = False


@dataclass(frozen=True)
class Answer:
    """What the transport does for one request.

    ``response`` is the recorded response to start from (None when the fault answers alone
    or when ``lookup`` says to find it the usual way), ``fault`` what to change, ``where``
    names the interaction for error messages.
    """

    response: Any
    fault: Fault | None
    where: str
    lookup: bool = False
    record: bool = False


class FaultPlan:
    """The overridden interactions of one cassette in use."""

    def __init__(self, entries: list[Entry], source: str | None) -> None:
        self.entries = entries
        self.source = source
        self.played = [0] * len(entries)
        self._keys: dict[int, Hashable] = {}

    def unused(self, cassette: Any) -> list[tuple[int, str, str]]:
        """Unplayed entries as ``(position, method, uri)``, positions 1-based."""
        entries = []
        for entry, count in zip(self.entries or (), self.played, strict=True):
            if count:
                continue
            if entry.recorded is not None:
                request = cassette.data[entry.recorded][0]
                method, uri = str(request.method), str(request.uri)
            else:
                method = dict(entry.match).get("method", "any method")
                uri = dict(entry.match).get("path", "any URL")
            if entry.fault is not None:
                uri += f" [{entry.fault.describe()}; {entry.origin}]"
            entries.append((entry.index + 1, method, uri))
        return entries

    def choose(self, cassette: Any, request: Any) -> Entry | None:
        """The first unplayed entry that answers ``request`` (marked played), or None."""
        if not self.entries:
            return None
        filtered = cassette._before_record_request(request)
        if filtered is None:
            return None
        matches = _matcher(cassette)
        incoming = matches.key(filtered)
        for position, entry in enumerate(self.entries):
            if self.played[position]:
                continue
            if entry.recorded is None:
                if not entry.accepts(str(filtered.method), str(filtered.path)):
                    continue
            else:
                recorded = self._keys.get(entry.recorded)
                if recorded is None:
                    recorded = self._keys[entry.recorded] = matches.key(
                        cassette.data[entry.recorded][0]
                    )
                if not matches.same(incoming, recorded, filtered, cassette.data[entry.recorded][0]):
                    continue
            self.played[position] += 1
            if entry.recorded is not None:
                _count_play(cassette, entry.recorded)
            return entry
        return None


class _Matcher:
    """llmcassette's request key where the default ``match_on`` is in use, else vcrpy's."""

    def __init__(self, cassette: Any) -> None:
        body = body_matcher(cassette)
        self.config = None if body is None else body.config
        self.match_on = getattr(cassette, "_match_on", ())

    def key(self, request: Any) -> Hashable:
        if self.config is None:
            return None
        return request_key(request, self.config)

    def same(self, incoming: Hashable, recorded: Hashable, request: Any, other: Any) -> bool:
        if self.config is not None:
            return incoming == recorded
        return bool(requests_match(request, other, self.match_on))


def _matcher(cassette: Any) -> _Matcher:
    matcher = cassette.__dict__.get("_llmcassette_fault_matcher")
    if not isinstance(matcher, _Matcher):
        matcher = cassette.__dict__["_llmcassette_fault_matcher"] = _Matcher(cassette)
    return matcher


def _count_play(cassette: Any, position: int) -> None:
    counts = getattr(cassette, "play_counts", None)
    if counts is None:
        return
    if counts[position] == 0 and position < getattr(cassette, "_loaded_count", 0):
        cassette._played_interactions.append(cassette.data[position])
    counts[position] += 1


def plan_of(cassette: Any, overrides: Any = None) -> FaultPlan | None:
    """The cassette's plan, built on first use from its sidecar or ``overrides``.

    Returns None (cheaply, on every later call) for a cassette with no overrides.
    """
    plan = cassette.__dict__.get(_PLAN)
    if plan is _NO_PLAN:
        return None
    if isinstance(plan, FaultPlan):
        return plan
    built = _build(cassette, overrides)
    cassette.__dict__[_PLAN] = _NO_PLAN if built is None else built
    return built


def _build(cassette: Any, overrides: Any) -> FaultPlan | None:
    path = display_path(cassette)
    option = overrides if overrides is not None else _configured_overrides(cassette)
    from_file = sidecar.load(sidecar.path_for(path)) if path else None
    if option is not None and from_file is not None:
        raise OverridesError(
            from_file.source,
            None,
            None,
            "overrides are given both in this file and in the `overrides` option",
            "keep one of them",
        )
    chosen = from_file if option is None else Overrides.parse(option, "the `overrides` option")
    if chosen is None:
        return None
    recorded = getattr(cassette, "_loaded_count", None)
    if recorded is None:
        recorded = len(cassette.data)
    return FaultPlan(chosen.resolve(recorded), chosen.source)


def _configured_overrides(cassette: Any) -> Any:
    """The ``overrides`` option the cassette's VCR was configured with (see ``configure``)."""
    for patch in getattr(cassette, "custom_patches", ()) or ():
        overrides = getattr(patch[2], "overrides", None)
        if overrides is not None:
            return overrides
    return None


def answer(cassette: Any, request: Any, overrides: Any) -> Answer | None:
    """What answers ``request``: None when no fault or override is involved."""
    plan = plan_of(cassette, overrides)
    queue = scheduled_on(cassette)
    taken = None if queue is None else queue.take()
    if plan is None and taken is None:
        return None
    scheduled, where = taken if taken is not None else (None, "")
    if scheduled is not None and scheduled.answers_alone:
        return Answer(None, scheduled, where)
    if plan is None:
        return Answer(None, scheduled, where, lookup=True)
    entry = plan.choose(cassette, request)
    if entry is None:
        return Answer(None, scheduled, where, record=True)
    fault = _combine(entry.fault, scheduled)
    response = None if entry.recorded is None else cassette.data[entry.recorded][1]
    if response is None and (fault is None or not fault.answers_alone):
        raise FaultError(plan.source, entry.where, "answers with nothing")
    return Answer(response, fault, where or entry.where)


def _combine(first: Fault | None, second: Fault | None) -> Fault | None:
    """``first`` with what ``second`` sets on top (a scheduled fault on an overridden entry)."""
    if first is None or second is None:
        return first or second
    default = Fault()
    changes = {
        name: getattr(second, name)
        for name in Fault.__dataclass_fields__
        if getattr(second, name) != getattr(default, name)
    }
    return replace(first, **changes)


def check_unused(cassette: Any) -> UnusedInteractionsError | None:
    """The error for a replayed cassette that left interactions, overridden entries or
    scheduled faults unplayed; None when everything scripted was used."""
    plan = plan_of(cassette)
    queue = scheduled_on(cassette)
    unused_faults = [] if queue is None else queue.unused()
    loaded = getattr(cassette, "_loaded_count", None)
    record_mode = getattr(cassette.record_mode, "value", cassette.record_mode)
    replayed = bool(loaded) and getattr(cassette, "rewound", False)
    replaying = replayed and record_mode in ("none", "once")
    if plan is not None and (replaying or not loaded):
        entries = plan.unused(cassette)
        if entries or unused_faults:
            return UnusedInteractionsError(
                _where(cassette),
                entries,
                len(plan.entries),
                unused_faults,
                scripted=True,
                bypassed=_bypassed(cassette, unused_faults),
            )
        return None
    counts = cassette.play_counts if replaying else {}
    unplayed = replaying and not all(counts[position] for position in range(loaded or 0))
    if not unplayed and not unused_faults:
        return None  # every recorded interaction played, or none had to: no file asked
    unused = []
    # Only the test's own cassette must be played whole: of another one a marker names
    # (a cassette shared between tests), a test may play a part.
    owned = owned_count(cassette)
    own = loaded if owned is None or loaded is None else min(owned, loaded)
    described: list[str] = []
    if replaying and own:
        from llmcassette.matching.report import describe_request

        for position, (request, _) in enumerate(cassette.data[:own]):
            if counts[position] == 0:
                unused.append((position + 1, request.method, request.uri))
                described.append(describe_request(request))
    if not unused and not unused_faults:
        return None
    return UnusedInteractionsError(
        _where(cassette),
        unused,
        own or 0,
        unused_faults,
        described=described,
        bypassed=_bypassed(cassette, unused_faults),
    )


def _bypassed(cassette: Any, unused_faults: list[str]) -> int:
    """The requests vcrpy's own stubs sent, when a scheduled fault stayed unused."""
    return int(cassette.__dict__.get(STUB_CALLS, 0)) if unused_faults else 0


def _where(cassette: Any) -> str:
    # Looked up only for an error: it asks the file system which file the cassette is.
    return display_path(cassette) or "the cassette"
