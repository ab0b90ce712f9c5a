"""Every option object and ``[tool.llmcassette]`` in pyproject.toml, in one place.

``RedactionConfig`` (what is redacted) and ``Expiry`` (how old a cassette may be) are
frozen dataclasses built once from keyword arguments, ``vcr_config``/the marker and the
project's pyproject.toml; a value they cannot use raises ``ConfigError``. The match options
(``MatchConfig``) live with the matching code they configure (``llmcassette.matching``).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llmcassette import _warning_site
from llmcassette.errors import (
    CassetteExpiredError,
    CassetteExpiredWarning,
    ConfigError,
    format_age,
    shown_path,
)

# The name of the built-in rule set, stored in each cassette's header.
RULES_NAME = "llmcassette-default"

__all__ = [
    "EXPIRED_ACTIONS",
    "RULES_NAME",
    "ConfigError",
    "ExpiredAction",
    "Expiry",
    "ProjectSettings",
    "RedactionConfig",
    "age_of",
    "find_pyproject",
    "format_age",
    "parse_age",
    "parse_created_at",
    "project_expiry",
    "project_redaction",
    "project_settings",
    "resolve_redaction",
]


# pyproject.toml ---------------------------------------------------------------------------


def _where(path: Path | None) -> str:
    """A pyproject.toml as messages name it: relative to the working directory when under it."""
    return "pyproject.toml" if path is None else shown_path(path)


def find_pyproject(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` in ``start`` (default: the cwd) or a parent."""
    found = _find_pyproject(start)
    return None if found is None else Path(found[0])


def _find_pyproject(start: str | os.PathLike[str] | None) -> tuple[str, float] | None:
    """The nearest ``pyproject.toml`` and its mtime, each folder asked once."""
    # os.path, not pathlib: every cassette a suite opens looks its settings up here. The
    # cwd is already a real path (getcwd resolves links).
    folder = os.getcwd() if start is None else os.path.realpath(start)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        try:
            found = os.stat(candidate)
        except (OSError, ValueError):
            found = None
        if found is not None and stat.S_ISREG(found.st_mode):
            return candidate, found.st_mtime
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    with path.open("rb") as handle:
        try:
            data: dict[str, Any] = tomllib.load(handle)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{_where(path)}: not valid TOML: {error}") from None
    return data


# {path: (mtime, path, the [tool.llmcassette] table)}: one entry per pyproject.toml read,
# the oldest dropped past _TABLES_LIMIT (a long-lived process may look at many projects).
_TABLES_LIMIT = 16
_tables: dict[str, tuple[float, Path, dict[str, Any]]] = {}


#: The nearest pyproject.toml and its ``[tool.llmcassette]`` table, as ``project_settings``
#: gives them. The ``project_*`` functions below take them (``project=``) where a caller
#: reads several settings: finding the file stats every folder up to it.
ProjectSettings = tuple[Path | None, dict[str, Any]]


