"""Decide, for one incoming request, whether to replay (and what) or to record.

This is vcrpy's ``can_play_response_for`` / ``play_response`` / ``write_protected`` logic
with the linear scan replaced by ``RequestIndex``. It answers only when it can answer
exactly as vcrpy would: with a customised ``match_on`` it returns ``None`` and the caller
takes vcrpy's own path, except for a vcrpy cassette's interactions, which play in vcrpy's
order on the suite's own matchers when ``match_on`` holds ``llm_body`` beside them.

A request made in an ``llmcassette.session`` replays only interactions recorded in the same
session, and one made outside any session only interactions recorded outside any: each
session has its own order of identical requests. Among identical unplayed ones, the recorded
request sharing the most text with the incoming one goes first (``_preferred``): a follow-up
goes on with the recorded conversation whose answers it carries. Among those, one recorded
by the client the live client is bound to (``clients``), then the earliest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vcr.record_mode import RecordMode

from llmcassette._vcr import clients, redaction_hook
from llmcassette._vcr.clients import LiveClient
from llmcassette._vcr.drift import drift_mode, legacy_replay, strict_refuses, vcrpy_url_matchers
from llmcassette._vcr.persister import is_legacy
from llmcassette.cassette import jsontext
from llmcassette.matching.index import RequestIndex, request_key
from llmcassette.matching.matchers import LlmBody, method
from llmcassette.matching.normalize import MatchConfig
from llmcassette.sessions import current_session
from llmcassette.transport.recorded import client_of, session_of

_INDEX_ATTRIBUTE = "_llmcassette_index"
_MATCHER_ATTRIBUTE = "_llmcassette_body_matcher"
_TEXTS_ATTRIBUTE = "_llmcassette_request_texts"  # position: the strings of its request body
_OWN_ATTRIBUTE = "_llmcassette_has_own"  # (interactions seen, whether one was not legacy)
# How many unplayed identical interactions are weighed against a request at most (the
# earliest ones): enough for any fan-out, and a cassette of identical polls stays fast.
_MOST_WEIGHED = 64
# Requests from several threads: one at a time finds and counts its interaction.
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Replay:
    """Play this recorded response."""

    response: Any


@dataclass(frozen=True)
class Record:
    """Send the request and record it; ``request`` is it as the cassette will store it."""

    request: Any


@dataclass(frozen=True)
class Refuse:
    """Nothing recorded answers the request, and it may not be recorded."""


# vcrpy's own ``Cassette.can_play_response_for`` and ``play_response``, kept by
# ``vcrpy_lookups.answer_vcrpy_stubs`` when it puts llmcassette's in their place.
VCRPY_LOOKUPS: dict[str, Any] = {}


def vcrpy_can_play(cassette: Any, request: Any) -> bool:
    """vcrpy's own ``can_play_response_for``: its matchers, over every interaction."""
    from vcr.cassette import Cassette

    return bool(VCRPY_LOOKUPS.get("can_play", Cassette.can_play_response_for)(cassette, request))


def vcrpy_play(cassette: Any, request: Any) -> Any:
    """vcrpy's own ``play_response``."""
    from vcr.cassette import Cassette

    return VCRPY_LOOKUPS.get("play", Cassette.play_response)(cassette, request)


def is_method_matcher(matcher: Any) -> bool:
    """Whether ``matcher`` is vcrpy's ``method`` matcher or llmcassette's."""
    from vcr import matchers as vcr_matchers

    return matcher is method or matcher is vcr_matchers.method


def body_matcher(cassette: Any) -> LlmBody | None:
    """The ``llm_body`` matcher when the cassette matches on llmcassette's defaults, else None."""
    # Asked for every request: the answer is kept with the cassette, for its ``match_on``.
    attributes = getattr(cassette, "__dict__", {})
    known = attributes.get(_MATCHER_ATTRIBUTE)
    match_on = attributes.get("_match_on")
    if known is not None and known[0] is match_on:
        return known[1]  # type: ignore[no-any-return]
    found = _body_matcher(cassette)
    if match_on is not None:
        attributes[_MATCHER_ATTRIBUTE] = (match_on, found)
    return found


def _body_matcher(cassette: Any) -> LlmBody | None:
    match_on = tuple(cassette._match_on)
    if (
        len(match_on) == 7
        and is_method_matcher(match_on[0])
        and match_on[1:6] == vcrpy_url_matchers()[1:]
        and isinstance(match_on[6], LlmBody)
    ):
        return match_on[6]
    return None


