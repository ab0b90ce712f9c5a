"""A replay clock a test reads instead of timing the replay."""

from __future__ import annotations


class ReplayClock:
    """Time that moves only when a replay waits: the waits a pace asks for, machine load aside."""

    def __init__(self) -> None:
        self.time = 0.0
        self.waits: list[float] = []

    def now(self) -> float:
        return self.time

    def wait(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.time += seconds

    async def wait_async(self, seconds: float) -> None:
        self.wait(seconds)
