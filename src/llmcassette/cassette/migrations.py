"""Upgrade cassettes written in an older format version, one version step at a time.

A migration takes the parsed lines of a version ``v`` cassette and returns the lines of
version ``v + 1``. Loading applies every step from the file's version up to
``FORMAT_VERSION``; the file on disk is rewritten only when the cassette is recorded again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FORMAT_VERSION = 1

# The first llmcassette release that writes each format version, for "please upgrade" errors.
FIRST_RELEASE_WITH_VERSION: dict[int, str] = {1: "0.1.0"}


@dataclass
class Line:
    """One parsed cassette line and where it came from (for error messages)."""

    number: int
    record: dict[str, Any]


Migration = Callable[[list[Line]], list[Line]]

# MIGRATIONS[v] turns the lines after the header of a version v cassette into version v + 1.
MIGRATIONS: dict[int, Migration] = {}


class MissingMigrationError(KeyError):
    """No step upgrades from the version in ``args[0]``.

    A class of its own so that a ``KeyError`` raised inside a step is not mistaken for it.
    """


def migrate(lines: list[Line], version: int) -> list[Line]:
    """Apply every step from ``version`` to ``FORMAT_VERSION``.

    ``MissingMigrationError`` (a ``KeyError``) names the version that has no step.
    """
    while version < FORMAT_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise MissingMigrationError(version)
        lines = step(lines)
        version += 1
    return lines
