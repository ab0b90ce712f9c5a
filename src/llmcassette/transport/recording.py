"""Pass-through recording: the caller gets every chunk the moment it arrives.

The wrapped stream notes each chunk's arrival time and, once the stream ends, is closed
early, or fails, hands everything that was delivered to a callback exactly once.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from functools import cache
from typing import Any

# (chunks as (seconds since the request, bytes), how it ended) -> None
Finish = Callable[[list[tuple[float, bytes]], "Ending"], None]


class Ending:
    """How a recorded stream ended: completely, closed early by the caller, or broken."""

    def __init__(self, complete: bool, error: BaseException | None = None) -> None:
        self.complete = complete
        self.error = error

    @property
    def error_name(self) -> str | None:
        """The exception class name of a broken stream (``RemoteProtocolError``...)."""
        return type(self.error).__name__ if self.error is not None else None


class _Recorder:
    def __init__(self, started: float, finish: Finish) -> None:
        self._started = started
        self._finish = finish
        self.chunks: list[tuple[float, bytes]] = []
        self._done = False

    def note(self, chunk: bytes) -> None:
        self.chunks.append((time.monotonic() - self._started, bytes(chunk)))

    def done(self, ending: Ending) -> None:
        if not self._done:
            self._done = True
            self._finish(self.chunks, ending)


def _ending_for(error: BaseException) -> Ending:
    # Cancellation and interrupts are the caller stopping, not the provider failing.
    return Ending(complete=False, error=error if isinstance(error, Exception) else None)


@cache
def _sync_class(base: type) -> type:
    class RecordingStream(base):  # type: ignore[misc]
        def __init__(self, inner: Any, started: float, finish: Finish) -> None:
            self._inner = inner
            self._recorder = _Recorder(started, finish)

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._inner:
                    self._recorder.note(chunk)
                    yield chunk
            except BaseException as error:
                self._recorder.done(_ending_for(error))
                raise
            self._recorder.done(Ending(complete=True))

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._recorder.done(Ending(complete=False))

    return RecordingStream


@cache
def _async_class(base: type) -> type:
    class RecordingStream(base):  # type: ignore[misc]
        def __init__(self, inner: Any, started: float, finish: Finish) -> None:
            self._inner = inner
            self._recorder = _Recorder(started, finish)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._inner:
                    self._recorder.note(chunk)
                    yield chunk
            except BaseException as error:
                self._recorder.done(_ending_for(error))
                raise
            self._recorder.done(Ending(complete=True))

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._recorder.done(Ending(complete=False))

    return RecordingStream


def recording_stream(
    library: Any, inner: Any, started: float, finish: Finish, *, is_async: bool
) -> Any:
    """A byte stream of ``library`` (httpx or httpx2) that records ``inner`` as it is read."""
    if is_async:
        return _async_class(library.AsyncByteStream)(inner, started, finish)
    return _sync_class(library.SyncByteStream)(inner, started, finish)