def _preferred(
    cassette: Any, positions: list[int], label: str | None, request: Any, bound: int | None
) -> list[int]:
    """``positions``, or only the one to play when two or more of them are unplayed: of the
    first ``_MOST_WEIGHED`` unplayed ones, those whose recorded request shares the most text
    with ``request``; of these, the first recorded by client ``bound``, else the earliest.

    Identical request keys can hide different requests: matching leaves out volatile values
    and ignored paths. A follow-up carries the answers its caller was served, word for word,
    so the recorded request sharing most of its text continues the recorded conversation
    those answers came from. Where the text does not choose, the live client's bound
    recorded client does (``clients``), then recorded order. With ``allow_playback_repeats``
    vcrpy plays the first match again, and so does this.
    """
    if len(positions) < 2 or cassette.allow_playback_repeats:
        return positions
    counts = cassette.play_counts
    data = cassette.data
    unplayed: list[int] = []
    for position in positions:
        if not counts[position] and session_of(data[position][1]) == label:
            unplayed.append(position)
            if len(unplayed) == _MOST_WEIGHED:
                break  # identical polls by the thousand: bounded work per request
    if len(unplayed) < 2:
        return positions  # alone, it is what the usual lookup plays: nothing to weigh
    best = unplayed
    incoming = _texts(request.body)
    if incoming:
        texts = cassette.__dict__.setdefault(_TEXTS_ATTRIBUTE, {})
        shared = [_shared(incoming, texts, data, position) for position in unplayed]
        most = max(shared)
        best = [position for position, count in zip(unplayed, shared, strict=True) if count == most]
    if bound is not None:
        for position in best:
            if client_of(data[position][1]) == bound:
                return [position]
    return best[:1]


def _shared(incoming: frozenset[str], texts: dict[int, frozenset[str]], data: Any, at: int) -> int:
    """How many of the incoming request's strings the recorded request at ``at`` has."""
    known = texts.get(at)
    if known is None:
        known = texts[at] = _texts(data[at][0].body)
    return len(incoming & known)


def _texts(body: Any) -> frozenset[str]:
    """Every string value in a JSON body (none when it is not JSON)."""
    try:
        payload = jsontext.loads_body(body or b"")
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(jsontext.strings_in(payload))


def decide(
    cassette: Any, request: Any, client: LiveClient | None = None
) -> Replay | Record | Refuse | None:
    """``Replay(response)``, ``Record(request)``, ``Refuse()``, or ``None`` to let vcrpy decide;
    ``client`` is the live client sending ``request``, when known."""
    matcher = body_matcher(cassette)
    others: tuple[Any, ...] | None = None  # the suite's own matchers beside llm_body
    if matcher is None:
        found = _beside_own_matchers(cassette)
        if found is None:
            return None
        matcher, others = found
    repeats = cassette.allow_playback_repeats
    if cassette.record_mode == RecordMode.ALL or not (cassette.rewound or repeats):
        if others is not None:
            return None
        # Nothing to look up (vcrpy's rule): the request is filtered once, as stored.
        filtered = cassette._before_record_request(request)
        if filtered is None:
            return None  # an ignored host: vcrpy lets it through
        return Refuse() if cassette.write_protected else Record(filtered)
    filtered, redactor = redaction_hook.unredacted_body(cassette._before_record_request, request)
    if filtered is None:
        return None
    if redactor is not None:
        # A live body that matches as it is holds no secret where matching looks (the
        # recorded one was redacted): only a request that does not match has its body
        # redacted, and is looked up again, as the cassette would store it.
        response = _replay(cassette, filtered, matcher.config, others, client, unredacted=True)
        if response is not None:
            return Replay(response)
        filtered = redaction_hook.redact(filtered, redactor)
    response = _replay(cassette, filtered, matcher.config, others, client, unredacted=False)
    if response is not None:
        return Replay(response)
    if others is not None:
        if matcher not in cassette._match_on:  # the suite's match_on leaves the body out
            with _LOCK:
                if strict_refuses(cassette, filtered, others, matcher.config, current_session()):
                    return Refuse()
        return None  # the rest is vcrpy's lookup, on the suite's matchers (and the body)
    if cassette.write_protected:
        # Not vcrpy's lookup: it would also play an interaction of another session.
        return Refuse()
    return Record(filtered)


