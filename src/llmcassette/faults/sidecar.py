"""The overrides sidecar: ``<cassette>.overrides.json`` next to ``<cassette>.jsonl``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from llmcassette.errors import OverridesError

if TYPE_CHECKING:
    from llmcassette.faults.model import Overrides

SUFFIX = ".overrides.json"

# Parsed sidecars by path, valid while the file's size and mtime stay the same; the oldest
# is dropped past _CACHE_LIMIT (a long-lived process may replay many cassettes).
_CACHE_LIMIT = 64
_CACHE: dict[str, tuple[tuple[int, int], Overrides]] = {}


def path_for(cassette: str | os.PathLike[str]) -> Path:
    """Where the sidecar of ``cassette`` lives: its name with ``.overrides.json`` for the suffix."""
    path = Path(cassette)
    return path.with_name(path.stem + SUFFIX) if path.suffix else path.with_name(path.name + SUFFIX)


def load(path: Path) -> Overrides | None:
    """The validated overrides in ``path``, or None when there is no such file."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _CACHE.get(str(path))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as problem:
        raise OverridesError(
            f"{path}:{problem.lineno}",
            None,
            None,
            f"not valid JSON: {problem.msg} (column {problem.colno})",
            "the sidecar is one JSON object; check commas and quotes there",
        ) from None
    except OSError as problem:  # a folder by that name, a file it may not read
        raise OverridesError(
            str(path),
            None,
            None,
            f"cannot be read: {problem.strerror or problem}",
            "make it a readable file, or delete it",
        ) from None
    except (RecursionError, ValueError) as problem:  # not UTF-8, too deep, a too long integer
        what = "not UTF-8 text" if isinstance(problem, UnicodeDecodeError) else str(problem)
        if isinstance(problem, RecursionError):
            what = "arrays and objects nest too deeply"
        raise OverridesError(
            str(path), None, None, f"cannot be read: {what}", "fix the file or delete it"
        ) from None
    from llmcassette.faults.model import Overrides  # a cassette without a sidecar never needs it

    overrides = Overrides.parse(data, str(path), base_dir=str(path.parent))
    if str(path) not in _CACHE and len(_CACHE) >= _CACHE_LIMIT:
        del _CACHE[next(iter(_CACHE))]
    _CACHE[str(path)] = (stamp, overrides)
    return overrides
