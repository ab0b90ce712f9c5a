"""llmcassette's lookup for vcrpy's own stubs (requests, urllib3, boto3, aiohttp...).

vcrpy's stubs ask the cassette ``can_play_response_for`` then ``play_response``; both are
answered with ``lookup.decide``, as for httpx, so that every client replays alike (a vcrpy
cassette's drift, sessions, the index). A request that may neither play nor be recorded
raises llmcassette's ``CassetteMismatch`` (a vcrpy ``CannotOverwriteExistingCassetteException``)
with the path that differs: vcrpy's own message, built from a suite's ``match_on`` without
the body, would say the request matches an interaction "already played back".
"""

from __future__ import annotations

from typing import Any

from llmcassette._vcr.fault_plan import STUB_CALLS
from llmcassette._vcr.lookup import (
    VCRPY_LOOKUPS,
    Refuse,
    Replay,
    decide,
    vcrpy_can_play,
    vcrpy_play,
)
from llmcassette._vcr.mismatch import CassetteMismatch
from llmcassette._vcr.persister import Persister
from llmcassette._vcr.stubs import refused

_KEPT_ATTRIBUTE = "_llmcassette_found"  # id(request): (request, response) for ``play``


def answer_vcrpy_stubs() -> None:
    """Put ``can_play`` and ``play`` in place of vcrpy's ``Cassette`` lookups (once). A
    cassette llmcassette did not configure gets vcrpy's answer."""
    from vcr.cassette import Cassette

    if VCRPY_LOOKUPS:
        return
    VCRPY_LOOKUPS["can_play"] = Cassette.can_play_response_for
    VCRPY_LOOKUPS["play"] = Cassette.play_response
    Cassette.can_play_response_for = can_play
    Cassette.play_response = play


def can_play(cassette: Any, request: Any) -> bool:
    """``Cassette.can_play_response_for`` for vcrpy's own stubs: ``decide``'s answer. The
    response it found is counted as played and kept for ``play``, which vcrpy's stubs call
    next with the same request."""
    calls = cassette.__dict__
    calls[STUB_CALLS] = calls.get(STUB_CALLS, 0) + 1
    decision = decide(cassette, request)
    if decision is None:
        return vcrpy_can_play(cassette, request)
    if isinstance(decision, Replay):
        kept = cassette.__dict__.setdefault(_KEPT_ATTRIBUTE, {})
        kept[id(request)] = (request, decision.response)  # the request keeps its id unique
        return True
    if isinstance(decision, Refuse):
        call = sum(cassette.play_counts.values()) + 1
        persister = cassette._persister
        context = persister.context if isinstance(persister, Persister) else "vcr"
        mismatch = CassetteMismatch.for_request(cassette, request, call, context)
        refused(cassette, mismatch)
        raise mismatch
    return False


def play(cassette: Any, request: Any) -> Any:
    """``Cassette.play_response`` for vcrpy's own stubs: what ``can_play`` found for this
    request, else ``decide``'s answer, else vcrpy's (which raises when none plays)."""
    kept = cassette.__dict__.get(_KEPT_ATTRIBUTE, {}).pop(id(request), None)
    if kept is not None and kept[0] is request:
        return kept[1]
    decision = decide(cassette, request)
    if isinstance(decision, Replay):
        return decision.response
    return vcrpy_play(cassette, request)
