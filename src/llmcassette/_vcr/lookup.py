"""Decide, for one incoming request, whether to replay (and what) or to record.

This is vcrpy's ``can_play_response_for`` / ``play_response`` / ``write_protected`` logic
with the linear scan replaced by ``RequestIndex``. It answers only when it can answer
exactly as vcrpy would: with a customised ``match_on``, or when nothing can be replayed and
recording is not allowed (vcrpy then raises its "no match" error), it returns ``None`` and
the caller takes vcrpy's own path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vcr.record_mode import RecordMode

from llmcassette.matching.index import RequestIndex, request_key
from llmcassette.matching.matchers import LlmBody

_INDEX_ATTRIBUTE = "_llmcassette_index"
_MATCHER_ATTRIBUTE = "_llmcassette_body_matcher"


@dataclass(frozen=True)
class Replay:
    """Play this recorded response."""

    response: Any


@dataclass(frozen=True)
class Record:
    """Send the request and record it; ``request`` is it as the cassette will store it."""

    request: Any


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


def decide(cassette: Any, request: Any) -> Replay | Record | None:
    """``Replay(response)``, ``Record(request)``, or ``None`` to let vcrpy decide."""
    matcher = body_matcher(cassette)
    if matcher is None:
        return None
    filtered = cassette._before_record_request(request)
    if filtered is None:
        return None  # an ignored host: vcrpy lets it through
    index = cassette.__dict__.get(_INDEX_ATTRIBUTE)
    if index is None:
        index = cassette.__dict__[_INDEX_ATTRIBUTE] = RequestIndex(matcher.config)
    repeats = cassette.allow_playback_repeats
    if cassette.record_mode != RecordMode.ALL and (cassette.rewound or repeats):
        for position in index.positions(cassette, request_key(filtered, matcher.config)):
            count = cassette.play_counts[position]
            if count == 0 or repeats:
                recorded_request, response = cassette.data[position]
                if count == 0 and position < cassette._loaded_count:
                    cassette._played_interactions.append((recorded_request, response))
                cassette.play_counts[position] += 1
                return Replay(response)
    if cassette.write_protected:
        return None  # vcrpy raises its error, with the closest recorded requests
    return Record(filtered)
