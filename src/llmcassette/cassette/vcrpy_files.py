"""Reading vcrpy's own cassette files (YAML, or JSON from its json serializer)."""

from __future__ import annotations

import json
from typing import Any


def parse(text: str, *, json_file: bool) -> Any:
    """The data of a vcrpy cassette's text, parsed with a safe loader; parse errors propagate."""
    if json_file:
        return json.loads(text)
    import yaml

    try:
        from yaml import CSafeLoader as Loader
    except ImportError:  # pragma: no cover - PyYAML without libyaml
        from yaml import SafeLoader as Loader  # type: ignore[assignment]
    return yaml.load(text, Loader=Loader)


def error_line(error: BaseException) -> int | None:
    """The 1-based line a YAML or JSON parse error points at, if it says."""
    line = getattr(getattr(error, "problem_mark", None), "line", None)
    if isinstance(line, int):
        return line + 1  # PyYAML counts from 0
    lineno = getattr(error, "lineno", None)
    return lineno if isinstance(lineno, int) else None
