"""The ``llmcassette`` command."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from llmcassette._version import __version__
from llmcassette.cli import output
from llmcassette.cli.output import Output, UsageError, terminal_safe
from llmcassette.cli.paths import (
    JSONL,
    SIDECAR,
    VCRPY,
    EmptyFileError,
    cassettes,
    read_text,
    report,
)
from llmcassette.errors import CassetteFormatError, LlmCassetteError, SecretLeakError, record

if TYPE_CHECKING:
    from llmcassette._vcr.tempfiles import Flusher
    from llmcassette.cassette.jsonl import Cassette


def _color_enabled(choice: str, stream: TextIO) -> bool:
    """``--color always|never`` wins; for ``auto``, NO_COLOR, then FORCE_COLOR, then a TTY."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_STYLES = {"header": "1", "removed": "31", "added": "32", "changed": "33", "path": "36"}


def _paints(args: argparse.Namespace) -> bool:
    return _color_enabled(getattr(args, "color", "auto"), sys.stdout)


def _painter(args: argparse.Namespace) -> Callable[[str, str], str]:
    if not _paints(args):
        return lambda text, style: text
    return lambda text, style: f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def _add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the output: auto (the default) colours a terminal unless NO_COLOR is set",
    )


def _scan(args: argparse.Namespace) -> int:
    from llmcassette.cli.check import fix_secret
    from llmcassette.cli.opened import project_redactor, scan_opened

    out = Output("scan", args.json)
    redactor = project_redactor()
    files = 0
    for opened in cassettes(args.paths, "scan", (JSONL, VCRPY, SIDECAR)):
        if isinstance(opened, CassetteFormatError):
            out.failed(opened)
            continue
        files += 1
        for finding in scan_opened(redactor, opened):  # never the value
            found = record(
                output.SECRET,
                f"a value matches redaction rule {finding.rule!r}",
                file=finding.path,
                line=finding.line,
                path=finding.json_path,
                how_to_fix=fix_secret(opened.kind),
                rule=finding.rule,
            )
            out.finding(found, finding.render())  # file:line: json path: rule
    if not files and not out.errors:
        return _nothing_found(out, "scan", args.paths)
    # The paths that could not be scanned were reported above: the summary never calls
    # the result clean when some were not looked at.
    unscanned = f"; {len(out.errors)} path(s) could not be scanned" if out.errors else ""
    if out.findings:
        out.say(
            f"llmcassette scan: {len(out.findings)} secret-looking value(s) in {files} file(s)"
            f"{unscanned}; run `llmcassette redact PATH...` to replace them"
        )
    elif out.errors:
        scanned = f"no secrets found in {files} file(s)" if files else "nothing was scanned"
        out.say(f"llmcassette scan: {scanned}{unscanned} (see above)")
    elif not args.quiet:
        out.say(f"llmcassette scan: no secrets found in {files} file(s)")
    return out.done()


def _redact(args: argparse.Namespace) -> int:
    from llmcassette.cli.opened import LEFT_HINT, check_left, redact_opened
    from llmcassette.cli.progress import path_of, track
    from llmcassette.config import project_redaction
    from llmcassette.redact import Redactor

    out = Output("redact", args.json)
    config = project_redaction()
    files = cassettes(args.paths, "redact", (JSONL, VCRPY))
    for opened in track(files, "redact", as_json=args.json, name=path_of):
        if isinstance(opened, CassetteFormatError):
            out.failed(opened)
            continue
        path = opened.path
        if opened.compressed:
            out.failed(
                CassetteFormatError(
                    path,
                    None,
                    "a gzip-compressed cassette; redact does not rewrite compressed files",
                    f"llmcassette convert {path} writes it as redacted JSONL",
                )
            )
            continue
        redactor = Redactor(config)  # placeholders are numbered per cassette
        try:
            text, kinds = redact_opened(redactor, opened)
            if config.enabled and config.fail_closed:
                check_left(redactor, opened, text)  # never "redacted" with a secret left
            if text is not None and not args.dry_run:
                from llmcassette._vcr.tempfiles import atomic_write

                atomic_write(path, text.encode("utf-8"))
        except OSError as error:
            out.cannot_write(path, error)
            continue
        except SecretLeakError as error:
            error.hint = LEFT_HINT
            problem = str(error).split("\n  how to fix:", 1)[0]
            out.failed(error, f"{problem}\n  how to fix: {error.hint}\n  not changed")
            continue
        except LlmCassetteError as error:
            out.failed(error, f"{path}: cannot redact: {error}; not changed")
            continue
        changed = sum(kinds.values())  # values replaced: the sum of the kinds' counts
        done = {
            "file": str(path),
            "changed": changed,
            "written": text is not None and not args.dry_run,
        }
        if text is None:
            out.result(done, f"{path}: unchanged")
            continue
        done["kinds"] = kinds
        if not changed:  # headers the rules drop, or the header's redaction field
            verb = "would rewrite" if args.dry_run else "rewrote"
            out.result(done, f"{path}: {verb} it with the current rules; no value replaced")
            continue
        listed = ", ".join(f"{kind} x{count}" for kind, count in kinds.items())
        verb = "would redact" if args.dry_run else "redacted"
        out.result(done, f"{path}: {verb} {changed} value(s) ({listed})")
    return out.done()


