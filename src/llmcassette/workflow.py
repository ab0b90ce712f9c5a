"""Record again only the cassettes that need it, in two pytest runs.

Run 1 replays (``--llmcassette-record-mode=none``) with ``LLMCASSETTE_REPORT`` set: the
pytest plugin writes which tests' cassettes were missing, failed to match, left interactions
unplayed, expired, or were written in an older format. Run 2 repeats the same pytest command
with ``--llmcassette-record-mode=rewrite`` and ``LLMCASSETTE_SELECT`` naming just those
tests; the plugin deselects the others. ``--llmcassette-record-mode``, unlike pytest-recording's
``--record-mode``, wins over a record_mode that vcr_config or a vcr marker sets: otherwise
run 1 would record a missing cassette and run 2 would not record at all. From a noxfile::

    session.run("python", "-m", "llmcassette.workflow", *session.posargs)

``python -m llmcassette.workflow --help`` lists the options; see docs/recording.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmcassette.config import parse_age, parse_created_at
from llmcassette.pytest_plugin import RENEW_ENV, REPORT_ENV, REPORT_FORMAT, SELECT_ENV

#: Why a test's cassette may need recording again, as the report names it.
REASONS = ("missing", "mismatch", "unused", "expired", "outdated")

# pytest's exit codes: 0 passed, 1 some tests failed, 5 no tests collected.
_RUN_COMPLETED = (0, 1, 5)


@dataclass
class ReportEntry:
    """One test that used a cassette: its node id, its problems and its cassette files."""

    nodeid: str
    problems: list[str] = field(default_factory=list)
    cassettes: list[dict[str, Any]] = field(default_factory=list)

    def oldest(self) -> datetime.datetime | None:
        """The earliest ``created_at`` of the test's cassettes, if any has one."""
        times = [parse_created_at(c.get("created_at")) for c in self.cassettes]
        known = [t for t in times if t is not None]
        return min(known) if known else None


def read_report(path: str | os.PathLike[str]) -> list[ReportEntry]:
    """The tests listed in a report written by :func:`write_report`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise ValueError(f"{path}: not an llmcassette re-recording report")
    return [
        ReportEntry(str(t["nodeid"]), list(t.get("problems", [])), list(t.get("cassettes", [])))
        for t in data.get("tests", [])
    ]


def select(
    entries: Iterable[ReportEntry],
    reasons: Iterable[str] = REASONS,
    older_than: float | None = None,
    now: datetime.datetime | None = None,
) -> list[str]:
    """Node ids of the tests to record again: one of ``reasons`` applies, or a cassette is
    older than ``older_than`` seconds."""
    wanted = set(reasons)
    unknown = wanted - set(REASONS)
    if unknown:
        raise ValueError(f"unknown reason(s) {sorted(unknown)}; known: {', '.join(REASONS)}")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    chosen: list[str] = []
    for entry in entries:
        oldest = entry.oldest()
        too_old = (
            older_than is not None
            and oldest is not None
            and (now - oldest).total_seconds() > older_than
        )
        if (wanted & set(entry.problems) or too_old) and entry.nodeid not in chosen:
            chosen.append(entry.nodeid)
    return chosen


def _run_pytest(python: str, args: Sequence[str], env: dict[str, str]) -> int:
    command = [python, "-m", "pytest", *args]
    print("llmcassette:", " ".join(command), flush=True)
    return subprocess.run(command, env={**os.environ, **env}, check=False).returncode


def rerecord(
    pytest_args: Sequence[str] = (),
    *,
    reasons: Iterable[str] = REASONS,
    older_than: str | float | None = None,
    dry_run: bool = False,
    python: str = sys.executable,
) -> tuple[int, list[str]]:
    """Replay ``pytest_args``, then record again the tests whose cassettes need it.

    Returns pytest's exit code (of the recording run, or of the replay run if it could not
    complete) and the node ids recorded again. ``older_than`` (``"90d"``, seconds) also picks
    cassettes recorded longer ago than that, whatever ``max_age`` says.
    """

    max_age = None if older_than is None else parse_age(older_than)
    with tempfile.TemporaryDirectory(prefix="llmcassette-") as folder:
        report = Path(folder) / "report.json"
        print("llmcassette: run 1: replay, to find the cassettes to record again", flush=True)
        code = _run_pytest(
            python,
            [*pytest_args, "--llmcassette-record-mode=none"],
            {REPORT_ENV: os.fspath(report)},
        )
        if code not in _RUN_COMPLETED or not report.is_file():
            print(f"llmcassette: the replay run did not complete (exit code {code})", flush=True)
            return (code or 1), []
        chosen = select(read_report(report), reasons, max_age)
        if not chosen:
            print("llmcassette: every cassette is up to date; nothing to record", flush=True)
            return 0, []
        print(f"llmcassette: {len(chosen)} test(s) to record again:", flush=True)
        for nodeid in chosen:
            print(f"  {nodeid}", flush=True)
        if dry_run:
            return 0, chosen
        selection = Path(folder) / "select.txt"
        selection.write_text("\n".join(chosen) + "\n", encoding="utf-8")
        print("llmcassette: run 2: record them again", flush=True)
        env = {SELECT_ENV: os.fspath(selection)}
        if max_age is not None:
            # Recorded again because it was older than that: its age starts over, or the
            # next run would choose it again.
            env[RENEW_ENV] = repr(max_age)
        code = _run_pytest(python, [*pytest_args, "--llmcassette-record-mode=rewrite"], env)
        return code, chosen


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m llmcassette.workflow [options] [pytest arguments]``."""
    parser = argparse.ArgumentParser(
        prog="python -m llmcassette.workflow",
        allow_abbrev=False,  # "--o" or "--dry" may be meant for pytest
        description="Replay the tests, then record again only the cassettes that need it. "
        "Arguments it does not know go to pytest, in both runs.",
    )
    parser.add_argument(
        "--only",
        default=",".join(REASONS),
        help="comma-separated reasons to record a test's cassette again "
        f"(default: all of {','.join(REASONS)})",
    )
    parser.add_argument(
        "--older-than",
        metavar="AGE",
        help="also record cassettes older than AGE ('30d', '12h', seconds)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list the tests, do not record anything"
    )
    options, pytest_args = parser.parse_known_args(argv)
    if pytest_args[:1] == ["--"]:
        pytest_args = pytest_args[1:]
    reasons = [r.strip() for r in options.only.split(",") if r.strip()]
    unknown = sorted(set(reasons) - set(REASONS))
    if unknown:
        parser.error(f"unknown --only reason(s) {unknown}; known: {','.join(REASONS)}")
    code, _ = rerecord(
        pytest_args, reasons=reasons, older_than=options.older_than, dry_run=options.dry_run
    )
    return code


if __name__ == "__main__":
    raise SystemExit(main())
