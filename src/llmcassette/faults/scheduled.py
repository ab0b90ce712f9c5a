"""Faults scheduled for the next calls made through a cassette in use.

The queue is kept on the cassette object itself, so ``faults.schedule(cassette, ...)``
needs nothing from vcrpy; ``llmcassette._vcr.fault_plan`` takes from it as calls arrive.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from llmcassette.faults.model import Fault

_ATTRIBUTE = "_llmcassette_scheduled_faults"


class ScheduledFaults:
    """The faults still to apply, in order, and how many were ever scheduled."""

    def __init__(self) -> None:
        self.pending: deque[Fault] = deque()
        self.count = 0

    def add(self, *faults: Fault) -> None:
        """Apply ``faults`` to the next calls, one call each, in order."""
        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(
                    f"schedule() takes faults built by llmcassette.faults (http_error, "
                    f"transport_error, cut_stream, hang, latency, replace_text), not {fault!r}"
                )
        self.pending.extend(faults)
        self.count += len(faults)

    def take(self) -> tuple[Fault, str] | None:
        """The next fault and its label (``scheduled fault #2``), or None when none is left."""
        if not self.pending:
            return None
        fault = self.pending.popleft()
        return fault, f"scheduled fault #{self.count - len(self.pending)}"

    def unused(self) -> list[str]:
        """What each fault no call used would have done."""
        return [fault.describe() for fault in self.pending]


def scheduled_on(cassette: Any, *, create: bool = False) -> ScheduledFaults | None:
    """The faults scheduled on ``cassette`` (an empty queue first when ``create``)."""
    found = cassette.__dict__.get(_ATTRIBUTE)
    if found is None and create:
        found = cassette.__dict__[_ATTRIBUTE] = ScheduledFaults()
    return found  # type: ignore[no-any-return]