def _check(args: argparse.Namespace) -> int:
    from llmcassette.cli.check import UNREADABLE, Options, check_paths
    from llmcassette.config import ConfigError, parse_age, project_expiry

    out = Output("check", args.json)
    try:  # the same max_age the tests use, from [tool.llmcassette], unless given here
        max_age_setting = args.max_age or project_expiry().get("max_age")
        max_age = None if max_age_setting is None else parse_age(max_age_setting)
    except ConfigError as error:
        out.failed(error, f"llmcassette check: {error}")
        return out.done()
    options = Options(max_age=max_age, orphans=args.orphans, secrets=not args.no_secrets)
    files = 0
    for _, found in check_paths(args.paths, options):
        files += 1
        for problem in found:
            if problem.kind == UNREADABLE:
                out.error(problem.as_json(), problem.render())
            else:
                out.finding(problem.as_json(), problem.render())
    if not files:
        return _nothing_found(out, "check", args.paths)
    if not args.quiet:
        problems = len(out.findings) + len(out.errors)
        verdict = f"{problems} problem(s)" if problems else "no problems"
        out.say(f"llmcassette check: {verdict} in {files} file(s)")
    return out.done()


def _nothing_found(out: Output, command: str, paths: Sequence[str]) -> int:
    """``check`` and ``scan`` found no cassette in any path given: a gate that looked at
    nothing must not pass (a CI step pointed at the wrong folder), so it is a usage error."""
    done = {"check": "checked", "scan": "scanned"}[command]
    problem = f"no cassettes found in {', '.join(paths)}; nothing was {done}"
    fix = "give the folder or files that hold the cassettes (e.g. tests/cassettes)"
    # Every path was a folder that has said "no cassettes found in FOLDER" already
    # (``cli.paths.each_file``): the text says the rest once, not the folders again.
    out.error(
        record(
            UsageError.code,
            problem,
            file=paths[0] if len(paths) == 1 else None,
            how_to_fix=fix,
        ),
        f"llmcassette {command}: nothing was {done}\n  how to fix: {fix}",
    )
    return out.done()


def _open_jsonl(raw: str, command: str, out: Output, *, empty_ok: bool = False) -> Cassette | None:
    """One llmcassette JSONL cassette opened by ``cli.paths``, or None after reporting why it
    cannot be (a folder, a file that is no readable cassette); ``empty_ok`` lets an empty
    file (git's /dev/null for an added or deleted file) stand for a cassette without
    interactions."""
    from llmcassette.cassette import jsonl as cassette_file

    if os.path.isdir(raw):
        takes = "compares two cassette files" if command == "diff" else "takes one cassette file"
        problem = f"a folder; llmcassette {command} {takes}"
        out.error(record(UsageError.code, problem, file=raw), f"{raw}: {problem}")
        return None
    opened = next(iter(cassettes([raw], command, (JSONL,))), None)
    if opened is None:  # pragma: no cover - a file is always opened or refused
        return None
    if empty_ok and isinstance(opened, EmptyFileError):
        return cassette_file.Cassette({}, [])
    if isinstance(opened, LlmCassetteError):
        out.failed(opened)
        return None
    return _shown(opened.cassette) if opened.cassette is not None else None


