"""How fast a replayed stream delivers its events."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pace:
    """``factor`` scales recorded delays: 0 is instant, 1 is as recorded, 0.1 ten times faster."""

    factor: float = 0.0

    @classmethod
    def parse(cls, value: object) -> Pace:
        """Accept ``"instant"``, ``"recorded"``, a number (a scale of the recorded delays) or a Pace."""
        if isinstance(value, Pace):
            return value
        if value is None or value == "instant":
            return cls(0.0)
        if value == "recorded":
            return cls(1.0)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return cls(float(value))
        raise ValueError(
            f"pace must be 'instant', 'recorded' or a number >= 0 (a scale of the recorded "
            f"delays, e.g. 0.1), not {value!r}"
        )

    @property
    def instant(self) -> bool:
        """True when no delay is applied at all."""
        return self.factor == 0.0
