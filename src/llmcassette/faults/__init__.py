"""Faults on top of recorded cassettes: test retry, error and cancellation paths.

Build a fault with one of the functions below and either schedule it for the next calls
(``schedule(cassette, ...)``, the ``llm_faults`` pytest fixture or marker), or place it on
recorded interactions by index with an overrides sidecar ``<cassette>.overrides.json``
(or the ``overrides`` option). See docs/faults.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmcassette.errors import OverridesError
from llmcassette.faults.model import (
    CUT_ENDINGS,
    FAILURES,
    Fault,
    FieldError,
    Overrides,
    fault_from_fields,
)
from llmcassette.faults.scheduled import ScheduledFaults, scheduled_on

__all__ = [
    "CUT_ENDINGS",
    "FAILURES",
    "Fault",
    "Overrides",
    "ScheduledFaults",
    "cut_stream",
    "hang",
    "http_error",
    "latency",
    "replace_text",
    "schedule",
    "scheduled_on",
    "transport_error",
]


def http_error(
    status: int = 429,
    *,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
) -> Fault:
    """An HTTP error response instead of the answer (the provider's error JSON by default).

    ``retry_after`` sets the ``retry-after`` header the SDKs' retry logic reads.
    """
    values: dict[str, Any] = {"status": status, "headers": dict(headers or {}), "body": body}
    if retry_after is not None:
        values["headers"].setdefault("retry-after", _number(retry_after))
    return _build(values)


def transport_error(kind: str = "connect_error") -> Fault:
    """A transport failure before any response, as the client library's own exception.

    ``kind``: ``connect_error`` (refused), ``connect_timeout``, ``read_timeout``,
    ``read_error`` (reset) or ``disconnect`` (closed without a response).
    """
    return _build({"fail": kind})


def cut_stream(after: int, *, then: str = "error") -> Fault:
    """Deliver the first ``after`` recorded events, then break the stream.

    ``then``: ``"error"`` (the connection drops mid-body: ``RemoteProtocolError``),
    ``"reset"`` (``ReadError``) or ``"end"`` (the body ends without its terminator).
    """
    return _build({"cut_after": after, "cut": then})


def hang(after: int = 0, *, marker: str | None = None) -> Fault:
    """Deliver ``after`` events, then wait until the caller cancels, closes or times out.

    ``marker``: a file touched once the events were delivered, so a test can cancel at a
    known point. The request's read timeout (if any) raises the client's ``ReadTimeout``.
    """
    return _build({"hang_after": after, "marker": marker})


def latency(before_headers: float = 0.0, between_events: float | None = None) -> Fault:
    """Wait ``before_headers`` seconds before the response, and ``between_events`` between events."""
    return _build({"delay": before_headers, "event_delay": between_events})


def replace_text(replacements: Mapping[str, str]) -> Fault:
    """Rewrite recorded response text, e.g. a recorded id into ``{{fromRequest:...}}``."""
    return _build({"replace": dict(replacements)})


def schedule(cassette: Any, *faults: Fault) -> ScheduledFaults:
    """Apply ``faults`` to the next calls made through ``cassette``, one call each, in order."""
    queue = scheduled_on(cassette, create=True)
    assert queue is not None
    queue.add(*faults)
    return queue


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _build(values: Mapping[str, Any]) -> Fault:
    try:
        return fault_from_fields(values)
    except FieldError as problem:
        raise OverridesError("fault", None, problem.field, problem.problem, problem.hint) from None