def _shown(cassette: Cassette) -> Cassette:
    """A cassette as ``show`` and ``diff`` print it: redacted again by the current rules,
    whatever its header says (rules version 1 left RS256 JWTs and ``accessToken`` keys; a
    hand-edited file may hold anything)."""
    from llmcassette.cli.opened import current_rules

    return current_rules(cassette, force=True) or cassette


def _printed() -> Callable[[str], str]:
    """What ``show`` and ``diff`` pass their text through before printing it: the current
    rules' secret shapes replaced, whatever the cassette's header says."""
    from llmcassette.cli.opened import project_redactor

    redactor = project_redactor()
    return redactor.text if redactor.config.enabled else str


def _show(args: argparse.Namespace) -> int:
    from llmcassette.cli.show import render_cassette, sessions_json, summarize

    path = Path(args.cassette)
    if args.textconv:
        return _textconv(path)
    if args.raw:
        try:
            sys.stdout.write(read_text(path))
        except CassetteFormatError as error:
            report(error)
            return 2
        return 0
    out = Output("show", args.json)
    out.shown = _printed()
    cassette = _open_jsonl(args.cassette, "show", out)
    if cassette is None:
        return out.done()
    shown = [summarize(n, item) for n, item in enumerate(cassette.interactions, start=1)]
    if args.json:
        sessions = sessions_json(shown)
        grouped = {} if sessions is None else {"sessions": sessions}  # none: as it always was
        return out.done(interactions=[dataclasses.asdict(item) for item in shown], **grouped)
    painted = render_cassette(shown, _painter(args))
    print(terminal_safe(out.shown(painted), colors=_paints(args)))
    return 0


def _textconv(path: Path) -> int:
    """``show --textconv``: git runs it on both sides of a diff; never fail the diff."""
    from llmcassette.cli.diff import textconv

    try:
        data = path.read_bytes()
    except OSError as error:
        print(f"{path}: cannot read: {error.strerror}", file=sys.stderr)
        return 2
    if not data.strip():
        return 0  # an empty file renders as nothing, as git shows an added file
    from llmcassette.cassette import jsonl as cassette_file

    try:
        text = textconv(_shown(cassette_file.read(data, path)))
    except LlmCassetteError as error:
        # Not a readable llmcassette file (another JSONL file, a damaged revision): git
        # still gets the text, under a line that says why it is not rendered.
        problem = getattr(error, "problem", str(error))
        text = f"(not rendered by llmcassette: {problem})\n" + data.decode("utf-8", "replace")
    # What git diff shows ends up in terminals and CI logs: redacted, as show's output is.
    sys.stdout.write(terminal_safe(_printed()(text)))
    return 0


def _diff(args: argparse.Namespace) -> int:
    from llmcassette.cli.diff import diff_cassettes, render, to_json

    out = Output("diff", args.json)
    out.shown = _printed()
    opened = []
    for raw in (args.a, args.b):
        cassette = _open_jsonl(raw, "diff", out, empty_ok=True)
        if cassette is None:
            return out.done()
        opened.append(cassette)
    result = diff_cassettes(*opened, a_name=args.a, b_name=args.b, everything=args.all)
    if not result.equivalent:
        totals = result.counts()
        summary = ", ".join(f"{totals[k]} {k}" for k in ("changed", "removed", "added"))
        problem = f"{args.a} and {args.b} differ: {summary} interaction(s)"
        how = "look at the interactions listed; record again if the change is not wanted"
        out.finding(record(output.CASSETTES_DIFFER, problem, file=args.b, how_to_fix=how), None)
    if args.json:
        return out.done(**to_json(result))
    painted = render(result, _painter(args))
    print(terminal_safe(out.shown(painted), colors=_paints(args)))
    return out.done()


