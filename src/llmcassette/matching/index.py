"""Find a recorded interaction for a request in O(1), instead of vcrpy's scan of them all.

vcrpy runs every matcher against every recorded request for each incoming request (and
three times over), so replay is quadratic in the cassette size. With llmcassette's default
``match_on``, two requests match exactly when their *canonical keys* are equal: method,
scheme, host, port, path, the sorted query, the headers that choose API features
(``answer_headers``), and the body's canonical value. An index from
key to interactions answers in one lookup; vcrpy's own path (and its "no match" report)
still runs whenever the index has no answer, so behaviour is unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from llmcassette.matching.matchers import answer_headers, comparable_body, comparable_method
from llmcassette.matching.normalize import MatchConfig


def _canonical(value: Any) -> Hashable:
    # Tags keep True apart from 1 (Python treats them as equal), as the body matcher does.
    # Parsed JSON holds exact str, dict and list: tested first, the same keys come out faster
    # (the index keys every recorded request before the first replay). A str stands for
    # itself: every other value becomes a tuple, which never equals a str.
    kind = type(value)
    if kind is str:
        return str(value)  # the same object: str() of a str is the str itself
    if kind is dict:
        return ("object", tuple(sorted([(str(k), _canonical(v)) for k, v in value.items()])))
    if kind is list:
        return ("array", tuple([_canonical(item) for item in value]))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)  # 1 == 1.0 and hash(1) == hash(1.0): numbers by value
    if isinstance(value, dict):
        return ("object", tuple(sorted((str(k), _canonical(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if value is None:
        return ("null",)
    return (type(value).__name__, value)


def request_key(request: Any, config: MatchConfig) -> tuple[Hashable, ...]:
    """The key under which two requests match with llmcassette's default ``match_on``."""
    return (
        comparable_method(request),
        request.scheme,
        request.host,
        request.port,
        request.path,
        tuple(request.query),
        tuple(answer_headers(request).items()),
        _canonical(comparable_body(request, config)),
    )


class RequestIndex:
    """Recorded interactions of one cassette by request key, kept up to date as it grows."""

    def __init__(self, config: MatchConfig) -> None:
        self.config = config
        self._positions: dict[Hashable, list[int]] = {}
        # By the key without its body: those whose body holds a redaction placeholder.
        self._with_placeholders: dict[Hashable, list[int]] = {}
        self._indexed = 0

    def positions(self, cassette: Any, key: Hashable) -> list[int]:
        """Indexes into ``cassette.data`` of the interactions recorded under ``key``."""
        data = cassette.data
        for position in range(self._indexed, len(data)):
            recorded = data[position][0]
            recorded_key = request_key(recorded, self.config)
            self._positions.setdefault(recorded_key, []).append(position)
            body = getattr(recorded, "body_bytes", recorded.body)
            if isinstance(body, bytes) and b"<REDACTED:" in body:
                self._with_placeholders.setdefault(recorded_key[:-1], []).append(position)
        self._indexed = len(data)
        return self._positions.get(key, [])

    def with_placeholders(self, key: tuple[Hashable, ...]) -> list[int]:
        """The interactions recorded with ``key``'s method and URL whose bodies hold a
        redaction placeholder: a request that equals none may still fill one's
        placeholders (``LlmBody.differences``). Call ``positions`` first."""
        return self._with_placeholders.get(key[:-1], [])
