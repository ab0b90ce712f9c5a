"""llmcassette's lookup for vcrpy's own stubs (requests, urllib3, boto3, aiohttp...).

vcrpy's stubs ask the cassette ``can_play_response_for`` then ``play_response``; both are
answered with ``lookup.decide``, as for httpx, so that every client replays alike (a vcrpy
cassette's drift, sessions, the index). A request that may neither play nor be recorded
raises llmcassette's ``CassetteMismatch`` (a vcrpy ``CannotOverwriteExistingCassetteException``)
with the path that differs: vcrpy's own message, built from a suite's ``match_on`` without
the body, would say the request matches an interaction "already played back".

What they record goes through ``Cassette.append``, called by the stub in the caller's own
thread or task once the whole answer is read: ``append`` stores the caller's
``llmcassette.session`` label and its client's number (``stub_clients``) with it, as
llmcassette's httpx stand-ins do, and notes the
request for the warning about identical concurrent requests (``overlap``), from the time
``can_play`` saw it leave.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from llmcassette._vcr import open_cassettes, overlap, stub_clients
from llmcassette._vcr.fault_plan import STUB_CALLS
from llmcassette._vcr.lookup import (
    VCRPY_LOOKUPS,
    Record,
    Refuse,
    Replay,
    decide,
    vcrpy_can_play,
    vcrpy_play,
)
from llmcassette._vcr.mismatch import CassetteMismatch
from llmcassette._vcr.persister import Persister
from llmcassette._vcr.stubs import refused
from llmcassette.sessions import current_session
from llmcassette.transport.recorded import META_KEY

_KEPT_ATTRIBUTE = "_llmcassette_found"  # id(request): (request, response) for ``play``
# id(request): (request, the request as stored, when it was sent) for ``append``
_SENT_ATTRIBUTE = "_llmcassette_sent"


def answer_vcrpy_stubs() -> None:
    """Put ``can_play`` and ``play`` in place of vcrpy's ``Cassette`` lookups (once). A
    cassette llmcassette did not configure gets vcrpy's answer."""
    from vcr.cassette import Cassette

    if VCRPY_LOOKUPS:
        return
    VCRPY_LOOKUPS["can_play"] = Cassette.can_play_response_for
    VCRPY_LOOKUPS["play"] = Cassette.play_response
    VCRPY_LOOKUPS["append"] = Cassette.append
    VCRPY_LOOKUPS["write_protected"] = Cassette.write_protected
    VCRPY_LOOKUPS["filter_request"] = Cassette.filter_request
    Cassette.can_play_response_for = can_play
    Cassette.play_response = play
    Cassette.append = append
    Cassette.write_protected = property(write_protected)
    Cassette.filter_request = filter_request


# vcrpy's stubs also ask the cassette they were patched for whether it may record, and
# filter the request with its hooks: the cassette the request is routed to answers both.


def write_protected(cassette: Any) -> bool:
    """``Cassette.write_protected`` of the cassette a request made here goes to."""
    return bool(VCRPY_LOOKUPS["write_protected"].fget(open_cassettes.receiver(cassette)))


def filter_request(cassette: Any, request: Any) -> Any:
    """``Cassette.filter_request`` of the cassette a request made here goes to."""
    return VCRPY_LOOKUPS["filter_request"](open_cassettes.receiver(cassette), request)


def can_play(cassette: Any, request: Any) -> bool:
    """``Cassette.can_play_response_for`` for vcrpy's own stubs: ``decide``'s answer. The
    response it found is counted as played and kept for ``play``, which vcrpy's stubs call
    next with the same request."""
    cassette = open_cassettes.receiver(cassette)
    calls = cassette.__dict__
    calls[STUB_CALLS] = calls.get(STUB_CALLS, 0) + 1
    decision = decide(cassette, request, stub_clients.live_client(cassette))
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
    if isinstance(decision, Record):
        # The stub sends it now and appends it once the answer is read: kept for ``append``.
        sent = cassette.__dict__.setdefault(_SENT_ATTRIBUTE, {})
        sent[id(request)] = (request, decision.request, time.monotonic())
    return False


def play(cassette: Any, request: Any) -> Any:
    """``Cassette.play_response`` for vcrpy's own stubs: what ``can_play`` found for this
    request, else ``decide``'s answer, else vcrpy's (which raises when none plays)."""
    cassette = open_cassettes.receiver(cassette)
    kept = cassette.__dict__.get(_KEPT_ATTRIBUTE, {}).pop(id(request), None)
    if kept is not None and kept[0] is request:
        return kept[1]
    decision = decide(cassette, request)
    if isinstance(decision, Replay):
        return decision.response
    return vcrpy_play(cassette, request)


def append(cassette: Any, request: Any, response: Any) -> None:
    """``Cassette.append``: vcrpy's, with the caller's session label and client added to a response
    that vcrpy's own stubs recorded (llmcassette's httpx stand-ins add their own metadata),
    and the request noted for ``overlap`` when ``can_play`` saw it sent. A cassette
    llmcassette did not configure gets vcrpy's ``append`` alone."""
    cassette = open_cassettes.receiver(cassette)
    vcrpy_append = VCRPY_LOOKUPS["append"]
    if not isinstance(getattr(cassette, "_persister", None), Persister):
        vcrpy_append(cassette, request, response)
        return
    label = current_session()  # the stub appends in the caller's thread or task
    client = stub_clients.live_client(cassette)  # and with its client noted
    number = None if client is None else client.bound
    known = (label, number) != (None, None)
    if known and isinstance(response, Mapping) and META_KEY not in response:
        response = {**response, META_KEY: {"session": label, "client": number}}
    vcrpy_append(cassette, request, response)
    sent = cassette.__dict__.get(_SENT_ATTRIBUTE, {}).pop(id(request), None)
    if sent is not None and sent[0] is request:
        overlap.note(cassette, sent[1], label, sent[2], _answer(response))


def _answer(response: Mapping[str, Any]) -> tuple[int, bytes, dict[str, list[str]]]:
    """The status, body and headers of a response dict built by vcrpy's stubs, as
    ``overlap`` compares them."""
    body = (response.get("body") or {}).get("string") or b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    headers = {
        str(name): [values] if isinstance(values, str) else [str(value) for value in values]
        for name, values in (response.get("headers") or {}).items()
    }
    return int(response["status"]["code"]), bytes(body), headers