def _migrate(args: argparse.Namespace) -> int:
    from llmcassette.cassette.migrations import FORMAT_VERSION
    from llmcassette.cli.migrate import migrate_file
    from llmcassette.cli.opened import refused

    out = Output("migrate", args.json)
    pending = files = 0
    for opened in cassettes(args.paths, "migrate", (JSONL,)):
        if isinstance(opened, LlmCassetteError):
            out.failed(opened, f"{opened}\n  the file was not changed")
            continue
        path = opened.path
        files += 1
        try:
            outcome = migrate_file(path, write=not args.check, opened=opened)
        except OSError as error:
            out.cannot_write(path, error)
            continue
        except SecretLeakError as error:
            out.failed(error, refused(error, "migrate", path))
            continue
        except LlmCassetteError as error:
            out.failed(error, f"{error}\n  the file was not changed")
            continue
        if not outcome.changes:
            out.result({"file": str(path), "from_version": outcome.version, "written": False}, None)
            continue
        pending += 1
        verb = "would migrate" if args.check else "migrated"
        text = f"{path}: {verb} from format_version {outcome.version} to {FORMAT_VERSION}"
        if args.check:
            found = record(
                output.NEEDS_MIGRATION,
                f"format_version {outcome.version}, older than {FORMAT_VERSION}",
                file=str(path),
                path="format_version",
                expected=FORMAT_VERSION,
                received=outcome.version,
                how_to_fix=f"llmcassette migrate {path}",
            )
            out.finding(found, text)
        else:
            out.result({"file": str(path), "from_version": outcome.version, "written": True}, text)
    if not args.quiet:
        verb = "need migrating" if args.check else "migrated"
        out.say(f"llmcassette migrate: {pending} of {files} cassette(s) {verb}")
    return out.done()


def _heal(args: argparse.Namespace) -> int:
    from llmcassette.cli.heal import run

    return run(args.paths, dry_run=args.dry_run, log=args.log, as_json=args.json, quiet=args.quiet)


def _report(args: argparse.Namespace) -> int:
    from llmcassette.cli.tree_report import run

    if args.html is not None:
        from llmcassette.cli.report_html import run as run_html

        return run_html(args.paths or ["."], args.html)
    color = _color_enabled(args.color, sys.stdout)
    return run(args.paths or ["."], as_json=args.json, markdown=args.markdown, color=color)


def _run(args: argparse.Namespace) -> int:
    from llmcassette.cli.run import run

    if args.json:
        out = Output("run", as_json=True)
        problem = (
            "run takes no --json: the program's own output goes to stdout, so no JSON "
            "document can be all of it; run's account is the paragraph it prints on stderr, "
            "and its exit code"
        )
        out.failed(UsageError("llmcassette run", problem, _RUN_USAGE))
        return out.done()
    command = list(args.command_line)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.record:
        cassette, mode = args.record, args.mode or "all"
    elif args.replay:
        cassette, mode = args.replay, args.mode or "none"
    elif args.cassette:
        cassette, mode = args.cassette, args.mode or "once"
    else:
        print("llmcassette run: give --record, --replay or --cassette CASSETTE", file=sys.stderr)
        return 2
    return run(command, cassette=cassette, mode=mode)


_RUN_USAGE = "usage: llmcassette run [--record PATH | --replay PATH | --cassette PATH] ..."


def _prune(args: argparse.Namespace) -> int:
    from llmcassette.cli.prune import run
    from llmcassette.config import ConfigError, parse_age, project_expiry

    max_age = None
    if args.expired:
        try:  # the max_age of `check` and of the tests, unless given here
            setting = args.max_age or project_expiry().get("max_age")
            if setting is None:
                raise ConfigError(
                    "--expired needs a max_age: give --max-age AGE, or set max_age in "
                    "[tool.llmcassette] in pyproject.toml"
                )
            max_age = parse_age(setting)
        except ConfigError as error:
            out = Output("prune", args.json)
            out.failed(error, f"llmcassette prune: {error}")
            return out.done()
    return run(args.paths or ["."], max_age=max_age, yes=args.yes, as_json=args.json)


