"""Replay a recorded response as the stream it was: one chunk per event, at a chosen pace.

A stream that broke while recording (the provider dropped the connection) breaks again
at the same place on replay, with the client library's own exception.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from llmcassette import _eventstream as wire
from llmcassette.cassette import events, eventstream
from llmcassette.errors import IncompleteStreamError, IncompleteStreamWarning
from llmcassette.transport import clock, integrity
from llmcassette.transport.pace import Pace
from llmcassette.transport.recorded import META_KEY, event_times_of


@dataclass(frozen=True)
class Hang:
    """Stop after the delivered events until the caller closes or cancels, or times out."""

    marker: str | None
    timeout: float | None
    timeout_error: BaseException


@dataclass(frozen=True)
class Shape:
    """How a replayed body is delivered: its pieces, their times, and how it ends."""

    pieces: list[bytes]
    #: Seconds after the headers for each piece (None: as fast as the pace says).
    times: list[float] | None
    #: Raised after the last piece (None: the body ends normally).
    failure: BaseException | None
    hang: Hang | None = None
    #: ``times`` are set by the fault (``latency``), not recorded: the pace does not scale them.
    fixed_times: bool = False
    #: The new content-length when a placeholder or replacement changed a plain body.
    content_length: int | None = None


def event_pieces(response: Mapping[str, Any]) -> tuple[list[bytes], list[float] | None]:
    """The recorded body cut at event boundaries, with each event's recorded time if known."""
    body = response["body"]["string"] or b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    meta = response.get(META_KEY) or {}
    kind = meta.get("stream")
    if kind is None:
        return [body], None
    if kind == eventstream.KIND:  # Bedrock: one binary frame per chunk, as it was sent
        frames = wire.split_frames(body)
        times = event_times_of(meta)
        return frames, times if times is not None and len(times) == len(frames) else None
    try:
        texts = events.split_events(kind, body.decode("utf-8"))
    except UnicodeDecodeError:
        return [body], None
    times = event_times_of(meta)
    if times is not None and len(times) != len(texts):
        times = None
    return [text.encode("utf-8") for text in texts], times


class _Plan:
    """What a replayed stream delivers and when."""

    def __init__(
        self,
        pieces: list[bytes],
        times: list[float] | None,
        pace: Pace,
        started: float,
        failure: BaseException | None,
        hang: Hang | None = None,
        fixed_times: bool = False,
        past_the_end: Callable[[], None] | None = None,
    ) -> None:
        self.pieces = pieces
        self.times = times if times is not None and (fixed_times or not pace.instant) else None
        self.factor = 1.0 if fixed_times else pace.factor
        self.started = started
        self.failure = failure
        self.hang = hang
        # Called when the caller reads on after the last recorded piece of a stream the
        # code stopped reading when it was recorded (``stopped_reading``).
        self.past_the_end = past_the_end
        self.closed = threading.Event()

    def finish(self) -> None:
        """After the last piece: what the recording says comes next."""
        if self.past_the_end is not None:
            self.past_the_end()
        if self.failure is not None:
            raise self.failure

    def touch_marker(self) -> None:
        """Tell a waiting test that the hang has begun (the prefix was delivered)."""
        if self.hang is not None and self.hang.marker:
            Path(self.hang.marker).parent.mkdir(parents=True, exist_ok=True)
            Path(self.hang.marker).touch()

    def delay_before(self, index: int) -> float:
        if self.times is None:
            return 0.0
        return self.started + self.times[index] * self.factor - clock.now()


@cache
def _sync_class(base: type) -> type:
    class ReplayStream(base):  # type: ignore[misc]
        def __init__(self, plan: _Plan) -> None:
            self._plan = plan

        def __iter__(self) -> Iterator[bytes]:
            plan = self._plan
            for index, piece in enumerate(plan.pieces):
                delay = plan.delay_before(index)
                if delay > 0:
                    clock.wait(delay)
                yield piece
            if plan.hang is not None:
                plan.touch_marker()
                # Until the caller closes the response (from another thread) or the read
                # timeout a real silent server would run into expires.
                if not plan.closed.wait(plan.hang.timeout):
                    raise plan.hang.timeout_error
                return
            plan.finish()

        def close(self) -> None:
            self._plan.closed.set()

    return ReplayStream


@cache
def _async_class(base: type) -> type:
    class ReplayStream(base):  # type: ignore[misc]
        def __init__(self, plan: _Plan) -> None:
            self._plan = plan

        async def __aiter__(self) -> AsyncIterator[bytes]:
            plan = self._plan
            for index, piece in enumerate(plan.pieces):
                delay = plan.delay_before(index)
                if delay > 0:
                    await clock.wait_async(delay)
                yield piece
            if plan.hang is not None:
                import anyio

                plan.touch_marker()
                # Until the task is cancelled or the read timeout expires.
                try:
                    with anyio.fail_after(plan.hang.timeout):
                        await anyio.sleep_forever()
                except TimeoutError:
                    raise plan.hang.timeout_error from None
            plan.finish()

        async def aclose(self) -> None:
            self._plan.closed.set()

    return ReplayStream


