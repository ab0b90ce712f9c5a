"""State shared between the test thread and the server threads."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StreamBehaviour:
    """How answers are delivered, streamed ones (SSE and NDJSON) above all; mutable
    between requests."""

    #: Seconds slept before any answer, streamed or not, is sent: a model's time to answer,
    #: so that concurrent calls overlap as they do against a real provider.
    latency: float = 0.0

    #: Seconds slept before each streamed event after the first.
    event_delay: float = 0.0
    #: Seconds slept before the first event (the headers have already been sent).
    first_event_delay: float = 0.0
    #: Send only this many events, then drop the connection without finishing the body.
    cut_after: int | None = None
    #: Keep sending content events until the client disconnects or the provider stops.
    endless: bool = False
    #: Pad or merge the answer so that it streams as exactly this many content events.
    events: int | None = None


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the provider received it."""

    method: str
    path: str
    #: The raw query string, without the leading "?".
    query: str
    #: Header names are lower-cased; repeated headers are joined with ", ".
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class QueuedError:
    """An error answer waiting for the next request."""

    status: int
    retry_after: float | None = None
    body: dict[str, Any] | None = None


@dataclass
class ProviderState:
    """Everything a request handler reads or records; guarded by `lock`."""

    requests: list[ReceivedRequest] = field(default_factory=list)
    behaviour: StreamBehaviour = field(default_factory=StreamBehaviour)
    errors: deque[QueuedError] = field(default_factory=deque)
    active_streams: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, request: ReceivedRequest) -> None:
        """Append a received request."""
        with self.lock:
            self.requests.append(request)

    def take_error(self) -> QueuedError | None:
        """Pop the next queued error, if any."""
        with self.lock:
            return self.errors.popleft() if self.errors else None

    def snapshot(self) -> StreamBehaviour:
        """A copy of the behaviour, so one response is not affected by later changes."""
        with self.lock:
            return dataclasses.replace(self.behaviour)

    def stream_delta(self, change: int) -> None:
        """Count streamed responses in progress."""
        with self.lock:
            self.active_streams += change