def _beside_own_matchers(cassette: Any) -> tuple[LlmBody, tuple[Any, ...]] | None:
    """``llm_body`` and the other matchers of a ``match_on`` of the suite's own, when the
    cassette has vcrpy-recorded interactions to play in vcrpy's order on those; else None,
    and the request is vcrpy's to look up.

    ``match_on`` may hold ``llm_body`` beside matchers of the suite's own (pydantic-ai
    registers its own ``method``, ``host`` and ``path``), or leave the body out, as a suite
    written for vcrpy does: when it keeps vcrpy's URL matchers whole (the default list
    spelt out, a ``method`` matcher of its own in it), the body matcher configured for the
    cassette tells the drift, which vcrpy's lookup never compared. A narrower list (no
    ``query``, no ``host``) is a suite matching less on purpose, often for bodies that
    change on every run: its requests are vcrpy's alone.
    """
    data = cassette.data
    if not data or not is_legacy(data[0][0]):
        return None  # legacy interactions are loaded first: none when the first is not
    match_on = tuple(cassette._match_on)
    bodies = [matcher for matcher in match_on if isinstance(matcher, LlmBody)]
    if not bodies:
        if not set(vcrpy_url_matchers()[1:]) <= set(match_on):
            return None  # a narrower list than vcrpy's: the suite chose to match less
        configured = getattr(getattr(cassette, "_persister", None), "body_matcher", None)
        return None if configured is None else (configured, match_on)
    if len(bodies) != 1 or drift_mode(cassette) == "strict":
        return None  # strict: vcrpy's lookup compares the body with llm_body
    return bodies[0], tuple(matcher for matcher in match_on if matcher is not bodies[0])


def _replay(
    cassette: Any,
    filtered: Any,
    config: MatchConfig,
    others: tuple[Any, ...] | None,
    client: LiveClient | None,
    *,
    unredacted: bool,
) -> Any | None:
    """The recorded response to play for ``filtered``, counted as played; None if none.

    ``others``: the suite's own matchers beside ``llm_body`` (None: vcrpy's defaults, which
    the index keys on); with them only legacy interactions are looked up here.
    ``unredacted``: the body of ``filtered`` has not been redacted yet, so a legacy
    interaction whose body differs from it is left for the redacted lookup, which reports
    the drift without printing a secret.
    """
    repeats = cassette.allow_playback_repeats
    label = current_session()
    with _LOCK:
        data = cassette.data
        if others is None and _has_own(cassette):
            index = cassette.__dict__.get(_INDEX_ATTRIBUTE)
            if index is None:
                index = cassette.__dict__[_INDEX_ATTRIBUTE] = RequestIndex(config)
            bound = None if client is None else client.bound
            for positions in _candidates(cassette, index, filtered, config):
                if drift_mode(cassette) != "strict":
                    # A vcrpy cassette plays in vcrpy's order (``legacy_replay`` below), its
                    # bodies only checked: a later copy equal in body must not go first.
                    positions = [p for p in positions if not is_legacy(data[p][0])]
                positions = _preferred(cassette, positions, label, filtered, bound)
                for position in positions:
                    count = cassette.play_counts[position]
                    recorded_request, response = data[position]
                    if (count == 0 or repeats) and session_of(response) == label:
                        if count == 0 and position < cassette._loaded_count:
                            cassette._played_interactions.append((recorded_request, response))
                        cassette.play_counts[position] += 1
                        clients.played(client, client_of(response))
                        return response
        # vcrpy recorded legacy cassettes without the body: played as vcrpy would.
        matchers = vcrpy_url_matchers() if others is None else others
        return legacy_replay(cassette, filtered, matchers, config, label, only_equal=unredacted)


def _candidates(
    cassette: Any, index: RequestIndex, filtered: Any, config: MatchConfig
) -> Iterator[list[int]]:
    """The interactions whose request equals ``filtered`` by key; then, if none of those
    plays, those whose recorded placeholders ``filtered`` fills: a cassette takes out a
    credential everywhere once a call names it (a password a later tool call sends), and a
    live request, redacted on its own, still carries that value."""
    key = request_key(filtered, config)
    yield index.positions(cassette, key)
    matcher = LlmBody(config)
    data = cassette.data
    yield [
        position
        for position in index.with_placeholders(key)
        if not matcher.differences(filtered, data[position][0])
    ]


def _has_own(cassette: Any) -> bool:
    """Whether the cassette holds an interaction that is not legacy, or drift is strict
    (then legacy ones match with their bodies too): only then is the index consulted."""
    if drift_mode(cassette) == "strict":
        return True
    data = cassette.data
    known = cassette.__dict__.get(_OWN_ATTRIBUTE)
    if known is not None and known[0] == len(data):
        return bool(known[1])
    # Interactions are only ever appended: count from where the last answer stopped.
    start, found = known if known is not None else (0, False)
    found = found or any(not is_legacy(data[p][0]) for p in range(start, len(data)))
    cassette.__dict__[_OWN_ATTRIBUTE] = (len(data), found)
    return found