def recorded_failure(
    library: Any, response: Mapping[str, Any], request: Any
) -> BaseException | None:
    """The exception a stream that broke while it was recorded raises again on replay."""
    end = (response.get(META_KEY) or {}).get("end_extra") or {}
    error = end.get("error")
    if not error:
        return None
    exception_type = getattr(library, str(error), None)
    if not (
        isinstance(exception_type, type) and issubclass(exception_type, library.TransportError)
    ):
        exception_type = library.RemoteProtocolError
    message = f"the stream broke here when it was recorded ({error}); replayed from the cassette"
    failure: BaseException = exception_type(message, request=request)
    return failure


def stopped_reading(response: Mapping[str, Any]) -> bool:
    """Whether the code stopped reading this response while it was recorded (cut short
    with no error and no missing ending)."""
    return integrity.stopped_reading((response.get(META_KEY) or {}).get("end_extra"))


def check_integrity(
    response: Mapping[str, Any], uri: Callable[[], str], policy: str, sent_to: str | None = None
) -> IncompleteStreamWarning | None:
    """The warning to give for replaying a stream that was cut short without being marked
    so (``IncompleteStreamError`` when ``policy`` refuses it), None when there is nothing
    to say.

    Streams llmcassette recorded carry ``incomplete`` on their end line and were reported
    when recorded; this catches cassettes from elsewhere (converted, edited by hand).
    ``uri`` gives the request's URI as a message may show it (redacted), when one is needed;
    ``sent_to`` is the URI as sent, which only tells providers that end alike apart.
    """
    meta = response.get(META_KEY) or {}
    kind = meta.get("stream")
    end = meta.get("end_extra") or {}
    if policy == "ignore" or kind is None or "incomplete" in end or end.get("cut_short"):
        return None
    if meta.get("integrity_checked"):
        return None
    meta["integrity_checked"] = True  # shared by vcrpy's copies: one report per interaction
    body = response["body"]["string"] or b""
    raw = body if isinstance(body, bytes) else body.encode()
    problem = integrity.missing_terminator(kind, raw, sent_to)
    if problem is None:
        return None
    if policy == "error":
        raise IncompleteStreamError(uri(), f"the cassette holds {problem}")
    return IncompleteStreamWarning(f"{uri()}: replaying {problem}")


def replay_response(
    library: Any,
    response: Mapping[str, Any],
    request: Any,
    pace: Pace,
    *,
    is_async: bool,
    shape: Shape | None = None,
    past_the_end: Callable[[], None] | None = None,
    sent_at: float | None = None,
) -> Any:
    """Build the ``library.Response`` (httpx or httpx2) that replays a recorded response.

    ``shape`` (from a fault) replaces the recorded events, their times and the ending.
    ``past_the_end`` is called when the caller reads on after the last recorded piece.
    ``sent_at`` is when the request was sent (``clock.now()``, before the wait for the
    headers): recorded event times count from the request, not from the headers.
    """
    after_headers = shape is not None and shape.fixed_times
    started = clock.now() if sent_at is None or after_headers else sent_at
    if shape is None:
        pieces, times = event_pieces(response)
        failure = recorded_failure(library, response, request)
        plan = _Plan(pieces, times, pace, started, failure, past_the_end=past_the_end)
    else:
        plan = _Plan(
            shape.pieces, shape.times, pace, started, shape.failure, shape.hang, shape.fixed_times
        )
    stream_class = (
        _async_class(library.AsyncByteStream) if is_async else _sync_class(library.SyncByteStream)
    )
    message = response["status"].get("message")
    headers = [(name, value) for name, values in response["headers"].items() for value in values]
    if shape is not None and shape.content_length is not None:
        headers = [
            (name, str(shape.content_length) if name.lower() == "content-length" else value)
            for name, value in headers
        ]
    return library.Response(
        response["status"]["code"],
        headers=headers,
        stream=stream_class(plan),
        extensions={"reason_phrase": message.encode("ascii", "replace")} if message else None,
    )


def headers_delay(response: Mapping[str, Any], pace: Pace) -> float:
    """How long to wait before the response headers, under ``pace``."""
    if pace.instant:
        return 0.0
    extra = (response.get(META_KEY) or {}).get("response_extra") or {}
    seconds = extra.get("t")
    return float(seconds) * pace.factor if isinstance(seconds, (int, float)) else 0.0
