"""Helpers of the CLI tests: cassette lines as records, and the CLI in a child process.

Test modules import from here, never from ``conftest``: every conftest.py of the suite is
a module named ``conftest``, and which one that name holds depends on collection order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The ``record`` fixture (conftest.py): ``record(path, prompts, ...)`` returns ``path``.
Record = Callable[..., Path]

WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def findings(stdout: str) -> list[dict[str, Any]]:
    """The findings of a ``--json`` document (docs/cli.md, "JSON output")."""
    found: list[dict[str, Any]] = json.loads(stdout)["findings"]
    return found


def cli(
    *args: str | os.PathLike[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m llmcassette ARGS`` in a child process, as CI would run it."""
    return subprocess.run(
        [sys.executable, "-m", "llmcassette", *map(os.fspath, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )
