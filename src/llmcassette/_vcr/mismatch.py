"""``CassetteMismatch``: a request the cassette cannot answer, with the fields that differ.

It subclasses vcrpy's ``CannotOverwriteExistingCassetteException`` so existing ``except``
clauses keep working. This module imports vcrpy, so ``llmcassette`` exposes the class lazily
(importing vcrpy while pytest loads plugins would stop pytest-recording from registering
``vcr.matchers`` for assertion rewriting).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from vcr.errors import CannotOverwriteExistingCassetteException

from llmcassette._vcr.drift import drift_mode
from llmcassette._vcr.lookup import body_matcher, is_method_matcher
from llmcassette._vcr.persister import (
    display_path,
    is_legacy,
    loaded_from,
    never_recorded,
    node_id_of,
    owned_count,
    shown_file,
    shown_for,
)
from llmcassette.errors import LlmCassetteError
from llmcassette.matching import report
from llmcassette.matching.jsondiff import Difference, Missing
from llmcassette.matching.matchers import LlmBody
from llmcassette.matching.normalize import MatchConfig
from llmcassette.sessions import current_session
from llmcassette.transport.recorded import session_of

# Mismatches (and fault errors) raised since the pytest plugin last cleared it: the plugin
# shows them in the report of a failing test even when an SDK caught the exception and
# raised its own. Outside pytest nobody clears it, so only the last RAISED_LIMIT are kept
# (each holds its cassette).
RAISED_LIMIT = 20
RAISED: deque[Exception] = deque(maxlen=RAISED_LIMIT)


class CassetteMismatch(LlmCassetteError, CannotOverwriteExistingCassetteException):  # type: ignore[misc]
    """No recorded interaction answers a request, and the record mode forbids recording it.

    ``reason`` is ``"no_match"``, ``"exhausted"`` (every matching interaction was played),
    ``"other_session"`` (the matching interactions were recorded in another
    ``llmcassette.session``, or outside any) or ``"cassette_not_found"``. ``call`` is which
    request of the cassette's use this was (1-based), ``path`` the cassette file,
    ``method``/``uri`` the request as redaction left it, ``candidates`` the recorded
    interactions closest first, each with its ``differences`` (``path``, ``recorded``,
    ``incoming``); ``differences`` are the closest candidate's. ``context`` is where the
    cassette is in use (``"pytest"``, ``"use_cassette"`` or ``"vcr"``); the message's hints
    give the commands for it, which name ``test`` (the pytest node id) when known.
    """

    def __init__(
        self,
        *,
        cassette: Any,
        failed_request: Any,
        reason: str,
        call: int,
        candidates: list[report.Candidate],
        context: report.Context,
        session: str | None = None,
        leave: report.LeaveOut | None = None,
        echoed: bool = False,
        test: str | None = None,
    ) -> None:
        self.cassette = cassette
        # The llmcassette.session the request was made in: its interactions rank first.
        self.session = session
        self.failed_request = failed_request
        self.similar_requests: list[Any] = []  # vcrpy's field; `candidates` says more
        self.reason = reason
        self.call = call
        self.method = str(failed_request.method)
        self.uri = str(failed_request.uri)
        self.path = display_path(cassette)
        self.candidates = candidates
        self.context = context
        self.test = test
        self.differences: tuple[Difference, ...] = candidates[0].differences if candidates else ()
        record_mode = getattr(cassette.record_mode, "value", cassette.record_mode)
        message = report.render(
            reason=reason,
            call=call,
            method=self.method,
            uri=self.uri,
            path=shown_file(cassette),
            recorded=candidates,
            record_mode=str(record_mode),
            context=context,
            named=[(file, shown_for(cassette, file)) for file, _ in loaded_from(cassette)],
            leave=leave,
            session=session,
            echoed=echoed,
            test=test,
        )
        if session is not None:
            message += (
                f"\n  session: the request was made in llmcassette.session {session!r}; "
                "its interactions are compared first"
            )
        Exception.__init__(self, message)

    def details(self) -> dict[str, Any]:
        """The error model, with each candidate's differences (a value absent on one side
        is None there, and ``recorded_present``/``incoming_present`` say so)."""
        closest = self.candidates[0] if self.candidates else None
        if self.differences:  # the value at ``path``: recorded, and sent instead
            first = _difference_dict(self.differences[0])
            expected, received = first["recorded"], first["incoming"]
        else:  # no field differs (all played, another session): the requests themselves
            expected = (
                f"#{closest.position} {closest.method} {closest.uri}"
                if closest is not None
                else None
            )
            received = f"{self.method} {self.uri}"
        return {
            "file": self.path,
            "path": self.differences[0].path if self.differences else None,
            "expected": expected,
            "received": received,
            "how_to_fix": report.how_to_fix(self.reason, self.context, self.test),
            "reason": self.reason,
            "call": self.call,
            "method": self.method,
            "uri": self.uri,
            "differences": [_difference_dict(d) for d in self.differences],
            "candidates": [
                {
                    "position": candidate.position,
                    "method": candidate.method,
                    "uri": candidate.uri,
                    "played": candidate.played,
                    "file": candidate.source[0] if candidate.source else self.path,
                    "differences": [_difference_dict(d) for d in candidate.differences],
                }
                for candidate in self.candidates
            ],
        }

    @classmethod
    def for_request(
        cls, cassette: Any, request: Any, call: int, context: report.Context
    ) -> CassetteMismatch:
        """Compare ``request`` with every recorded one and build the error (a miss only)."""
        filtered = cassette._before_record_request(request) or request
        session = current_session()
        ranked = candidates(cassette, filtered, session)
        leave = None
        echoed = False
        if ranked and ranked[0].differences:
            echoed = report.echoes_an_answer(filtered, ranked[0].differences[0])
            matcher = body_matcher(cassette)
            if not echoed:
                leave = report.leave_out_for(
                    filtered,
                    cassette.data[ranked[0].position - 1][0],
                    matcher.config if matcher is not None else MatchConfig(),
                    ranked[0].differences,
                )
        if never_recorded(cassette):
            reason = "cassette_not_found"
        elif ranked and not ranked[0].differences and ranked[0].session != session:
            reason = "other_session"
        elif (ranked and not ranked[0].differences) or _played_as_vcrpy_would(cassette, ranked):
            reason = "exhausted"
        else:
            reason = "no_match"
        error = cls(
            cassette=cassette,
            failed_request=filtered,
            reason=reason,
            call=call,
            candidates=ranked,
            context=context,
            session=session,
            leave=leave,
            echoed=echoed,
            test=node_id_of(cassette),
        )
        RAISED.append(error)
        return error


def _difference_dict(difference: Difference) -> dict[str, Any]:
    """A difference as JSON: its path and both values, None for an absent side."""
    recorded_present = not isinstance(difference.recorded, Missing)
    incoming_present = not isinstance(difference.incoming, Missing)
    return {
        "path": difference.path,
        "recorded": difference.recorded if recorded_present else None,
        "incoming": difference.incoming if incoming_present else None,
        "recorded_present": recorded_present,
        "incoming_present": incoming_present,
    }


def _sources(cassette: Any) -> dict[int, tuple[str, int]]:
    """For each interaction loaded from another test's cassette (named by the test): its
    index in the cassette, and that file with the interaction's number in it."""
    sources: dict[int, tuple[str, int]] = {}
    index = owned_count(cassette) or 0
    for file, count in loaded_from(cassette):
        for number in range(1, count + 1):
            sources[index] = (file, number)
            index += 1
    return sources


