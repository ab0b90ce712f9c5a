"""Replay vcrpy-recorded cassettes as vcrpy would, and report their body drift.

vcrpy matched on method and URL only, so a legacy cassette (``.yaml``/``.json``, or a
``.jsonl`` whose header says ``converted_from``) was never checked against the bodies its
tests send. When no interaction matches with the body, ``legacy_replay`` looks the request
up with vcrpy's default ``match_on``; every body difference of the interaction it plays is
a ``LegacyCassetteDriftWarning`` (``drift="warn"``), or nothing (``"off"``). With
``"strict"`` it plays nothing and the usual mismatch follows. Cassettes llmcassette recorded
itself are never looked up this way.

vcrpy never failed a test for interactions it left unplayed either: ``unplayed_drift`` turns
those of a legacy cassette into drift too.
"""

from __future__ import annotations

import functools
from typing import Any

from vcr.matchers import requests_match

from llmcassette._vcr import deferred
from llmcassette._vcr.persister import (
    LEGACY_ATTRIBUTE,
    Persister,
    is_legacy,
    rerecord_command,
    shown_for,
)
from llmcassette.errors import LegacyCassetteDriftWarning, UnusedInteractionsError
from llmcassette.matching.matchers import comparable_method, method
from llmcassette.matching.normalize import MatchConfig
from llmcassette.matching.report import LeaveOut, compare, leave_out_for, leave_out_option
from llmcassette.transport.recorded import session_of

#: The drift warnings of the test running now (the pytest plugin reads and clears it).
DRIFTED: list[LegacyCassetteDriftWarning] = []
# A test that drifts on every call of a loop should not hold every warning in memory.
DRIFTED_LIMIT = 100
_VALUE_WIDTH = 60
_FIRST_UNPLAYED = "_llmcassette_first_unplayed"  # (the play counts it holds for, position)


def drift_mode(cassette: Any) -> str:
    """The cassette's ``drift`` setting (``"warn"`` unless the persister says otherwise)."""
    return str(getattr(getattr(cassette, "_persister", None), "drift", "warn"))


@functools.cache
def vcrpy_url_matchers() -> tuple[Any, ...]:
    """vcrpy's default ``match_on``, with llmcassette's ``method`` (case ignored), which
    ``configure`` registers in place of vcrpy's."""
    from vcr import matchers as vcr_matchers

    names = ("scheme", "host", "port", "path", "query")
    return (method, *(getattr(vcr_matchers, name) for name in names))


def _requests_match(incoming: Any, recorded: Any, matchers: tuple[Any, ...]) -> bool:
    """vcrpy's ``requests_match``. Two equal URIs pass every URL matcher of vcrpy's
    defaults, which parse them again for each: of those only the method is left."""
    if matchers is vcrpy_url_matchers() and incoming.uri == recorded.uri:
        return comparable_method(incoming) == comparable_method(recorded)
    return bool(requests_match(incoming, recorded, matchers))


def legacy_replay(
    cassette: Any,
    filtered: Any,
    url_matchers: tuple[Any, ...],
    config: MatchConfig,
    label: str | None,
    *,
    only_equal: bool = False,
) -> Any | None:
    """The response of the first unplayed legacy interaction matching ``filtered`` on
    vcrpy's default ``match_on``, counted as played, with its drift reported; else None.

    ``only_equal``: play it only when its body does not differ (``filtered`` is not
    redacted yet, so its differences must not be reported); else None, counting nothing.
    The caller holds the lookup lock.
    """
    mode = drift_mode(cassette)
    if mode == "strict":
        return None
    repeats = cassette.allow_playback_repeats
    data = cassette.data
    for position in range(0 if repeats else _first_unplayed(cassette), len(data)):
        recorded_request, response = data[position]
        file = getattr(recorded_request, LEGACY_ATTRIBUTE, None)
        count = cassette.play_counts[position]
        if file is None or not (count == 0 or repeats) or session_of(response) != label:
            continue
        if not _requests_match(filtered, recorded_request, url_matchers):
            continue
        differences = _body_drift(filtered, recorded_request, config) if mode == "warn" else ()
        if only_equal and differences:
            return None
        if count == 0 and position < cassette._loaded_count:
            cassette._played_interactions.append((recorded_request, response))
        cassette.play_counts[position] += 1
        leave = leave_out_for(filtered, recorded_request, config, differences)
        _report(cassette, file, differences, leave)
        return response
    return None


def strict_refuses(
    cassette: Any,
    filtered: Any,
    url_matchers: tuple[Any, ...],
    config: MatchConfig,
    label: str | None,
) -> bool:
    """Under ``drift="strict"``, whether the legacy interaction vcrpy would play for
    ``filtered`` on a ``match_on`` without the body (``url_matchers``, the suite's own)
    has a body that differs: it must not play. The caller holds the lookup lock."""
    if drift_mode(cassette) != "strict":
        return False
    repeats = cassette.allow_playback_repeats
    for position, (recorded_request, response) in enumerate(cassette.data):
        count = cassette.play_counts[position]
        if not (count == 0 or repeats) or session_of(response) != label:
            continue
        if requests_match(filtered, recorded_request, url_matchers):
            return is_legacy(recorded_request) and bool(
                _body_drift(filtered, recorded_request, config)
            )
    return False


