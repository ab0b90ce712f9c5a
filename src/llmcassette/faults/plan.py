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

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import FaultError, OverridesError
from . import sidecar

if TYPE_CHECKING:
    # Imported where used: a cassette without overrides or faults never needs the model.
    from .model import Entry, Fault

_PLAN = "_llmcassette_fault_plan"
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
    """The overridden interactions of one cassette in use, and the faults scheduled on it."""

    def __init__(self, entries: list[Entry] | None, source: str | None) -> None:
        self.entries = entries
        self.source = source
        self.played = [0] * len(entries or ())
        self.scheduled: deque[Fault] = deque()
        self.scheduled_count = 0
        self._keys: dict[int, Hashable] = {}

    def schedule(self, *faults: Fault) -> None:
        """Apply ``faults`` to the next calls, one call each, in order."""
        from .model import Fault

        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(
                    f"schedule() takes faults built by llmcassette.faults (http_error, "
                    f"transport_error, cut_stream, hang, latency, replace_text), not {fault!r}"
                )
        self.scheduled.extend(faults)
        self.scheduled_count += len(faults)

    def unused(self, cassette: Any) -> tuple[list[tuple[int, str, str]], list[str]]:
        """Unplayed entries as ``(position, method, uri)`` (1-based) and unused scheduled faults."""
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
        return entries, [fault.describe() for fault in self.scheduled]

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
        from ..matching.lookup import body_matcher

        body = body_matcher(cassette)
        self.config = None if body is None else body.config
        self.match_on = getattr(cassette, "_match_on", ())

    def key(self, request: Any) -> Hashable:
        if self.config is None:
            return None
        from ..matching.index import request_key

        return request_key(request, self.config)

    def same(self, incoming: Hashable, recorded: Hashable, request: Any, other: Any) -> bool:
        if self.config is not None:
            return incoming == recorded
        from vcr.matchers import requests_match

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


def plan_of(cassette: Any, overrides: Any = None, *, create: bool = False) -> FaultPlan | None:
    """The cassette's plan, built on first use from its sidecar or ``overrides``.

    Returns None (cheaply, on every later call) for a cassette with no overrides, unless
    ``create`` asks for an empty plan to schedule faults on.
    """
    plan = cassette.__dict__.get(_PLAN)
    if plan is _NO_PLAN and not create:
        return None
    if isinstance(plan, FaultPlan):
        return plan
    built = _build(cassette, overrides)
    if built is None and create:
        built = FaultPlan(None, None)
    cassette.__dict__[_PLAN] = _NO_PLAN if built is None else built
    return built


def _build(cassette: Any, overrides: Any) -> FaultPlan | None:
    from ..persister import display_path

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
    if option is None:
        chosen = from_file
    else:
        from .model import Overrides

        chosen = Overrides.parse(option, "the `overrides` option")
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
    if plan is None:
        return None
    scheduled = plan.scheduled.popleft() if plan.scheduled else None
    if scheduled is not None:
        where = f"scheduled fault #{plan.scheduled_count - len(plan.scheduled)}"
        if scheduled.answers_alone:
            return Answer(None, scheduled, where)
    else:
        where = ""
    if plan.entries is None:
        return Answer(None, scheduled, where or "the replayed interaction", lookup=True)
    entry = plan.choose(cassette, request)
    if entry is None:
        return Answer(None, scheduled, where, record=True)
    fault = _combine(entry.fault, scheduled)
    response = None if entry.recorded is None else cassette.data[entry.recorded][1]
    if response is None and (fault is None or not fault.answers_alone):
        raise FaultError(plan.source, entry.origin, "answers with nothing")
    return Answer(response, fault, where or f"interaction {entry.index} ({entry.origin})")


def _combine(first: Fault | None, second: Fault | None) -> Fault | None:
    """``first`` with what ``second`` sets on top (a scheduled fault on an overridden entry)."""
    if first is None or second is None:
        return first or second
    from .model import Fault

    default = Fault()
    changes = {
        name: getattr(second, name)
        for name in Fault.__dataclass_fields__
        if getattr(second, name) != getattr(default, name)
    }
    return replace(first, **changes)
