"""Decide, for one incoming request, whether to replay (and what) or to record.

This is vcrpy's ``can_play_response_for`` / ``play_response`` / ``write_protected`` logic
with the linear scan replaced by ``RequestIndex``. It answers only when it can answer
exactly as vcrpy would: with a customised ``match_on`` it returns ``None`` and the caller
takes vcrpy's own path.

A request made in an ``llmcassette.session`` replays only interactions recorded in the same
session, and one made outside any session only interactions recorded outside any: each
session has its own order of identical requests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from vcr.record_mode import RecordMode

from llmcassette._vcr.drift import legacy_replay
from llmcassette.matching.index import RequestIndex, request_key
from llmcassette.matching.matchers import LlmBody
from llmcassette.sessions import current_session
from llmcassette.transport.recorded import session_of

_INDEX_ATTRIBUTE = "_llmcassette_index"
_MATCHER_ATTRIBUTE = "_llmcassette_body_matcher"
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


def _url_matchers() -> tuple[Any, ...]:
    from vcr import matchers as vcr_matchers

    names = ("method", "scheme", "host", "port", "path", "query")  # vcrpy's default match_on
    return tuple(getattr(vcr_matchers, name) for name in names)


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
    if len(match_on) == 7 and match_on[:6] == _url_matchers() and isinstance(match_on[6], LlmBody):
        return match_on[6]
    return None


def decide(cassette: Any, request: Any) -> Replay | Record | Refuse | None:
    """``Replay(response)``, ``Record(request)``, ``Refuse()``, or ``None`` to let vcrpy decide."""
    matcher = body_matcher(cassette)
    if matcher is None:
        return None
    filtered = cassette._before_record_request(request)
    if filtered is None:
        return None  # an ignored host: vcrpy lets it through
    repeats = cassette.allow_playback_repeats
    if cassette.record_mode != RecordMode.ALL and (cassette.rewound or repeats):
        key = request_key(filtered, matcher.config)
        label = current_session()
        with _LOCK:
            index = cassette.__dict__.get(_INDEX_ATTRIBUTE)
            if index is None:
                index = cassette.__dict__[_INDEX_ATTRIBUTE] = RequestIndex(matcher.config)
            for position in index.positions(cassette, key):
                count = cassette.play_counts[position]
                recorded_request, response = cassette.data[position]
                if (count == 0 or repeats) and session_of(response) == label:
                    if count == 0 and position < cassette._loaded_count:
                        cassette._played_interactions.append((recorded_request, response))
                    cassette.play_counts[position] += 1
                    return Replay(response)
            # vcrpy recorded legacy cassettes without the body: played as vcrpy would.
            legacy = legacy_replay(cassette, filtered, _url_matchers(), matcher.config, label)
            if legacy is not None:
                return Replay(legacy)
    if cassette.write_protected:
        # Not vcrpy's lookup: it would also play an interaction of another session.
        return Refuse()
    return Record(filtered)