def project_settings(start: str | os.PathLike[str] | None = None) -> ProjectSettings:
    """The nearest pyproject.toml and its ``[tool.llmcassette]`` table (empty when absent)."""
    found = _find_pyproject(start)
    if found is None:
        return None, {}
    key, mtime = found
    cached = _tables.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1], cached[2]
    path = Path(key)
    table = (_load_toml(path).get("tool") or {}).get("llmcassette") or {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{_where(path)}: [tool.llmcassette] must be a table")
    if key not in _tables and len(_tables) >= _TABLES_LIMIT:
        del _tables[next(iter(_tables))]
    _tables[key] = (mtime, path, dict(table))
    return path, _tables[key][2]


# Redaction --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RedactionConfig:
    """What llmcassette redacts before a cassette is written. The defaults need no setup.

    ``headers``: more header names whose value is replaced. ``drop_headers``: more headers
    left out of the cassette. ``keep_headers``: headers stored as they are, even built-in
    ones (``x-request-id``). ``json_keys``: more JSON keys (``"user_id"``) or dotted paths
    (``"metadata.user_id"``) whose value is replaced. ``keep_json_keys``: JSON keys whose
    value is stored as it is, even built-in ones (``password``, where a test's passwords
    are its data); a value shaped like a credential is still replaced. ``query_params``:
    more query / form parameter names. ``patterns``: ``(name, regex)`` pairs; a match becomes
    ``<REDACTED:name>``. ``literals``: ``(value, name)`` pairs. ``env_vars``: more
    environment variables whose values are redacted. ``env``: redact the values of
    credential-looking environment variables. ``disable``: built-in rule names to turn off.
    ``fail_closed``: refuse to write a cassette in which a rule still matches.
    ``allow_unscanned_bodies``: store a body in a content-encoding llmcassette cannot
    decode (so no rule can look inside it) instead of refusing the cassette.
    """

    enabled: bool = True
    name: str = RULES_NAME
    headers: tuple[str, ...] = ()
    drop_headers: tuple[str, ...] = ()
    keep_headers: tuple[str, ...] = ()
    json_keys: tuple[str, ...] = ()
    keep_json_keys: tuple[str, ...] = ()
    query_params: tuple[str, ...] = ()
    patterns: tuple[tuple[str, str], ...] = ()
    literals: tuple[tuple[str, str], ...] = ()
    env_vars: tuple[str, ...] = ()
    env: bool = True
    disable: tuple[str, ...] = ()
    fail_closed: bool = True
    allow_unscanned_bodies: bool = False

    def is_custom(self) -> bool:
        """Whether anything differs from the built-in rule set."""
        return self != RedactionConfig(name=self.name)

    def merged(self, other: RedactionConfig | Mapping[str, object] | None) -> RedactionConfig:
        """These settings with ``other`` layered on top (tuples are added, scalars replaced)."""
        if other is None:
            return self
        if isinstance(other, RedactionConfig):
            changes = {
                f.name: getattr(other, f.name)
                for f in dataclasses.fields(other)
                if getattr(other, f.name) != f.default
            }
        else:
            parsed = from_mapping(other)
            keys = {key.replace("-", "_") for key in other}
            changes = {key: getattr(parsed, key) for key in keys}
        values: dict[str, Any] = {}
        for key, value in changes.items():
            current = getattr(self, key)
            values[key] = current + value if isinstance(current, tuple) else value
        return dataclasses.replace(self, **values)


def _strings(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"redaction setting {key!r} must be a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise ConfigError(f"redaction setting {key!r} must be a list of strings")
    return tuple(value)


def _pairs(key: str, value: object) -> tuple[tuple[str, str], ...]:
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [tuple(v) for v in value]
    else:
        raise ConfigError(f"redaction setting {key!r} must be a table or list of pairs")
    out = []
    for item in items:
        if len(item) != 2 or not all(isinstance(v, str) for v in item):
            raise ConfigError(f"redaction setting {key!r}: each entry needs two strings")
        out.append((str(item[0]), str(item[1])))
    return tuple(out)


# Its fields by name, listed once: every cassette reads the project's redaction table.
_REDACTION_FIELDS = frozenset(f.name for f in dataclasses.fields(RedactionConfig))


def from_mapping(data: Mapping[str, object], *, strict: bool = True) -> RedactionConfig:
    """Build a config from a TOML table or a dict; unknown keys are an error."""
    fields = _REDACTION_FIELDS
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in fields:
            if strict:
                known = ", ".join(sorted(fields))
                raise ConfigError(f"unknown redaction setting {key!r} (known: {known})")
            continue
        if name in ("enabled", "env", "fail_closed", "allow_unscanned_bodies"):
            if not isinstance(value, bool):
                raise ConfigError(f"redaction setting {key!r} must be true or false")
            values[name] = value
        elif name == "name":
            if not isinstance(value, str):
                raise ConfigError("redaction setting 'name' must be a string")
            values[name] = value
        elif name in ("patterns", "literals"):
            values[name] = _pairs(key, value)
        else:
            values[name] = _strings(key, value)
    return RedactionConfig(**values)


def project_redaction(
    start: str | os.PathLike[str] | None = None, *, project: ProjectSettings | None = None
) -> RedactionConfig:
    """The settings of ``[tool.llmcassette.redaction]`` in the nearest pyproject.toml."""
    path, settings = project if project is not None else project_settings(start)
    table = settings.get("redaction") or {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{_where(path)}: [tool.llmcassette.redaction] must be a table")
    try:
        return from_mapping(table)
    except ConfigError as error:
        raise ConfigError(f"{_where(path)}: {error}") from None


def resolve_redaction(
    redaction: RedactionConfig | Mapping[str, object] | bool | None,
    start: str | os.PathLike[str] | None = None,
    *,
    project: ProjectSettings | None = None,
) -> RedactionConfig:
    """The settings in force: the project's, with a per-call ``redaction=`` on top.

    ``False`` turns redaction off; ``True``/``None`` use the project settings; a
    ``RedactionConfig`` is used as it is; a mapping is layered on the project settings.
    """
    if isinstance(redaction, RedactionConfig):
        return redaction
    base = project_redaction(start, project=project)
    if redaction is False:
        return dataclasses.replace(base, enabled=False)
    if redaction is True or redaction is None:
        return base
    return base.merged(redaction)


# Expiry -----------------------------------------------------------------------------------

#: ``expired=``: what a cassette older than its ``max_age`` leads to.
ExpiredAction = Literal["warn", "fail", "rerecord"]
EXPIRED_ACTIONS = ("warn", "fail", "rerecord")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_age(value: object) -> float:
    """Seconds in ``value``: a number of seconds, a ``timedelta``, or ``"30d"``/``"12h"``...

    Units: ``s``, ``m`` (minutes), ``h``, ``d``, ``w``; a bare number is seconds. Anything
    else (it may come from pyproject.toml) raises ``ConfigError``.
    """
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise ConfigError(f"max_age must be a duration such as '30d', not {value!r}")
    elif isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (match := _AGE.match(value)):
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    else:
        raise ConfigError(
            f"max_age {value!r} is not a duration: use seconds (86400) or a number with a "
            "unit: '90s', '45m', '12h', '30d', '2w'"
        )
    if seconds <= 0:
        raise ConfigError(f"max_age must be more than zero, found {value!r}")
    return seconds


def parse_created_at(value: object) -> datetime.datetime | None:
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


def age_of(header: Mapping[str, object], now: datetime.datetime | None = None) -> float | None:
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
        max_age: object = None,
        expired: object = None,
        *,
        can_record: bool = False,
        defaults: Mapping[str, object] | None = None,
    ) -> Expiry:
        """Validate the options; values left as None fall back to ``defaults`` (the project's).

        Both may come from pyproject.toml, so any value is checked: ``ConfigError`` if unusable.
        """
        defaults = defaults or {}
        if max_age is None:
            max_age = defaults.get("max_age")
        if expired is None:
            expired = defaults.get("expired", "warn")
        if expired not in EXPIRED_ACTIONS:
            raise ConfigError(
                f"expired={expired!r} is not one of {', '.join(map(repr, EXPIRED_ACTIONS))}"
            )
        seconds = None if max_age is None else parse_age(max_age)
        return cls(seconds, str(expired), can_record)

    def is_expired(self, header: Mapping[str, object]) -> bool:
        """Whether a cassette with this header is older than ``max_age``."""
        if self.max_age is None:
            return False
        age = age_of(header)
        return age is not None and age > self.max_age

    def rerecords(self) -> bool:
        """Whether an expired cassette is recorded again (rather than warned about or failed)."""
        return self.expired == "rerecord" and self.can_record

    def enforce(
        self,
        path: str | os.PathLike[str],
        header: Mapping[str, object],
        rerecord: str | None = None,
    ) -> None:
        """Warn about or raise for an expired cassette (call only when it is expired and not
        being recorded again); ``rerecord`` is the command that records its test again, when
        known."""
        assert self.max_age is not None
        error = CassetteExpiredError(
            path, str(header.get("created_at")), age_of(header) or 0.0, self.max_age, rerecord
        )
        if self.expired == "fail":
            raise error
        message = str(error)
        if self.expired == "rerecord":
            first, _, rest = message.partition("\n")
            note = "; not recorded again: expired='rerecord' needs a record mode that records"
            message = f"{first}{note} (once, new_episodes, rewrite)\n{rest}"
        _warning_site.warn(CassetteExpiredWarning(message), stacklevel=2)


def project_expiry(
    start: str | os.PathLike[str] | None = None, *, project: ProjectSettings | None = None
) -> dict[str, Any]:
    """``max_age`` and ``expired`` from ``[tool.llmcassette]`` of the nearest pyproject.toml."""
    path, settings = project if project is not None else project_settings(start)
    found: dict[str, Any] = {k: settings[k] for k in ("max_age", "expired") if k in settings}
    try:
        Expiry.from_options(**found)
    except ConfigError as error:
        raise ConfigError(f"{_where(path)}: [tool.llmcassette]: {error}") from None
    return found


#: ``drift=``: what a legacy (vcrpy-recorded) cassette's body differences lead to.
DRIFT_MODES = ("warn", "strict", "off")


def check_drift(value: object, where: str = "drift") -> str:
    """``value`` if it is one of ``DRIFT_MODES``, else ``ConfigError`` naming ``where``."""
    if value not in DRIFT_MODES:
        raise ConfigError(f"{where} must be one of {', '.join(DRIFT_MODES)}, not {value!r}")
    return str(value)


def project_drift(
    start: str | os.PathLike[str] | None = None, *, project: ProjectSettings | None = None
) -> str | None:
    """``drift`` from ``[tool.llmcassette]`` of the nearest pyproject.toml (None when unset)."""
    path, settings = project if project is not None else project_settings(start)
    if "drift" not in settings:
        return None
    return check_drift(settings["drift"], f"{_where(path)}: [tool.llmcassette] drift")


#: The keys of ``[tool.llmcassette.heal]``: each a table of old name = new name.
HEAL_RULE_KEYS = ("event_aliases", "field_renames")


def project_heal_rules(start: str | os.PathLike[str] | None = None) -> dict[str, dict[str, str]]:
    """``[tool.llmcassette.heal]`` of the nearest pyproject.toml: ``event_aliases`` (old
    event type = new) and ``field_renames`` (old field = new), each empty when absent."""
    path, settings = project_settings(start)
    table = settings.get("heal") or {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{_where(path)}: [tool.llmcassette.heal] must be a table")
    unknown = sorted(set(table) - set(HEAL_RULE_KEYS))
    if unknown:
        raise ConfigError(
            f"{_where(path)}: [tool.llmcassette.heal]: unknown key(s) {', '.join(unknown)}; "
            f"expected {' or '.join(HEAL_RULE_KEYS)}"
        )
    rules: dict[str, dict[str, str]] = {}
    for key in HEAL_RULE_KEYS:
        value = table.get(key) or {}
        if not isinstance(value, Mapping) or not all(
            isinstance(old, str) and isinstance(new, str) and new for old, new in value.items()
        ):
            raise ConfigError(
                f'{path}: [tool.llmcassette.heal] {key} must be a table of "old" = "new" names'
            )
        rules[key] = dict(value)
    return rules