def _body_drift(incoming: Any, recorded: Any, config: MatchConfig) -> tuple[Any, ...]:
    """The body's differences: the rest matched on ``match_on``, whose matchers may be a
    suite's own that accept a URL that differs (a region in a host, a project in a path)."""
    if incoming.body == recorded.body:
        return ()
    if recorded.body is None:
        # vcrpy recorded no body: its aiohttp stub (before vcrpy 7.0.0, kevin1024/vcrpy#624)
        # stored every json= POST as body null; what was sent cannot be compared.
        return ()
    return tuple(d for d in compare(incoming, recorded, config) if d.path.startswith("body"))


def _first_unplayed(cassette: Any) -> int:
    """Where the first unplayed legacy interaction may be: every one before it has played,
    or is not legacy. Kept with the cassette, so that replaying a vcrpy cassette in order
    looks at each interaction once, not again for every later request.

    Play counts only grow, and interactions are only appended, until the counts start again
    (vcrpy's ``rewind``, a record mode ``all`` save): a new ``play_counts`` starts it over.
    """
    counts, data = cassette.play_counts, cassette.data
    known = cassette.__dict__.get(_FIRST_UNPLAYED)
    position = known[1] if known is not None and known[0] is counts else 0
    while position < len(data) and (counts[position] or not is_legacy(data[position][0])):
        position += 1
    cassette.__dict__[_FIRST_UNPLAYED] = (counts, position)
    return position


def _report(cassette: Any, file: str, differences: tuple[Any, ...], leave: LeaveOut | None) -> None:
    """A warning for each difference; one that ``leave``'s ``volatile`` presets take away
    (a tool-call id, a uuid the client makes anew) says so, since recording the test again
    would not stop it."""
    persister = getattr(cassette, "_persister", None)
    rerecord = rerecord_command(persister)
    option = None
    if leave is not None and leave.volatile:
        presets = LeaveOut(leave.volatile)  # the presets alone, not the paths left
        if isinstance(persister, Persister):
            option = leave_out_option(presets, persister.context, persister.test)
        else:
            option = leave_out_option(presets, "vcr")
    kept = () if leave is None else tuple("body" + path[1:] for path in leave.ignore)
    shown = shown_for(cassette, file)
    for difference in differences:
        recorded, incoming = difference.shown(_VALUE_WIDTH)
        # Inside the client's HTTP call: where warnings are errors, raised at the exit.
        volatile = () if leave is None or difference.path in kept else leave.volatile
        warning = LegacyCassetteDriftWarning(
            file, difference.path, recorded, incoming, rerecord, shown, volatile, option
        )
        _emit(warning, cassette)


def _emit(warning: LegacyCassetteDriftWarning, cassette: Any = None) -> None:
    if len(DRIFTED) < DRIFTED_LIMIT:
        DRIFTED.append(warning)
    # stacklevel: the warning's location would be inside the HTTP stub either way.
    deferred.warn(cassette, warning, stacklevel=3)


def unplayed_drift(
    cassette: Any, error: UnusedInteractionsError, mode: str | None = None
) -> UnusedInteractionsError | None:
    """``error`` (``check_unused``'s, for a cassette without overrides) without what vcrpy
    would have left unplayed too; None when nothing is left.

    Under ``allow_playback_repeats`` an interaction matching an earlier one that played can
    never play (vcrpy and the lookup answer with the first), so it is no unused call in any
    mode. Of a legacy cassette, each other unplayed interaction is drift: an LC304 warning
    (``"warn"``), nothing (``"off"``); ``"strict"`` keeps it in the error. So is one of a
    cassette a persister of the project's own read (llmcassette's would have said whether
    vcrpy recorded it): ``mode`` is the test's drift setting, which that persister lacks.
    """
    if error.unused_faults or not error.unused:
        return error
    own_persister = not isinstance(getattr(cassette, "_persister", None), Persister)
    mode = mode if own_persister and mode is not None else drift_mode(cassette)
    left: list[tuple[tuple[int, str, str], str]] = []
    rerecord = rerecord_command(getattr(cassette, "_persister", None))
    for entry, described in zip(error.unused, error.described, strict=True):
        index = entry[0] - 1
        request = cassette.data[index][0]
        if cassette.allow_playback_repeats and _shadowed(cassette, index):
            continue
        file = getattr(request, LEGACY_ATTRIBUTE, None)
        if file is None and own_persister:
            file = error.path
        if file is None or mode == "strict":
            left.append((entry, described))
        elif mode == "warn":
            # The described request (method, path, model, prompt) is shown as it is.
            path = f"interaction #{entry[0]}"
            shown = shown_for(cassette, file)
            _emit(
                LegacyCassetteDriftWarning(
                    file, path, described, "(not requested)", rerecord, shown
                )
            )
    if len(left) == len(error.unused):
        return error
    if not left:
        return None
    return UnusedInteractionsError(
        error.path, [entry for entry, _ in left], error.total, described=[d for _, d in left]
    )


def _shadowed(cassette: Any, index: int) -> bool:
    """Whether an interaction before ``index`` that played matches its request."""
    request = cassette.data[index][0]
    matchers = cassette._match_on
    return any(
        cassette.play_counts[earlier] > 0
        and requests_match(request, cassette.data[earlier][0], matchers)
        for earlier in range(index)
    )
