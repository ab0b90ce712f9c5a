"""The time a replay reads and the waits its pace asks for.

Every wait of a replay (before the headers, between events) goes through these functions,
called as ``clock.wait(...)``: a test replaces them to see the waits a pace asks for
without timing anything.
"""

from __future__ import annotations

import time


def now() -> float:
    """Seconds on a monotonic clock."""
    return time.monotonic()


def wait(seconds: float) -> None:
    """Block the calling thread for ``seconds``."""
    time.sleep(seconds)


async def wait_async(seconds: float) -> None:
    """Wait ``seconds`` without blocking the event loop (asyncio or trio); cancellable."""
    import anyio  # httpx and httpx2 depend on it; imported when a paced async replay waits

    await anyio.sleep(seconds)