def _played_as_vcrpy_would(cassette: Any, ranked: list[report.Candidate]) -> bool:
    """Whether every interaction vcrpy's matching (method and URL) finds is a played legacy
    one. Unless ``drift`` is strict, legacy interactions replay that way, their body drift
    reported: the call is one more than the cassette recorded, whatever its body says."""
    if drift_mode(cassette) == "strict":
        return False
    same_url = [candidate for candidate in ranked if not candidate.outside_body]
    return bool(same_url) and all(
        candidate.played and is_legacy(cassette.data[candidate.position - 1][0])
        for candidate in same_url
    )


def candidates(cassette: Any, incoming: Any, session: str | None = None) -> list[report.Candidate]:
    """The cassette's recorded requests compared with ``incoming``, closest first; with a
    ``session``, the interactions recorded in it before any other."""
    matcher = body_matcher(cassette)
    config = matcher.config if matcher is not None else MatchConfig()
    sources = _sources(cassette)
    left_out = _left_out(cassette)
    ranked = [
        report.Candidate(
            position + 1,
            recorded.method,
            recorded.uri,
            _compared(report.compare(incoming, recorded, config), left_out),
            cassette.play_counts[position] > 0,
            sources.get(position),
            session_of(response),
        )
        for position, (recorded, response) in enumerate(cassette.data)
    ]
    ranked.sort(
        key=lambda candidate: (
            candidate.session != session,
            candidate.score,
            candidate.position,
        )
    )
    return ranked


_URL_PARTS = ("url.scheme", "url.host", "url.port", "url.path", "url.query")


def _left_out(cassette: Any) -> tuple[str, ...]:
    """The method and URL parts the cassette's ``match_on`` does not compare, as difference
    paths (``url.port``); none when it holds a matcher not known here, which may compare
    them. A ``match_on`` without ``port`` (a provider on another port) must not lead the
    mismatch with the port."""
    from vcr import matchers as vcr_matchers

    parts = {
        vcr_matchers.uri: _URL_PARTS,
        vcr_matchers.scheme: ("url.scheme",),
        vcr_matchers.host: ("url.host",),
        vcr_matchers.port: ("url.port",),
        vcr_matchers.path: ("url.path",),
        vcr_matchers.query: ("url.query",),
    }
    others = (vcr_matchers.body, vcr_matchers.raw_body, vcr_matchers.headers)
    compared: set[str] = set()
    for matcher in tuple(getattr(cassette, "_match_on", None) or ()):
        if is_method_matcher(matcher):
            compared.add("method")
        elif matcher in parts:
            compared.update(parts[matcher])
        elif not (isinstance(matcher, LlmBody) or matcher in others):
            return ()
    return tuple(part for part in ("method", *_URL_PARTS) if part not in compared)


def _compared(
    differences: tuple[Difference, ...], left_out: tuple[str, ...]
) -> tuple[Difference, ...]:
    """``differences`` without those in the parts ``match_on`` leaves out."""
    if not left_out:
        return differences
    return tuple(
        d
        for d in differences
        if not any(
            d.path == part or d.path.startswith((part + ".", part + "[")) for part in left_out
        )
    )
