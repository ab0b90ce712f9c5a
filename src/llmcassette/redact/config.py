"""Redaction settings: one frozen dataclass, read from ``[tool.llmcassette.redaction]``."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LlmCassetteError
from .rules import RULES_NAME


class RedactionConfigError(LlmCassetteError, ValueError):
    """The redaction settings are invalid (unknown key, wrong type, bad regex)."""


@dataclass(frozen=True)
class RedactionConfig:
    """What llmcassette redacts before a cassette is written. The defaults need no setup.

    ``headers``: more header names whose value is replaced. ``drop_headers``: more headers
    left out of the cassette. ``keep_headers``: headers stored as they are, even built-in
    ones (``x-request-id``). ``json_keys``: more JSON keys (``"user_id"``) or dotted paths
    (``"metadata.user_id"``) whose value is replaced. ``query_params``: more query / form
    parameter names. ``patterns``: ``(name, regex)`` pairs; a match becomes
    ``<REDACTED:name>``. ``literals``: ``(value, name)`` pairs. ``env_vars``: more
    environment variables whose values are redacted. ``env``: redact the values of
    credential-looking environment variables. ``disable``: built-in rule names to turn off.
    ``fail_closed``: refuse to write a cassette in which a rule still matches.
    """

    enabled: bool = True
    name: str = RULES_NAME
    headers: tuple[str, ...] = ()
    drop_headers: tuple[str, ...] = ()
    keep_headers: tuple[str, ...] = ()
    json_keys: tuple[str, ...] = ()
    query_params: tuple[str, ...] = ()
    patterns: tuple[tuple[str, str], ...] = ()
    literals: tuple[tuple[str, str], ...] = ()
    env_vars: tuple[str, ...] = ()
    env: bool = True
    disable: tuple[str, ...] = ()
    fail_closed: bool = True

    def is_custom(self) -> bool:
        """Whether anything differs from the built-in rule set."""
        return self != RedactionConfig(name=self.name)

    def merged(self, other: RedactionConfig | Mapping[str, Any] | None) -> RedactionConfig:
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


def _strings(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise RedactionConfigError(f"redaction setting {key!r} must be a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise RedactionConfigError(f"redaction setting {key!r} must be a list of strings")
    return tuple(value)


def _pairs(key: str, value: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [tuple(v) for v in value]
    else:
        raise RedactionConfigError(f"redaction setting {key!r} must be a table or list of pairs")
    out = []
    for item in items:
        if len(item) != 2 or not all(isinstance(v, str) for v in item):
            raise RedactionConfigError(f"redaction setting {key!r}: each entry needs two strings")
        out.append((str(item[0]), str(item[1])))
    return tuple(out)


def from_mapping(data: Mapping[str, Any], *, strict: bool = True) -> RedactionConfig:
    """Build a config from a TOML table or a dict; unknown keys are an error."""
    fields = {f.name: f for f in dataclasses.fields(RedactionConfig)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in fields:
            if strict:
                known = ", ".join(sorted(fields))
                raise RedactionConfigError(f"unknown redaction setting {key!r} (known: {known})")
            continue
        if name in ("enabled", "env", "fail_closed"):
            if not isinstance(value, bool):
                raise RedactionConfigError(f"redaction setting {key!r} must be true or false")
            values[name] = value
        elif name == "name":
            if not isinstance(value, str):
                raise RedactionConfigError("redaction setting 'name' must be a string")
            values[name] = value
        elif name in ("patterns", "literals"):
            values[name] = _pairs(key, value)
        else:
            values[name] = _strings(key, value)
    return RedactionConfig(**values)


def _load_toml(path: Path) -> dict[str, Any] | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            return None
    with path.open("rb") as handle:
        data: dict[str, Any] = tomllib.load(handle)
    return data


_cache: dict[str, tuple[float, RedactionConfig]] = {}


def find_pyproject(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` in ``start`` (default: the cwd) or a parent."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def project_config(start: str | os.PathLike[str] | None = None) -> RedactionConfig:
    """The settings of ``[tool.llmcassette.redaction]`` in the nearest pyproject.toml."""
    path = find_pyproject(start)
    if path is None:
        return RedactionConfig()
    key = os.fspath(path)
    mtime = path.stat().st_mtime
    cached = _cache.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    data = _load_toml(path)
    table = (((data or {}).get("tool") or {}).get("llmcassette") or {}).get("redaction") or {}
    if not isinstance(table, Mapping):
        raise RedactionConfigError(f"{path}: [tool.llmcassette.redaction] must be a table")
    try:
        config = from_mapping(table)
    except RedactionConfigError as error:
        raise RedactionConfigError(f"{path}: {error}") from None
    _cache[key] = (mtime, config)
    return config


def resolve(
    redaction: RedactionConfig | Mapping[str, Any] | bool | None,
    start: str | os.PathLike[str] | None = None,
) -> RedactionConfig:
    """The settings in force: the project's, with a per-call ``redaction=`` on top.

    ``False`` turns redaction off; ``True``/``None`` use the project settings; a
    ``RedactionConfig`` is used as it is; a mapping is layered on the project settings.
    """
    if isinstance(redaction, RedactionConfig):
        return redaction
    base = project_config(start)
    if redaction is False:
        return dataclasses.replace(base, enabled=False)
    if redaction is True or redaction is None:
        return base
    return base.merged(redaction)
