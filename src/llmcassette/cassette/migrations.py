"""Upgrade cassettes written in an older format version, one version step at a time.

A migration takes the parsed lines of a version ``v`` cassette and returns the lines of
version ``v + 1``. Loading applies every step from the file's version up to
``FORMAT_VERSION``; the file on disk is rewritten only when the cassette is recorded again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmcassette.cassette import events, jsontext

FORMAT_VERSION = 2

# The first llmcassette release that writes each format version, for "please upgrade" errors.
FIRST_RELEASE_WITH_VERSION: dict[int, str] = {1: "0.1.0", 2: "0.1.0"}


@dataclass
class Line:
    """One parsed cassette line and where it came from (for error messages)."""

    number: int
    record: dict[str, Any]


Migration = Callable[[list[Line]], list[Line]]


def _v1_to_v2(lines: list[Line]) -> list[Line]:
    """Version 1 to 2: a layout's ``+pad<N>`` becomes a ``pad`` field of its own, beside
    the event's ``data`` or the body's ``json`` (``jsontext.stored_layout``), and an SSE
    event's name is left out where its data's ``type`` says it (``events.event_name``).
    Version 2 also writes its lines compact; readers ignore the spaces, so that needs no
    step."""
    stream = None
    for line in lines:
        record = line.record
        _split_layout(record)
        body = record.get("body")
        if isinstance(body, dict):
            _split_layout(body)
        if record.get("type") == "response":
            stream = body.get("stream") if isinstance(body, dict) else None
        elif record.get("type") == "event" and stream == events.SSE and "raw" not in record:
            events.leave_implied_name_out(record)
    return lines


def _split_layout(fields: dict[str, Any]) -> None:
    layout = fields.get("layout")
    if isinstance(layout, str) and "+pad" in layout:
        del fields["layout"]
        fields.update(jsontext.stored_layout(layout))


# MIGRATIONS[v] turns the lines after the header of a version v cassette into version v + 1.
MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2}


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