def _convert(args: argparse.Namespace) -> int:
    import functools

    from llmcassette.cli.convert import convert_found
    from llmcassette.cli.output import replay
    from llmcassette.cli.paths import default_jobs, each_file
    from llmcassette.cli.progress import path_of, track

    out = Output("convert", args.json)
    work = functools.partial(
        convert_found,
        to_json=args.to == "vcrpy-json",
        folders=[Path(raw) for raw in args.paths if Path(raw).is_dir()],
        out_dir=args.out,
        force=args.force,
    )
    from llmcassette._vcr.tempfiles import Flusher

    done = each_file(args.paths, "convert", work, jobs=args.jobs or default_jobs())
    # Each file written is flushed in the background as its result comes (the parent waits
    # for its processes meanwhile), and all of it is on disk before the command exits.
    flusher = Flusher()
    try:
        for converted in track(done, "convert", as_json=args.json, name=path_of):
            if isinstance(converted, CassetteFormatError):
                out.failed(converted)  # a folder that cannot be listed
                continue
            replay(converted.calls, out)
            flusher.file(converted.written, converted.folders)
    finally:  # interrupted too: what was written and said is flushed
        _flush_converted(out, flusher)
    return out.done()


def _flush_converted(out: Output, flusher: Flusher) -> None:
    """Every file ``convert`` wrote, and the folder entries naming them, on disk before it
    exits: users delete their vcrpy files once it has. Its lines were printed as each
    file was written; a failed flush is an error (exit 2) naming the file."""
    try:
        flusher.wait()
    except OSError as error:
        path = error.filename if error.filename is not None else "a converted file"
        problem = f"cannot flush to disk: {error.strerror or error}"
        fix = "check the disk, then convert again with --force: the file may be incomplete"
        out.error(
            record(output.CANNOT_WRITE, problem, file=str(path), how_to_fix=fix),
            f"{path}: {problem}\n  how to fix: {fix}",
        )


def _positive(raw: str) -> int:
    """An argparse type: a whole number from 1."""
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, not {raw!r}")
    return int(raw)


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are ``UsageError``s, so that ``main`` can print
    them as text or, with ``--json``, as a JSON document."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message, self.format_usage())


def _add_json(parser: argparse._ActionsContainer, what: str) -> None:
    parser.add_argument(
        "--json", action="store_true", help=f"print {what} as one JSON document (docs/cli.md)"
    )


