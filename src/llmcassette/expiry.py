"""Cassette expiry: how old a cassette is, and what happens once it is older than allowed.

The age is measured from the header's ``created_at``. ``max_age`` comes from a test's
``vcr_config``/marker, a ``use_cassette``/``configure`` argument, or ``[tool.llmcassette]``
in the project's pyproject.toml; ``expired`` says what an expired cassette does:
``"warn"``, ``"fail"`` (``CassetteExpiredError``) or ``"rerecord"``.
"""

from __future__ import annotations

import datetime
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import CassetteExpiredError, CassetteExpiredWarning, LlmCassetteError

EXPIRED_ACTIONS = ("warn", "fail", "rerecord")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


class ExpiryConfigError(LlmCassetteError, ValueError):
    """``max_age`` or ``expired`` has a value llmcassette does not understand."""


def parse_age(value: str | float | datetime.timedelta) -> float:
    """Seconds in ``value``: a number of seconds, a ``timedelta``, or ``"30d"``/``"12h"``...

    Units: ``s``, ``m`` (minutes), ``h``, ``d``, ``w``; a bare number is seconds.
    """
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise ExpiryConfigError(f"max_age must be a duration such as '30d', not {value!r}")
    elif isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (match := _AGE.match(value)):
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    else:
        raise ExpiryConfigError(
            f"max_age {value!r} is not a duration: use seconds (86400) or a number with a "
            "unit: '90s', '45m', '12h', '30d', '2w'"
        )
    if seconds <= 0:
        raise ExpiryConfigError(f"max_age must be more than zero, found {value!r}")
    return seconds


def format_age(seconds: float) -> str:
    """``seconds`` in the largest whole unit that keeps it readable: ``"31d 4h"``, ``"12h"``."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def parse_created_at(value: Any) -> datetime.datetime | None:
    """The header's ``created_at`` as an aware UTC datetime, or None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed


def age_of(header: Mapping[str, Any], now: datetime.datetime | None = None) -> float | None:
    """Seconds since the cassette's ``created_at``; None if the header has no usable time."""
    created = parse_created_at(header.get("created_at"))
    if created is None:
        return None
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return (now - created).total_seconds()


@dataclass(frozen=True)
class Expiry:
    """A maximum cassette age and what to do past it.

    ``can_record`` says whether the cassette's record mode may record; without it
    ``"rerecord"`` can only warn.
    """

    max_age: float | None = None
    expired: str = "warn"
    can_record: bool = False

    @classmethod
    def from_options(
        cls,
        max_age: Any = None,
        expired: Any = None,
        *,
        can_record: bool = False,
        defaults: Mapping[str, Any] | None = None,
    ) -> Expiry:
        """Validate the options; values left as None fall back to ``defaults`` (the project's)."""
        defaults = defaults or {}
        if max_age is None:
            max_age = defaults.get("max_age")
        if expired is None:
            expired = defaults.get("expired", "warn")
        if expired not in EXPIRED_ACTIONS:
            raise ExpiryConfigError(
                f"expired={expired!r} is not one of {', '.join(map(repr, EXPIRED_ACTIONS))}"
            )
        seconds = None if max_age is None else parse_age(max_age)
        return cls(seconds, str(expired), can_record)

    def is_expired(self, header: Mapping[str, Any]) -> bool:
        """Whether a cassette with this header is older than ``max_age``."""
        if self.max_age is None:
            return False
        age = age_of(header)
        return age is not None and age > self.max_age

    def rerecords(self) -> bool:
        """Whether an expired cassette is recorded again (rather than warned about or failed)."""
        return self.expired == "rerecord" and self.can_record

    def enforce(self, path: str | os.PathLike[str], header: Mapping[str, Any]) -> None:
        """Warn about or raise for an expired cassette (call only when it is expired and not
        being recorded again)."""
        assert self.max_age is not None
        error = CassetteExpiredError(
            path, str(header.get("created_at")), age_of(header) or 0.0, self.max_age
        )
        if self.expired == "fail":
            raise error
        message = str(error)
        if self.expired == "rerecord":
            first, _, rest = message.partition("\n")
            note = "; not recorded again: expired='rerecord' needs a record mode that records"
            message = f"{first}{note} (once, new_episodes, rewrite)\n{rest}"
        warnings.warn(CassetteExpiredWarning(message), stacklevel=2)


_cache: dict[str, tuple[float, dict[str, Any]]] = {}


def project_defaults(start: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``max_age`` and ``expired`` from ``[tool.llmcassette]`` of the nearest pyproject.toml."""
    from .redact.config import _load_toml, find_pyproject

    path = find_pyproject(start)
    if path is None:
        return {}
    key, mtime = os.fspath(path), path.stat().st_mtime
    cached = _cache.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    table = ((_load_toml(path) or {}).get("tool") or {}).get("llmcassette") or {}
    found = {k: table[k] for k in ("max_age", "expired") if k in table}
    try:
        Expiry.from_options(**found)
    except ExpiryConfigError as error:
        raise ExpiryConfigError(f"{path}: [tool.llmcassette]: {error}") from None
    _cache[key] = (mtime, found)
    return found
