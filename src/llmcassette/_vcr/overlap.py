"""Warn while recording when replay will not be able to tell concurrent callers apart.

Replay gives identical requests (the same request key, in the same ``llmcassette.session``
or outside any) their recorded answers in arrival order. That is right for one caller that
asks twice, but not for two callers whose identical requests were in flight at the same
time and got different answers: which one gets which then depends on scheduling. Each
recorded request is noted when its response has been read in full; one that overlapped an
identical request with another answer warns once per request key and cassette. Only
requests that overlapped in time are compared, so sequential ones cost no request key.
"""

from __future__ import annotations

import re
import threading
import time
from bisect import bisect_right
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from llmcassette._vcr import deferred, lookup
from llmcassette.cassette import jsontext
from llmcassette.cassette.compression import decode_content
from llmcassette.errors import ConcurrentIdenticalRequestsWarning
from llmcassette.matching.index import request_key

_FLIGHTS = "_llmcassette_flights"
_LOCK = threading.Lock()
_PROMPT_CHARACTERS = 60


@dataclass(slots=True, eq=False)
class _Recorded:
    """A recorded request and its answer, as the flights compare them."""

    session: str | None
    request: Any
    config: Any  # the matcher's MatchConfig
    answer: tuple[int, bytes, dict[str, list[str]]]  # status, body as received, headers
    client: int | None
    digest: int = 0  # of the status and body
    key: Hashable = None  # computed when first compared
    content: int | None = None  # computed when first compared (``content_digest``)

    def __post_init__(self) -> None:
        self.digest = hash(self.answer[:2])

    def match_key(self) -> Hashable:
        if self.key is None:
            self.key = (self.session, request_key(self.request, self.config))
        return self.key

    def content_digest(self) -> int:
        """The answer decoded (gzip makes every byte differ) and without the fields a
        provider sets anew for every answer."""
        if self.content is None:
            status, body, headers = self.answer
            body = decode_content(body, headers)[0]
            self.content = hash((status, _PER_ANSWER.sub(b"", body)))
        return self.content

    def answered_otherwise(self, other: _Recorded) -> bool:
        """Whether two answers differ in more than what every answer has of its own."""
        return other.digest != self.digest and other.content_digest() != self.content_digest()


class _Flights:
    """The recorded requests of one cassette in the order their answers ended.

    ``ends`` is sorted (each end is taken under ``_LOCK``), so the requests that ended after
    a given start are a suffix of it, found by bisection. A request's key is computed only
    when it is compared with another: sequential requests never overlap, and never need one.
    """

    __slots__ = ("ends", "entries", "warned")

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.entries: list[_Recorded] = []
        self.warned: set[Hashable] = set()


# The fields a provider sets anew for every answer (its id, its time, the build that served
# it): answers that differ only there give a caller the same content in either order.
_PER_ANSWER = re.compile(
    rb'"(?:id|created|created_at|system_fingerprint|responseId|response_id|request_id)"'
    rb'\s*:\s*(?:"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)'
)


def note(
    cassette: Any,
    request: Any,
    session: str | None,
    started: float,
    answer: tuple[int, bytes, dict[str, list[str]]],
    client: int | None = None,
) -> None:
    """A recorded request (as stored: redacted) sent at ``started`` (``time.monotonic()``)
    by the cassette's ``client`` (its number, None when not known) has got its whole
    ``answer`` (status, body as received and headers) now."""
    matcher = lookup.body_matcher(cassette)
    if matcher is None or request is None:
        return
    # The answer is held (the cassette holds its body already); compared by digest.
    entry = _Recorded(session, request, matcher.config, answer, client)
    clashing: list[_Recorded] = []
    with _LOCK:
        flights = cassette.__dict__.get(_FLIGHTS)
        if flights is None:
            flights = cassette.__dict__[_FLIGHTS] = _Flights()
        ended = time.monotonic()
        # The requests whose answers ended after this one was sent: it overlapped them.
        overlapped = flights.entries[bisect_right(flights.ends, started) :]
        if overlapped:
            key = entry.match_key()
            if key not in flights.warned:
                clashing = [
                    other
                    for other in overlapped
                    if other.match_key() == key and entry.answered_otherwise(other)
                ]
            if clashing:
                flights.warned.add(key)
        flights.ends.append(ended)
        flights.entries.append(entry)
    if clashing:
        # Callers with clients of their own are told apart by client on replay (bound by
        # the order of each client's first call), not by arrival order.
        clients = {other.client for other in clashing}
        by_client = client is not None and None not in clients and client not in clients
        warning = ConcurrentIdenticalRequestsWarning(
            request.method, request.path, prompt_start(request.body), session, by_client
        )
        deferred.warn(cassette, warning, stacklevel=3)


def prompt_start(body: bytes | None) -> str:
    """The start of a request's last message (or of its body, when it has none)."""
    try:
        payload = jsontext.loads_body(body or b"")
    except ValueError:
        payload = None
    text = None
    if isinstance(payload, dict):
        for name in ("messages", "input", "contents", "prompt"):
            value = payload.get(name)
            if isinstance(value, list) and value:
                value = value[-1]
            text = _text(value)
            if text:
                break
    if not text:
        text = (body or b"").decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= _PROMPT_CHARACTERS else text[: _PROMPT_CHARACTERS - 3] + "..."


def _text(value: Any) -> str:
    """The text of a message: a string, its ``content`` / ``text`` / ``parts``, joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(filter(None, map(_text, value)))
    if isinstance(value, dict):
        for name in ("content", "text", "parts"):
            if name in value:
                return _text(value[name])
    return ""