DESCRIPTION = (
    "Read, check, compare and convert llmcassette cassettes. Exit codes: 0 nothing found, "
    "1 findings, 2 the command could not run; --json prints one JSON document."
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``llmcassette`` command line; returns the exit code."""
    parser = _Parser(prog="llmcassette", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"llmcassette {__version__}")
    # COMMAND, not the {scan,redact,...} list, which outgrows 80 columns as commands are added.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    scan = commands.add_parser(
        "scan", help="report secret-looking values in cassettes (exit 1 if any); never prints them"
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    scan.add_argument("-q", "--quiet", action="store_true", help="print findings only")
    _add_json(scan, "the findings (never the values)")
    scan.set_defaults(run=_scan)
    redact = commands.add_parser(
        "redact", help="rewrite cassettes in place with the current redaction rules"
    )
    redact.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    redact.add_argument("-n", "--dry-run", action="store_true", help="only say what would change")
    _add_json(redact, "what was (or would be) redacted")
    redact.set_defaults(run=_redact)
    check = commands.add_parser(
        "check",
        help="find cassettes that cannot be trusted: broken structure, newer format, streams "
        "cut short, secrets, and optionally expired or orphaned ones (exit 1 if any)",
        description="Exit codes: 0 no problems, 1 problems found, 2 a path cannot be read "
        "or the options are wrong.",
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    check.add_argument("-q", "--quiet", action="store_true", help="print problems only")
    _add_json(check, "the problems")
    check.add_argument(
        "--max-age",
        metavar="AGE",
        help="report cassettes whose header's created_at is older than AGE (30d, 12h, 2w, or "
        "seconds); the default is max_age from [tool.llmcassette] in pyproject.toml, if set",
    )
    check.add_argument(
        "--orphans",
        action="store_true",
        help="report cassettes under cassettes/<module>/ whose test module or test function "
        "no longer exists",
    )
    check.add_argument(
        "--no-secrets", action="store_true", help="do not scan for secret-looking values"
    )
    check.set_defaults(run=_check)
    show = commands.add_parser(
        "show", help="print a cassette as a conversation: requests, assembled answers, usage"
    )
    show.add_argument("cassette", metavar="CASSETTE", help="an llmcassette .jsonl file")
    mode = show.add_mutually_exclusive_group()
    mode.add_argument("--raw", action="store_true", help="print the cassette's lines as they are")
    _add_json(mode, "the interactions")
    mode.add_argument(
        "--textconv",
        action="store_true",
        help="one line per field, no timings: for git diff (diff.llmcassette.textconv)",
    )
    _add_color(show)
    show.set_defaults(run=_show)
    diff = commands.add_parser(
        "diff",
        help="what changed between two cassettes: interactions added, removed or changed, "
        "and the JSON paths that differ (exit 1 if any)",
        description="Exit codes: 0 equivalent, 1 different, 2 a file cannot be read.",
    )
    diff.add_argument("a", metavar="A", help="the old cassette")
    diff.add_argument("b", metavar="B", help="the new cassette")
    _add_json(diff, "the differences")
    diff.add_argument(
        "--all",
        action="store_true",
        help="also compare what changes on every recording: timings, created_at, volatile "
        "headers, the numbering of and values behind redaction placeholders",
    )
    _add_color(diff)
    diff.set_defaults(run=_diff)
    migrate = commands.add_parser(
        "migrate",
        help="rewrite cassettes of older format versions as the current version, in place",
        description="Exit codes: 0 done (or nothing to do), 1 with --check when a file would "
        "change, 2 a file cannot be read or is newer than this llmcassette.",
    )
    migrate.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    migrate.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a file would change"
    )
    migrate.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    _add_json(migrate, "what was (or would be) migrated")
    migrate.set_defaults(run=_migrate)
    heal = commands.add_parser(
        "heal",
        help="repair known defects of JSONL cassettes in place: a missing stream terminator, "
        "end-line counts, duplicated events, JSON or streams stored as text or base64, "
        "[tool.llmcassette.heal] renames; each repair is logged",
        description="Exit codes: 0 done (or nothing to do), 2 a file cannot be read or "
        "repaired (it is left as it was). The log is <cassette>.heal.log beside each "
        "cassette unless --log is given.",
    )
    heal.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    heal.add_argument("--dry-run", action="store_true", help="change nothing; print the plan")
    heal.add_argument("--log", metavar="FILE", help="append every repair to FILE (JSON lines)")
    heal.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    _add_json(heal, "the repairs made (or planned)")
    heal.set_defaults(run=_heal)
    report_command = commands.add_parser(
        "report",
        help="summarize a tree of cassettes: interactions, models, tokens, age, size, tests "
        "and problems per cassette, with totals, the largest, oldest and orphans",
        description="Exit codes: 0 no file has a problem, 1 one has (the problems column, "
        "the other files with problems; the findings of --json), 2 a file cannot be read.",
    )
    report_command.add_argument(
        "paths", nargs="*", metavar="DIR", help="folders or files (default: .)"
    )
    style = report_command.add_mutually_exclusive_group()
    _add_json(style, "the report (its schema: llmcassette/cli/report.schema.json)")
    style.add_argument("--markdown", action="store_true", help="a Markdown table, for CI")
    style.add_argument(
        "--html",
        metavar="OUT",
        help="write one self-contained page to OUT: the table (sort, filter) and each "
        "cassette's conversations, stream timing and findings",
    )
    _add_color(report_command)
    report_command.set_defaults(run=_report)
    run_command = commands.add_parser(
        "run",
        help="run a Python program with a cassette active in it (no change to the program): "
        "--record, --replay or --cassette with --mode; ends with what was recorded or replayed",
        description="Exit codes: the program's, 1 when it exited 0 but a request matched no "
        "recorded interaction or the cassette failed at exit, 2 the command could not start.",
    )
    which = run_command.add_mutually_exclusive_group()
    which.add_argument("--record", metavar="PATH", help="record the cassette afresh (mode all)")
    which.add_argument("--replay", metavar="PATH", help="replay the cassette only (mode none)")
    which.add_argument(
        "--cassette", metavar="PATH", help="the cassette, with --mode (default once)"
    )
    run_command.add_argument(
        "--mode", choices=("all", "once", "new_episodes", "none"), help="the record mode"
    )
    run_command.add_argument(
        "command_line", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the program"
    )
    # Refused with a reason (not argparse's "unrecognized arguments"): every other command
    # takes --json, but the program's output goes to stdout.
    run_command.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    run_command.set_defaults(run=_run)
    prune = commands.add_parser(
        "prune",
        help="delete cassettes no test uses (and, with --expired, expired ones) with their "
        "sidecars; lists them only, unless --yes",
        description="Exit codes: 0 done (or listed), 2 a file cannot be read (it is kept) "
        "or deleted, or the options are wrong.",
    )
    prune.add_argument("paths", nargs="*", metavar="DIR", help="folders or files (default: .)")
    prune.add_argument("--yes", action="store_true", help="delete; without it nothing is")
    prune.add_argument(
        "--expired", action="store_true", help="also cassettes older than max_age (see check)"
    )
    prune.add_argument("--max-age", metavar="AGE", help="the age --expired uses (30d, 12h, 2w)")
    _add_json(prune, "what was (or would be) deleted")
    prune.set_defaults(run=_prune)
    convert = commands.add_parser(
        "convert",
        help="vcrpy YAML/JSON cassettes (also gzip-compressed, parsed_body style) to JSONL, "
        "or JSONL back to vcrpy JSON",
    )
    convert.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    convert.add_argument(
        "--to", choices=("jsonl", "vcrpy-json"), default="jsonl", help="the target format"
    )
    convert.add_argument("--out", metavar="DIR", help="write beside the source unless given")
    convert.add_argument("--force", action="store_true", help="replace an existing target")
    convert.add_argument(
        "--jobs",
        type=_positive,
        metavar="N",
        help="convert in up to N processes (default: one per CPU; a small tree takes one)",
    )
    _add_json(convert, "what was converted")
    convert.set_defaults(run=_convert)
    # `llmcassette COMMAND --help` opens with what the command does, as the list says it.
    for listed in commands._choices_actions:
        subparser = commands.choices[listed.dest]
        what = f"{(listed.help or '')[:1].upper()}{(listed.help or '')[1:]}."
        subparser.description = f"{what} {subparser.description or ''}".strip()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # as parse_args says it, but by the command they follow, with its usage
            command: str | None = getattr(args, "command", None)
            after = command in argv and argv.index(extra[0]) > argv.index(command or "")
            said_by = commands.choices[command] if command and after else parser
            said_by.error(f"unrecognized arguments: {' '.join(extra)}")
    except UsageError as error:
        if "--json" not in argv:  # as argparse prints it
            print(f"{error.usage.rstrip()}\n{error}", file=sys.stderr)
            return 2
        command = error.prog.removeprefix("llmcassette").strip()
        named = [arg for arg in argv if arg in commands.choices]  # an unknown flag's command
        out = Output(command or (named[0] if named else None), as_json=True)
        out.failed(error)
        return out.done()
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 0
    try:
        code: int = args.run(args)
    except LlmCassetteError as error:  # e.g. a [tool.llmcassette] setting it cannot use
        out = Output(args.command, args.json)
        out.failed(error, f"llmcassette {args.command}: {error}")
        return out.done()
    except Exception as error:  # a bug: no command expects it
        return _internal_error(args, error)
    return code


#: Set (to anything) to let an internal error through with its whole traceback.
TRACEBACK_ENV = "LLMCASSETTE_TRACEBACK"


def _internal_error(args: argparse.Namespace, error: Exception) -> int:
    """An exception no command expected (a bug), said by its type and where it was raised:
    not by its message, which may quote a value of a cassette (Python's URL parser quotes
    the text it refuses, a URL's password maybe). ``LLMCASSETTE_TRACEBACK`` lets it
    through whole, for a bug report."""
    if os.environ.get(TRACEBACK_ENV):
        raise error
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    problem = (
        f"internal error: {type(error).__name__}{where} (its message is not shown: it may "
        "quote a value of a cassette)"
    )
    fix = (
        f"report it as a bug with the command that led to it; {TRACEBACK_ENV}=1 shows the "
        "whole traceback, values included"
    )
    out = Output(args.command, bool(getattr(args, "json", False)))
    out.error(
        record(LlmCassetteError.code, problem, how_to_fix=fix),
        f"llmcassette {args.command}: {problem}\n  how to fix: {fix}",
    )
    return out.done()


if __name__ == "__main__":
    sys.exit(main())
