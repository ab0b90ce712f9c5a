"""Requests SDKs make for themselves, which a cassette neither records nor answers.

Two kinds, both sent whenever the SDK's own schedule says, not by the code under test, and
both tolerated when they fail:

- litellm's model price list (3 MB of JSON from GitHub), which litellm and DSPy fetch once per
  process, inside whichever test first calls a model: recorded, it made that cassette 3 MB
  larger, and replaying the tests in another order (``-k``, pytest-xdist) left it unplayed
  in one cassette and missing from another;
- tracing and telemetry uploads (LangSmith, OpenTelemetry exporters, Langfuse, PostHog,
  Sentry, Agno), sent from background threads: recorded when a batch happened to leave during a
  test, they never match again (their bodies hold timestamps and ids) and fail the replay
  as unplayed (LangChain's own suites had to ignore LangSmith's host for it).

Such requests go out as if no cassette were in use (vcrpy's ignored requests): with no
network the SDK falls back to its bundled price list, and exporters drop or retry what they
could not send, as they do without a cassette.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from llmcassette._vcr.redaction_hook import run_hooks


@dataclass(frozen=True)
class Housekeeping:
    """Requests of one kind: any of ``methods``, to a host ending in one of ``hosts`` (any
    host when empty), on a path that ``path`` matches at its end (any path when None)."""

    name: str
    methods: tuple[str, ...]
    hosts: tuple[str, ...] = ()
    path: re.Pattern[str] | None = None

    def matches(self, method: str, host: str, path: str) -> bool:
        """Whether a request is of this kind."""
        return (
            method in self.methods
            and (not self.hosts or host.endswith(self.hosts))
            and (self.path is None or self.path.search(path) is not None)
        )


_UPLOAD = ("POST", "PATCH", "PUT")
# LangSmith's tracing: GET /info (its batch settings), then POST /runs, /runs/batch,
# /runs/multipart and PATCH /runs/<id>.
_LANGSMITH_TRACING = re.compile(r"/(?:info|runs(?:/[^/]+)?)$")

#: What llmcassette never records (docs/recording.md lists them for users).
HOUSEKEEPING = (
    Housekeeping(
        "litellm's model price list",
        ("GET",),
        path=re.compile(r"/model_prices_and_context_window\.json$"),
    ),
    # OTLP over HTTP: Logfire, Langfuse, Phoenix, Traceloop, CrewAI's telemetry, any collector.
    Housekeeping("OpenTelemetry export", _UPLOAD, path=re.compile(r"/v1/(?:traces|metrics|logs)$")),
    Housekeeping(
        "LangSmith tracing",
        ("GET", *_UPLOAD),
        hosts=("smith.langchain.com",),
        path=_LANGSMITH_TRACING,
    ),
    Housekeeping("Langfuse ingestion", _UPLOAD, path=re.compile(r"/api/public/ingestion$")),
    Housekeeping("PostHog analytics", ("GET", *_UPLOAD), hosts=("posthog.com",)),
    # Agno's run, eval and AgentOS telemetry: a new run_id, session_id and SDK version each run.
    Housekeeping("Agno telemetry", _UPLOAD, hosts=("agno.com",), path=re.compile(r"/telemetry/")),
    Housekeeping(
        "Sentry events", _UPLOAD, hosts=(".sentry.io",), path=re.compile(r"/(?:envelope|store)/$")
    ),
)

#: Environment variables that move a kind elsewhere: the price list's URL (the whole URL),
#: LangSmith's API (its tracing below it).
_MOVED: dict[str, re.Pattern[str] | None] = {
    "LITELLM_MODEL_COST_MAP_URL": None,
    "LANGSMITH_ENDPOINT": _LANGSMITH_TRACING,
    "LANGCHAIN_ENDPOINT": _LANGSMITH_TRACING,
}

#: Where the environment moved them: ``(url, None)`` for a whole URL, ``(base, pattern)`` for
#: the paths below a base URL.
Moved = tuple[tuple[str, re.Pattern[str] | None], ...]


def moved_by_environment() -> Moved:
    """What the environment says now; read once per cassette (reading it costs more than the
    rest of a request's check)."""
    found = []
    for variable, below in _MOVED.items():
        url = os.environ.get(variable)
        if url:
            found.append((url if below is None else url.rstrip("/") + "/", below))
    return tuple(found)


@functools.lru_cache(maxsize=512)
def is_housekeeping(method: str, uri: str, moved: Moved = ()) -> bool:
    """Whether a request is one an SDK makes for itself, not for the code under test;
    ``moved`` is where the environment moved some (``moved_by_environment``).

    Asked of every request sent and every interaction loaded, mostly of the same few URLs:
    the answers are kept (the rules are fixed; ``moved`` is part of the question)."""
    url = urlsplit(uri)
    method = method.upper()
    host, path = url.hostname or "", url.path
    if any(kind.matches(method, host, path) for kind in HOUSEKEEPING):
        return True
    for where, below in moved:
        if below is None and uri == where:
            return True
        if below is not None and uri.startswith(where) and below.search(path) is not None:
            return True
    return False


class SkipHousekeeping:
    """A ``before_record_request`` that drops housekeeping requests (vcrpy then neither
    records nor answers them), then runs the user's hook."""

    def __init__(self, user_hook: Any = None) -> None:
        self.user_hook = user_hook
        self.moved = moved_by_environment()

    def __call__(self, request: Any) -> Any:
        if is_housekeeping(request.method, request.uri, self.moved):
            return None
        return run_hooks(self.user_hook, request)
