"""``llmcassette check``: find cassettes that cannot be trusted, one ``Problem`` each.

Every check is about one file: its structure and format version (strict read, every event
line), streams cut short, its age (``created_at`` against ``max_age``), whether a test still
uses it (``orphans``) and values that a redaction rule still matches (``secrets``). The
temporary files a killed save left beside a cassette are reported too (``stale-temp``), and
an overrides sidecar that replay would refuse or fail on, judged against its cassette.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmcassette.cli import output
from llmcassette.cli.paths import SUFFIXES
from llmcassette.errors import (
    TOO_DEEP_JSON,
    CassetteFormatError,
    CassetteVersionError,
    OverridesError,
    located,
    record,
)
from llmcassette.faults.sidecar import SUFFIX as SIDECAR_SUFFIX

if TYPE_CHECKING:
    from llmcassette.cassette.jsonl import Cassette, Interaction
    from llmcassette.cli.paths import Opened
    from llmcassette.faults.model import Entry

# Problem kinds, as they appear in ``--json`` records.
UNREADABLE = "unreadable"  # the file cannot be opened: exit code 2, not 1
FORMAT = "format"
VERSION = "version"
TRUNCATED = "truncated-stream"
EXPIRED = "expired"
AGE_UNKNOWN = "age-unknown"
ORPHAN = "orphan"
SECRET = "secret"
OVERRIDES = "overrides"  # an overrides sidecar (llmcassette.faults) replay would refuse or fail on
STALE_TEMP = "stale-temp"  # a killed save's temporary file (llmcassette._vcr.tempfiles)
LOST_BODY = "lost-body"  # a response stored empty whose headers say it had a body
PLACEHOLDER = "placeholder"  # a {{fromRequest:...}} in a recorded response replay fails on

# The code of each kind the check finds itself; the other kinds (unreadable, format,
# version, overrides) carry the code of the exception they come from.
CODES = {
    TRUNCATED: output.TRUNCATED_STREAM,
    EXPIRED: output.EXPIRED,
    AGE_UNKNOWN: output.AGE_UNKNOWN,
    ORPHAN: output.ORPHAN,
    SECRET: output.SECRET,
    STALE_TEMP: output.STALE_TEMP,
    LOST_BODY: output.LOST_BODY,
}

#: ``Problem.fixable_by`` of what ``llmcassette heal`` repairs.
HEAL = "heal"

CASSETTE_DIR = "cassettes"  # pytest-recording's <test dir>/cassettes/<module>/<test>.<ext>


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one cassette: where, what kind, and what to do about it."""

    path: str
    line: int | None
    kind: str
    message: str
    hint: str | None = None
    code: str | None = None  # None: the code of ``kind`` (``CODES``)
    json_path: str | None = None  # where in the file, when one value is at fault
    fixable_by: str | None = None  # "heal" when `llmcassette heal` repairs it

    def render(self) -> str:
        """``path:line: message`` and, on a second line, how to fix it."""
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        text = located(where, self.message, self.hint)
        if self.fixable_by == HEAL:
            text += f"\n  fixable by heal: llmcassette heal {self.path}"
        return text

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` record (``errors.record``), with the ``kind``."""
        return record(
            self.code or CODES[self.kind],
            self.message,
            file=self.path,
            line=self.line,
            path=self.json_path,
            how_to_fix=self.hint,
            kind=self.kind,
            fixable_by=self.fixable_by,
        )


@dataclass(frozen=True)
class Options:
    """What to check besides structure and streams."""

    max_age: float | None = None  # seconds, as ``expiry.parse_age`` gives them
    orphans: bool = False
    secrets: bool = True


def _declared_length(headers: dict[str, list[str]]) -> int | None:
    for name, values in headers.items():
        if name.lower() == "content-length" and values and values[0].strip().isdigit():
            return int(values[0])
    return None


def _structure(name: str, cassette: Cassette, options: Options) -> Iterator[Problem]:
    from llmcassette.transport.integrity import missing_terminator, stopped_reading

    for number, item in enumerate(cassette.interactions, start=1):
        yield from _placeholders(name, number, item)
        if item.stream is None:
            # A body that was there when it was recorded (its content-length says how
            # long) but is empty in the cassette was lost on the way: a converter that
            # did not find it, or a hand edit. HEAD, 204 and 304 answers have none.
            declared = _declared_length(item.response_headers)
            if (
                not item.response_body
                and declared
                and item.method.upper() != "HEAD"
                and item.status not in (204, 304)
            ):
                yield Problem(
                    name,
                    item.line,
                    LOST_BODY,
                    f"{item.method} {item.uri}: the response body is empty, but its "
                    f"content-length says {declared} byte(s); the recorded answer was lost",
                    "convert the original vcrpy cassette again (llmcassette convert --force), "
                    "or record the cassette again",
                )
            continue
        if stopped_reading(item.end_extra):
            continue  # the test stopped reading on purpose: recording again changes nothing
        problem = item.end_extra.get("incomplete") or missing_terminator(
            item.stream, item.response_body, item.uri
        )
        if problem:
            yield Problem(
                name,
                item.line,
                TRUNCATED,
                f"{item.method} {item.uri}: {problem}",
                "record the cassette again; a stream cut short replays a partial answer",
            )
    if options.max_age is not None:
        from llmcassette.config import age_of, format_age

        age = age_of(cassette.header)
        if age is None:
            yield Problem(
                name,
                1,
                AGE_UNKNOWN,
                "the header has no readable created_at, so the cassette's age is unknown",
                "record the cassette again",
            )
        elif age > options.max_age:
            yield Problem(
                name,
                1,
                EXPIRED,
                f"recorded {cassette.header['created_at']}, {format_age(age)} ago; "
                f"max_age is {format_age(options.max_age)}",
                "record it again (pytest --record-mode=rewrite on the test that uses it, or "
                "python -m llmcassette.workflow --only expired)",
            )


def _placeholders(name: str, number: int, item: Interaction) -> Iterator[Problem]:
    """The ``{{fromRequest:...}}`` placeholders written into a response (by hand, or by a
    tool) that replay would fail on whatever the request: malformed, unterminated, an
    invalid regex. Found with replay's own functions."""
    from llmcassette._vcr.bridge import to_vcr
    from llmcassette.faults.placeholders import has_markers
    from llmcassette.transport.fault_responses import recorded_placeholder_errors

    if not has_markers(item.response_body):  # a stream's events are in it too
        return
    where = f"interaction #{number} of {os.path.basename(name)}"
    for error in recorded_placeholder_errors(to_vcr(item)[1], name, where).values():
        message = f"{error.location}: {error.problem}"
        yield Problem(name, item.line, PLACEHOLDER, message, error.hint or None, error.code)


def owning_test(cassette: Path) -> tuple[str | None, str] | None:
    """``(class name, function name)`` a pytest-recording cassette name stands for, or None
    when the file is not in a ``cassettes/<module>/`` folder."""
    if cassette.parent.parent.name != CASSETTE_DIR:
        return None
    name = cassette.name
    # An overrides sidecar belongs to the test of the cassette it sits beside.
    stem = name[: -len(SIDECAR_SUFFIX)] if name.endswith(SIDECAR_SUFFIX) else name.rsplit(".", 1)[0]
    stem = stem.split("[", 1)[0]  # parametrized tests: test_x[param-id]
    test_class, _, function = stem.rpartition(".")
    return (test_class or None), function


def orphan(cassette: Path) -> Problem | None:
    """A problem when no test module or test function uses this cassette any more.

    The check is static: the module ``<module>.py`` (beside the ``cassettes`` folder, or
    else anywhere under the folder holding it) must define ``def <test>`` (and
    ``class <Class>`` for ``<Class>.<test>`` names). A module that names the cassette file
    (e.g. ``@pytest.mark.vcr("shared.yaml")``) also counts as use.
    """
    if cassette.name.endswith(SIDECAR_SUFFIX):
        stem = cassette.name[: -len(SIDECAR_SUFFIX)]
        if not _cassettes_beside(cassette):
            return Problem(
                os.fspath(cassette),
                None,
                ORPHAN,
                f"no cassette {stem}.jsonl (or .yaml) beside this overrides file",
                "delete it, or rename it after the cassette it is for",
            )
    names = owning_test(cassette)
    if names is None:
        return None
    test_class, function = names
    folder = cassette.parent
    root = folder.parent.parent
    beside = root / f"{folder.name}.py"
    # pytest-recording puts the folder beside the module; a vcr_cassette_dir fixture may
    # keep it elsewhere in the project, so a module of that name under the root counts too.
    modules = [beside] if beside.is_file() else _modules_under(root).get(beside.name, [])
    name = os.fspath(cassette)
    hint = "delete the cassette, or move it to the name the test uses now"
    if not modules:
        problem = f"no test module {beside.name} beside or under {root} uses this cassette"
        return Problem(name, None, ORPHAN, problem, hint)
    missing = ""
    for module in modules:
        source = module.read_text(encoding="utf-8", errors="replace")
        if cassette.name in source or cassette.name.rsplit(".", 1)[0] in _strings(source):
            return None
        if not re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(function)}\s*\(", source, re.M):
            missing = f"{module} has no test function {function}"
        elif test_class and not re.search(rf"^\s*class\s+{re.escape(test_class)}\b", source, re.M):
            missing = f"{module} has no test class {test_class}"
        else:
            return None
    return Problem(name, None, ORPHAN, missing, hint)


_SKIPPED_DIRS = frozenset({"node_modules", "site-packages", "__pycache__", "build", "dist"})


@functools.lru_cache(maxsize=64)
def _modules_under(root: Path) -> dict[str, list[Path]]:
    """Python files under ``root`` by file name, outside hidden folders and virtualenvs."""
    found: dict[str, list[Path]] = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            d
            for d in subfolders
            if not d.startswith(".")
            and d not in _SKIPPED_DIRS
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )
        for file in files:
            if file.endswith(".py"):
                found.setdefault(file, []).append(Path(folder, file))
    return found


def _overrides(path: Path) -> Iterator[Problem]:
    """The problems of an overrides sidecar that replay would fail on, found with the
    functions replay runs: one that ``use_cassette`` refuses (it does not validate, or
    names an index its cassette beside it does not have: ``Overrides.resolve``), and a
    fault that cannot be carried out whatever the request (``fault_responses.unplayable``:
    a ``replace`` text the recorded response lacks, a malformed placeholder, a cut past
    the recorded events)."""
    from llmcassette.cli.paths import JSONL
    from llmcassette.faults import sidecar

    cassette = _cassette_beside(path)
    try:
        overrides = sidecar.load(path)
        count = None if cassette is None else _interaction_count(cassette)
        if overrides is None or count is None:
            return
        entries = overrides.resolve(count)
    except OverridesError as error:
        where = error.location
        message = f"{where}: {error.problem}" if where else error.problem
        yield Problem(
            os.fspath(path), None, OVERRIDES, message, error.hint or None, error.code, where or None
        )
        return
    if cassette is not None and cassette.kind == JSONL and cassette.cassette is not None:
        yield from _unplayable_faults(path, cassette.path, cassette.cassette, entries)


def _unplayable_faults(
    sidecar_path: Path, cassette_path: Path, cassette: Cassette, entries: list[Entry]
) -> Iterator[Problem]:
    """The faults of a sidecar's entries that replay could carry out for no request, each
    named by its JSON path in the sidecar (``entries[2].replace``)."""
    from urllib.parse import urlsplit

    from llmcassette._vcr.bridge import to_vcr
    from llmcassette.transport.fault_responses import unplayable

    for entry in entries:
        if entry.fault is None or entry.position is None:
            continue  # an interaction the sidecar leaves as recorded
        item = None if entry.recorded is None else cassette.interactions[entry.recorded]
        recorded = None if item is None else to_vcr(item)[1]
        url_path = urlsplit(item.uri).path if item else dict(entry.match).get("path", "")
        where = f"interaction #{entry.number} of {cassette_path.name}"
        errors = unplayable(
            recorded,
            entry.fault,
            url_path=url_path,
            cassette=os.fspath(cassette_path),
            where=where,
        )
        for field_name, error in errors:
            json_path = f"entries[{entry.position}].{field_name}"
            yield Problem(
                os.fspath(sidecar_path),
                None,
                OVERRIDES,
                f"{json_path}: {error.location}: {error.problem}",
                error.hint or None,
                error.code,
                json_path,
            )


def _cassette_beside(sidecar_path: Path) -> Opened | None:
    """The cassette of an overrides sidecar; None when it has none beside it (an orphan) or
    it cannot be read (reported as that file's problem)."""
    from llmcassette.cli.paths import open_file

    for cassette in _cassettes_beside(sidecar_path):
        try:
            return open_file(cassette)
        except CassetteFormatError:
            return None
    return None


def _cassettes_beside(sidecar_path: Path) -> list[Path]:
    """The cassette files an overrides sidecar can be for (``<name>.jsonl``, ``.yaml``...),
    those that exist, in ``SUFFIXES`` order."""
    stem = sidecar_path.name[: -len(SIDECAR_SUFFIX)]
    found = (sidecar_path.with_name(stem + suffix) for suffix in SUFFIXES)
    return [cassette for cassette in found if cassette.is_file()]


def _interaction_count(opened: Opened) -> int | None:
    """How many interactions an opened cassette holds; None when it is no cassette."""
    from llmcassette.cli.paths import JSONL, VCRPY

    if opened.kind == JSONL and opened.cassette is not None:
        return len(opened.cassette.interactions)
    if opened.kind == VCRPY and opened.vcrpy is not None:
        return len(opened.vcrpy["interactions"])
    return None


def _strings(source: str) -> set[str]:
    return set(re.findall(r"""["']([^"'\n]+)["']""", source))


def _opening_problem(error: CassetteFormatError) -> Problem:
    """The problem of a file ``cli.paths`` could not open: ``unreadable`` (exit 2) when it
    cannot be opened at all, ``version`` or ``format`` when it is not a readable cassette."""
    from llmcassette.cli.paths import UnreadableError

    if isinstance(error, UnreadableError):
        kind = UNREADABLE
    elif isinstance(error, CassetteVersionError):
        kind = VERSION
    else:
        kind = FORMAT
    fields = error.details()
    return Problem(
        error.path, error.line, kind, error.problem, error.hint, error.code, fields.get("path")
    )


def stale_temp_problem(temp: Path) -> Problem:
    """The problem of a temporary file a save left when its process was killed."""
    from llmcassette._vcr.tempfiles import parse

    parsed = parse(temp.name)
    cassette, pid = parsed if parsed is not None else ("?", 0)
    return Problem(
        os.fspath(temp),
        None,
        STALE_TEMP,
        f"temporary file of a save of {cassette} by process {pid}, which is no longer "
        "running (killed while saving)",
        "delete it; the next save of the cassette also removes it",
    )


def stale_temps(given: Path) -> Iterator[Path]:
    """The stale temporary files of cassette ``given``, or under folder ``given``."""
    from llmcassette._vcr.tempfiles import stale_in

    if not given.is_dir():
        yield from stale_in(given.parent, given.name)
        return
    for current, subfolders, _ in os.walk(given):
        subfolders[:] = sorted(d for d in subfolders if d not in _SKIPPED_DIRS)
        yield from stale_in(Path(current))


def check_opened(opened: Opened, options: Options, redactor: Any = None) -> list[Problem]:
    """Every problem of one cassette file ``cli.paths`` opened."""
    from llmcassette.cli.opened import scan_opened
    from llmcassette.cli.paths import JSONL, SIDECAR, VCRPY

    path = opened.path
    problems: list[Problem] = []
    if opened.kind == JSONL and opened.cassette is not None:
        problems.extend(_structure(os.fspath(path), opened.cassette, options))
    elif opened.kind == VCRPY and opened.vcrpy is not None:
        problems.extend(_vcrpy_structure(os.fspath(path), opened.vcrpy))
    elif opened.kind == SIDECAR:
        problems.extend(_overrides(path))
    if options.orphans:
        found = orphan(path)
        if found is not None:
            problems.append(found)
    if options.secrets and redactor is not None:
        for finding in scan_opened(redactor, opened):
            problem = f"{finding.json_path}: a value matches redaction rule {finding.rule!r}"
            fix = fix_secret(opened.kind)
            if finding.rule == TOO_DEEP_JSON:
                problem = (
                    f"{finding.json_path}: arrays and objects nest deeper than llmcassette "
                    "reads JSON (100 levels in a body), so no redaction rule could look inside"
                )
                fix = "record it again with a shallower body, or delete the interaction"
            problems.append(
                Problem(
                    finding.path, finding.line, SECRET, problem, fix, json_path=finding.json_path
                )
            )
    return problems


def _vcrpy_structure(name: str, loaded: dict[str, Any]) -> Iterator[Problem]:
    """An interaction of a vcrpy cassette that replay cannot load: not a mapping, or without
    its request or response (a file cut off after a request, a merge gone wrong)."""
    for number, entry in enumerate(loaded.get("interactions") or [], start=1):
        if not isinstance(entry, dict):
            problem = f"interaction #{number} is a {type(entry).__name__}, not a mapping"
        elif not isinstance(entry.get("request"), dict):
            problem = f"interaction #{number} has no request mapping"
        elif not isinstance(entry.get("response"), dict):
            problem = f"interaction #{number} has no response mapping"
        else:
            continue
        yield Problem(
            name,
            None,
            FORMAT,
            f"{problem}: replay cannot read this vcrpy cassette",
            "restore the file from version control, or delete it to record the test again",
            code=CassetteFormatError.code,
            json_path=f"interactions[{number - 1}]",
        )


def fix_secret(kind: str) -> str:
    """The advice for a secret found in a file of ``kind`` (``cli.paths``)."""
    from llmcassette.cli.paths import SIDECAR

    if kind == SIDECAR:  # written by hand: redact does not rewrite it
        return (
            "replace the value in the overrides file by hand, e.g. with <REDACTED:key> "
            "(the value is never printed)"
        )
    return "run `llmcassette redact PATH` (the value is never printed)"


def _mark_fixable(path: Path, problems: list[Problem]) -> list[Problem]:
    """Mark the format and truncated-stream problems ``llmcassette heal`` would repair: it
    is asked for its plan (nothing is written), which must read back clean."""
    if not path.name.endswith(".jsonl") or not any(
        problem.kind in (FORMAT, TRUNCATED) for problem in problems
    ):
        return problems
    from llmcassette.cassette import heal
    from llmcassette.errors import LlmCassetteError

    try:
        plan = heal.plan(path.read_bytes(), path)
    except (OSError, LlmCassetteError):
        return problems
    kinds = {repair.kind for repair in plan.repairs}
    fixed = {FORMAT} if plan.changes else set()
    if "terminator-synthesized" in kinds:
        fixed.add(TRUNCATED)
    return [
        dataclasses.replace(problem, fixable_by=HEAL) if problem.kind in fixed else problem
        for problem in problems
    ]


def with_sidecars(paths: list[str | os.PathLike[str]]) -> list[str | os.PathLike[str]]:
    """``paths`` with, after each cassette file named, the overrides sidecar beside it that
    replay would load with it (``faults.sidecar.path_for``), when there is one: a
    pre-commit hook names the changed cassette, and a sidecar whose indexes it no longer
    has fails replay. A sidecar also given, or under a folder given, is not added again."""
    from llmcassette.faults.sidecar import path_for

    given = [Path(raw) for raw in paths]
    folders = [path.resolve() for path in given if path.is_dir()]
    seen = {path.resolve() for path in given if not path.is_dir()}
    result: list[str | os.PathLike[str]] = []
    for raw, path in zip(paths, given, strict=True):
        result.append(raw)
        if path.is_dir() or path.name.endswith(SIDECAR_SUFFIX):
            continue
        sidecar = path_for(path)
        where = sidecar.resolve()
        if where in seen or not sidecar.is_file():
            continue
        if any(where.is_relative_to(folder) for folder in folders):
            continue
        seen.add(where)
        result.append(sidecar)
    return result


def check_paths(
    paths: Iterable[str | os.PathLike[str]], options: Options, command: str = "check"
) -> Iterator[tuple[Path, list[Problem]]]:
    """Each cassette under ``paths`` with its problems (folders are searched, ``cli.paths``);
    a file or folder that cannot be read is one with an ``unreadable`` problem."""
    from llmcassette.cli.opened import project_redactor
    from llmcassette.cli.paths import cassettes

    redactor = None
    if options.secrets:
        redactor = project_redactor()
    paths = list(paths)
    for opened in cassettes(with_sidecars(paths), command):  # command: who says a folder had none
        if isinstance(opened, CassetteFormatError):
            yield Path(opened.path), _mark_fixable(Path(opened.path), [_opening_problem(opened)])
        else:
            yield opened.path, _mark_fixable(opened.path, check_opened(opened, options, redactor))
    for given in map(Path, paths):
        for temp in stale_temps(given):
            yield temp, [stale_temp_problem(temp)]
