"""The run report for tools: ``pytest --llmcassette-report=FILE``, one JSON line per event.

An event is an llmcassette error or warning seen while a test ran (a mismatch, an unused
interaction, an incomplete stream, a refused secret, an expired or drifted cassette). Each
line is the error model of ``LlmCassetteError.to_dict()`` (``code``, ``message``, ``file``,
``line``, ``path``, ``expected``, ``received``, ``how_to_fix``, ``docs``) with ``test`` (the
pytest node id), ``phase`` (``setup``, ``call``, ``teardown``, or None outside a test) and
``severity`` (``error`` or ``warning``) in front.

Other code adds an event with ``record_event(item_or_nodeid, error_or_warning)``; it does
nothing unless a report was asked for. Under pytest-xdist each worker keeps its events and
hands them to the controller when it finishes (``workeroutput``); the controller writes the
one file, so no two processes ever write it. The file is written atomically when the
session ends, lines in the order the tests finished.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from llmcassette.config import ConfigError, RedactionConfig, project_redaction
from llmcassette.errors import LlmCassetteError, LlmCassetteWarning, record
from llmcassette.redact import Redactor

#: The pytest option that asks for the report.
OPTION = "--llmcassette-report"
#: The key a pytest-xdist worker puts its events under in ``workeroutput``.
WORKER_OUTPUT_KEY = "llmcassette_run_report"
#: The code of an llmcassette warning that has none of its own.
UNCODED_WARNING = "LC000 llmcassette-error"


class RunReport:
    """The events of one pytest session (or of one xdist worker's part of it)."""

    def __init__(self, target: str | os.PathLike[str] | None) -> None:
        self.target = None if target is None else Path(target)
        self.events: list[dict[str, Any]] = []
        # The errors already reported, so the same exception seen twice (an SDK's error
        # chain and the mismatch list, or the call and teardown phases) is one line. The
        # objects are kept so their ids stay theirs until the test ends.
        self._seen: dict[int, object] = {}

    def add(self, nodeid: str | None, problem: object, phase: str | None = None) -> bool:
        """Add ``problem`` (an error or warning) as an event of test ``nodeid``; False if
        it is already in the report."""
        if id(problem) in self._seen:
            return False
        self._seen[id(problem)] = problem
        self.events.append(event_of(nodeid, problem, phase))
        return True

    def forget_seen(self) -> None:
        """Drop the identities kept for de-duplication (a test has ended)."""
        self._seen.clear()

    def write(self) -> None:
        """Write every event as one JSON line, replacing the file atomically."""
        if self.target is None:
            return
        text = _shown("".join(json.dumps(event, default=str) + "\n" for event in self.events))
        self.target.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(
            dir=self.target.parent, prefix=f".{self.target.name}.", suffix=".tmp"
        )
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temp, self.target)
        except BaseException:
            os.unlink(temp)
            raise


def _shown(text: str) -> str:
    """The report's text with the secrets the project's redaction rules find replaced: the
    id of a test parametrized with a key (``test_chat[sk-proj-...]``) is in every event of
    it, and in the re-record command of its hints; the file is a CI artifact."""
    try:
        config = project_redaction()
    except ConfigError:  # reported where the cassettes use it; the report is still written
        config = RedactionConfig()
    return Redactor(config).shown(text) if config.enabled else text


_active: RunReport | None = None


def start(target: str | os.PathLike[str] | None) -> RunReport:
    """Begin collecting events for this process; ``target`` is None on an xdist worker,
    which hands its events to the controller instead of writing them."""
    global _active
    _active = RunReport(target)
    return _active


def active() -> RunReport | None:
    """The report being collected in this process, or None when none was asked for."""
    return _active


def stop() -> RunReport | None:
    """End collecting; the report is returned (and no longer active)."""
    global _active
    report, _active = _active, None
    return report


def record_event(item_or_nodeid: Any, problem: object, phase: str | None = None) -> None:
    """Add an llmcassette error or warning to the run report, if one is being written.

    ``item_or_nodeid`` is the pytest item (or its node id, or None outside a test);
    ``problem`` an ``LlmCassetteError`` or ``LlmCassetteWarning`` instance (anything with a
    ``to_dict()`` in the error model works). Recording the same object twice adds one line.
    """
    if _active is None:
        return
    nodeid = getattr(item_or_nodeid, "nodeid", item_or_nodeid)
    _active.add(None if nodeid is None else str(nodeid), problem, phase)


def record_exception_chain(
    item_or_nodeid: Any, error: BaseException | None, phase: str | None = None
) -> None:
    """Record every llmcassette error in ``error`` and its causes and contexts.

    SDKs wrap a transport error in their own ("Connection error."), so the llmcassette
    error a test failed on is often the cause of the one it raised.
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, (LlmCassetteError, LlmCassetteWarning)):  # -W error raises these
            record_event(item_or_nodeid, error, phase)
        error = error.__cause__ or error.__context__


def merge(events: Iterable[dict[str, Any]]) -> None:
    """Add events another process collected (an xdist worker's) to the active report."""
    if _active is not None:
        _active.events.extend(events)


def event_of(nodeid: str | None, problem: object, phase: str | None = None) -> dict[str, Any]:
    """One line of the report: the test, the phase, the severity, then the error model."""
    to_dict = getattr(problem, "to_dict", None)
    if callable(to_dict):
        model = dict(to_dict())
    else:  # a warning of another library's, or an llmcassette warning without a code
        model = record(getattr(problem, "code", UNCODED_WARNING), str(problem))
    severity = "warning" if isinstance(problem, Warning) else "error"
    return {"test": nodeid, "phase": phase, "severity": severity, **model}


def is_llmcassette_warning(warning: object) -> bool:
    """Whether a warning pytest recorded is one llmcassette issued."""
    return isinstance(warning, LlmCassetteWarning)
