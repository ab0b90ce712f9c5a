"""``llmcassette prune``: delete the cassettes no test uses (and, with ``--expired``, the
expired ones), with the files that belong to them.

What counts as an orphan or as expired is exactly what ``llmcassette check --orphans`` and
``check --max-age`` report (``cli.check.orphan`` and the check's age test), so the two
commands never disagree. With a cassette go its sidecars: the overrides file
(``<stem>.overrides.json``) and heal's log (``<stem>.heal.log``). Without ``--yes`` nothing
is deleted: the files that would go are listed. A file that cannot be read is never
deleted (its name may say orphan, but prune cannot tell what it is); it is reported, exit 2.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from llmcassette.cli.check import EXPIRED, ORPHAN, Options, check_opened, orphan
from llmcassette.cli.heal import LOG_SUFFIX
from llmcassette.cli.output import Output
from llmcassette.cli.paths import JSONL, cassettes
from llmcassette.errors import CassetteFormatError
from llmcassette.faults import sidecar

SIDECAR = "sidecar"  # the reason of a file that goes with a pruned cassette


@dataclass(frozen=True)
class Doomed:
    """One file prune deletes (or would): why, and the cassette it goes with."""

    path: Path
    reason: str  # ORPHAN, EXPIRED or SIDECAR
    message: str
    cassette: Path | None = None  # for a sidecar: the cassette it belongs to

    def as_json(self, deleted: bool) -> dict[str, object]:
        return {
            "file": os.fspath(self.path),
            "reason": self.reason,
            "message": self.message,
            "cassette": None if self.cassette is None else os.fspath(self.cassette),
            "deleted": deleted,
        }


def sidecars_of(cassette: Path) -> Iterator[Path]:
    """The files beside ``cassette`` that belong to it and exist."""
    stem = cassette.name.rsplit(".", 1)[0]
    for candidate in (sidecar.path_for(cassette), cassette.with_name(stem + LOG_SUFFIX)):
        if candidate != cassette and candidate.is_file():
            yield candidate


def plan(paths: Sequence[str], max_age: float | None, out: Output) -> tuple[list[Doomed], int]:
    """The files to delete under ``paths`` (sorted, each once) and how many files were
    looked at; files that cannot be read are reported on ``out`` and kept."""
    doomed: dict[Path, Doomed] = {}
    files = 0
    options = Options(max_age=max_age, orphans=False, secrets=False)
    for opened in cassettes(paths, "prune"):
        if isinstance(opened, CassetteFormatError):
            out.failed(opened, f"{opened}\n  not pruned: prune deletes only files it can read")
            continue
        files += 1
        path = opened.path
        reasons = [] if (found := orphan(path)) is None else [(ORPHAN, found.message)]
        if max_age is not None and opened.kind == JSONL:
            reasons += [
                (EXPIRED, problem.message)
                for problem in check_opened(opened, options)
                if problem.kind == EXPIRED
            ]
        if not reasons:
            continue
        reason, message = reasons[0]
        doomed[path] = Doomed(path, reason, message)
        for extra in sidecars_of(path):
            doomed.setdefault(extra, Doomed(extra, SIDECAR, f"belongs to {path.name}", path))
    return [doomed[path] for path in sorted(doomed)], files


def run(paths: Sequence[str], *, max_age: float | None, yes: bool, as_json: bool) -> int:
    """List (or with ``yes`` delete) what ``plan`` finds; the exit code (0, or 2 when a
    file could not be read or deleted)."""
    out = Output("prune", as_json)
    doomed, files = plan(paths, max_age, out)
    deleted = 0
    for item in doomed:
        if yes:
            try:
                item.path.unlink()
            except FileNotFoundError:  # gone since it was listed: nothing left to do
                pass
            except OSError as error:
                out.cannot_write(item.path, error)
                continue
            deleted += 1
        verb = "deleted" if yes else "would delete"
        out.result(item.as_json(yes), f"{verb} {item.path} ({item.reason}: {item.message})")
    if yes:
        out.say(f"llmcassette prune: deleted {deleted} file(s) of {files} looked at")
    elif doomed:
        out.say(
            f"llmcassette prune: {len(doomed)} file(s) of {files} would be deleted; "
            "nothing was deleted, run again with --yes to delete them"
        )
    else:
        out.say(f"llmcassette prune: nothing to prune in {files} file(s)")
    return out.done(dry_run=not yes)
