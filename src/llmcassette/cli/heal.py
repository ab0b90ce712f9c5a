"""``llmcassette heal``: repair the known defects of JSONL cassettes, with a log of each repair.

The repairs are ``llmcassette.cassette.heal``'s. For every cassette it changes, heal writes
the new file atomically and appends one JSON line to the heal log: by default
``<cassette stem>.heal.log`` beside the cassette (a name no command takes for a cassette),
or the one ``--log FILE`` for all. ``--dry-run`` changes nothing and prints the plan. A
cassette heal cannot repair is left as it is, with a coded error (exit 2).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llmcassette.cassette import heal, lines
from llmcassette.cli.output import CANNOT_WRITE, Output
from llmcassette.errors import CassetteFormatError, LlmCassetteError, SecretLeakError, record

#: The ending of a heal log's name beside its cassette: ``test_x.jsonl`` → ``test_x.heal.log``.
LOG_SUFFIX = ".heal.log"
LOG_FORMAT = "llmcassette-heal-log"


def log_path(cassette: Path, log: Path | None) -> Path:
    """Where the repairs of ``cassette`` are logged."""
    if log is not None:
        return log
    return cassette.with_name(cassette.name.removesuffix(".jsonl") + LOG_SUFFIX)


def cassette_files(paths: list[str]) -> Iterator[Path | CassetteFormatError]:
    """The ``.jsonl`` files named, and those under the folders named (sorted); an error for
    a folder that cannot be listed. A folder without one says so on stderr, as every
    command does (``cli.paths``)."""
    from llmcassette.cli.paths import files_under

    for raw in paths:
        given = Path(raw)
        if not given.is_dir():
            yield given
            continue
        found = 0
        for item in files_under(given, (".jsonl",)):
            if isinstance(item, Path) and item.name.startswith("."):
                continue
            found += isinstance(item, Path)
            yield item
        if not found:
            print(f"llmcassette heal: no cassettes found in {given}", file=sys.stderr)


def log_entry(cassette: Path, result: heal.Plan) -> dict[str, Any]:
    """One line of the heal log: the cassette, when, by whom, and every repair."""
    from llmcassette._version import __version__
    from llmcassette.cassette.jsonl import now_iso

    return {
        "format": LOG_FORMAT,
        "version": 1,
        "file": os.fspath(cassette),
        "healed_at": now_iso(),
        "by": f"llmcassette {__version__}",
        "repairs": [repair.as_json() for repair in result.repairs],
    }


def append_log(target: Path, entry: dict[str, Any]) -> None:
    """Add ``entry`` to the log at ``target``, replacing the file atomically."""
    from llmcassette._vcr.tempfiles import atomic_write

    before = target.read_bytes() if target.exists() else b""
    if before and not before.endswith(b"\n"):
        before += b"\n"
    atomic_write(target, before + (json.dumps(entry, ensure_ascii=False) + "\n").encode())


def keep_marks(healed: str, again: str) -> str:
    """``again`` (the healed text written again by the current rules) with the
    ``"synthesized"`` mark of each event line heal synthesized, which a cassette read and
    written again does not keep; the header lists their lines."""
    old, new = healed.split("\n"), again.split("\n")
    listed = json.loads(new[0]).get("healed", {}).get("synthesized") or []
    if len(old) != len(new):  # blank lines heal kept: the numbers are the healed file's
        return again
    for item in listed:
        number = item.get("line") if isinstance(item, dict) else None
        if not isinstance(number, int) or not 1 < number <= len(new):
            continue
        record = json.loads(new[number - 1])
        if record.get("type") == "event":
            record["synthesized"] = heal.SYNTHESIZED
            new[number - 1] = lines.dump(record)
    return "\n".join(new)


def _write(
    out: Output, path: Path, target: Path, healed_text: str, original: bytes, result: heal.Plan
) -> bool:
    """Write the healed cassette, then its log entry; whether both were written. A cassette
    whose log entry cannot be written is put back as it was: no repair goes unlogged."""
    from llmcassette._vcr.tempfiles import atomic_write

    try:
        atomic_write(path, healed_text.encode("utf-8"))
    except OSError as error:
        out.cannot_write(path, error)
        return False
    try:
        append_log(target, log_entry(path, result))
    except OSError as error:
        atomic_write(path, original)
        problem = f"cannot write the heal log {target}: {error.strerror or error}; not changed"
        fix = "give --log a file whose folder can be written, or check the permissions"
        out.error(
            record(CANNOT_WRITE, problem, file=str(path), how_to_fix=fix),
            f"{path}: {problem}\n  how to fix: {fix}",
        )
        return False
    return True


def _name(item: Path | CassetteFormatError) -> str:
    return os.fspath(item) if isinstance(item, Path) else os.fspath(item.path)


def run(paths: list[str], *, dry_run: bool, log: str | None, as_json: bool, quiet: bool) -> int:
    """Heal every cassette of ``paths``; the exit code (0 done, 2 a file was refused)."""
    from llmcassette.cli.opened import refused, safe_text
    from llmcassette.cli.progress import track
    from llmcassette.config import project_heal_rules

    out = Output("heal", as_json)
    log_file = Path(log) if log else None
    healed = files = 0
    found = list(cassette_files(paths))
    for path in track(found, "heal", as_json=as_json, name=_name):
        if isinstance(path, CassetteFormatError):  # a folder that cannot be listed
            out.failed(path)
            continue
        files += 1
        try:
            data = path.read_bytes()
            rules = project_heal_rules(path.parent)
            result = heal.plan(
                data,
                path,
                heal.Rules(rules["event_aliases"], rules["field_renames"]),
            )
        except OSError as error:
            problem = f"cannot read: {error.strerror or error}"
            out.error(
                record("LC103 unreadable", problem, file=str(path), how_to_fix="check the path"),
                f"{path}: {problem}",
            )
            continue
        except LlmCassetteError as error:
            text = str(error)
            out.failed(error, text if "not changed" in text else f"{text}\n  not changed")
            continue
        if not result.changes:
            out.result({"file": str(path), "repairs": [], "written": False}, None)
            continue
        try:  # written as a recording writes: the current rules, then the fail-closed scan
            before = result.data.decode("utf-8")
            healed_text = safe_text(before, path, rewritten=functools.partial(keep_marks, before))
        except SecretLeakError as error:
            out.failed(error, refused(error, "heal", path))
            continue
        target = log_path(path, log_file)
        repairs = [repair.as_json() for repair in result.repairs]
        if not dry_run and not _write(out, path, target, healed_text, data, result):
            continue
        healed += 1
        for repair in result.repairs:
            verb = "would repair" if dry_run else "repaired"
            out.say(f"{path}:{repair.line}: {verb} ({repair.kind}): {repair.message}", stderr=False)
        out.result(
            {
                "file": str(path),
                "repairs": repairs,
                "written": not dry_run,
                "log": None if dry_run else str(target),
            },
            None,
        )
    if not quiet:
        verb = "would heal" if dry_run else "healed"
        out.say(f"llmcassette heal: {healed} of {files} cassette(s) {verb}")
    return out.done()
