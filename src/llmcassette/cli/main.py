"""The ``llmcassette`` command."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from llmcassette._version import __version__
from llmcassette.cli.paths import JSONL, VCRPY, EmptyFileError, cassettes, read_text, report
from llmcassette.errors import CassetteFormatError, LlmCassetteError

if TYPE_CHECKING:
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


def _painter(args: argparse.Namespace) -> Callable[[str, str], str]:
    if not _color_enabled(getattr(args, "color", "auto"), sys.stdout):
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
    from llmcassette.cli.opened import scan_opened
    from llmcassette.config import project_redaction
    from llmcassette.redact import Redactor

    redactor = Redactor(project_redaction())
    total = files = 0
    unreadable = False
    records: list[dict[str, object]] = []
    for opened in cassettes(args.paths, "scan", (JSONL, VCRPY)):
        if isinstance(opened, CassetteFormatError):
            report(opened)
            unreadable = True
            continue
        findings = scan_opened(redactor, opened)
        files += 1
        for finding in findings:
            if args.json:  # the same fields as the text line: never the value
                records.append(dataclasses.asdict(finding))
            else:
                print(finding.render())  # file:line: json path: rule -- never the value
        total += len(findings)
    if args.json:
        print(json.dumps(records, indent=2))
    if total:
        print(
            f"llmcassette scan: {total} secret-looking value(s) in {files} file(s); "
            "run `llmcassette redact PATH...` to replace them",
            file=sys.stderr,
        )
    elif not args.quiet:
        print(f"llmcassette scan: no secrets found in {files} file(s)", file=sys.stderr)
    if unreadable:
        return 2
    return 1 if total else 0


def _redact(args: argparse.Namespace) -> int:
    from llmcassette.cli.opened import redact_opened
    from llmcassette.config import project_redaction
    from llmcassette.redact import Redactor

    config = project_redaction()
    status = 0
    for opened in cassettes(args.paths, "redact", (JSONL, VCRPY)):
        if isinstance(opened, CassetteFormatError):
            report(opened)
            status = 2
            continue
        path = opened.path
        if opened.compressed:
            report(
                CassetteFormatError(
                    path,
                    None,
                    "a gzip-compressed cassette; redact does not rewrite compressed files",
                    f"llmcassette convert {path} writes it as redacted JSONL",
                )
            )
            status = 2
            continue
        redactor = Redactor(config)  # placeholders are numbered per cassette
        try:
            text, changed = redact_opened(redactor, opened)
            if text is not None and not args.dry_run:
                from llmcassette._vcr.tempfiles import atomic_write

                atomic_write(path, text.encode("utf-8"))
        except OSError as error:
            print(f"{path}: cannot write: {error.strerror or error}; not changed", file=sys.stderr)
            status = 2
            continue
        except LlmCassetteError as error:
            print(f"{path}: cannot redact: {error}; not changed", file=sys.stderr)
            status = 2
            continue
        if text is None:
            print(f"{path}: unchanged")
            continue
        kinds = ", ".join(f"{kind} x{count}" for kind, count in sorted(redactor.counts.items()))
        verb = "would redact" if args.dry_run else "redacted"
        print(f"{path}: {verb} {changed} value(s)" + (f" ({kinds})" if kinds else ""))
    return status


def _check(args: argparse.Namespace) -> int:
    from llmcassette.cli.check import UNREADABLE, Options, check_paths
    from llmcassette.config import ConfigError, parse_age, project_expiry

    try:  # the same max_age the tests use, from [tool.llmcassette], unless given here
        max_age_setting = args.max_age or project_expiry().get("max_age")
        max_age = None if max_age_setting is None else parse_age(max_age_setting)
    except ConfigError as error:
        print(f"llmcassette check: {error}", file=sys.stderr)
        return 2
    options = Options(max_age=max_age, orphans=args.orphans, secrets=not args.no_secrets)
    records: list[dict[str, object]] = []
    problems = files = 0
    unreadable = False
    for _, found in check_paths(args.paths, options):
        files += 1
        problems += len(found)
        for problem in found:
            unreadable = unreadable or problem.kind == UNREADABLE
            if args.json:
                records.append(problem.as_json())
            else:
                print(problem.render(), file=sys.stderr if problem.kind == UNREADABLE else None)
    if args.json:
        print(json.dumps(records, indent=2))
    if not args.quiet:
        verdict = f"{problems} problem(s)" if problems else "no problems"
        print(f"llmcassette check: {verdict} in {files} file(s)", file=sys.stderr)
    if unreadable:
        return 2
    return 1 if problems else 0


def _open_jsonl(raw: str, command: str, *, empty_ok: bool = False) -> Cassette | None:
    """One llmcassette JSONL cassette opened by ``cli.paths``, or None after one line on
    stderr saying why it cannot be; ``empty_ok`` lets an empty file (git's /dev/null for an
    added or deleted file) stand for a cassette without interactions."""
    from llmcassette.cassette import jsonl as cassette_file

    opened = next(iter(cassettes([raw], command, (JSONL,))), None)
    if opened is None:  # a folder without cassettes: said so already
        return None
    if empty_ok and isinstance(opened, EmptyFileError):
        return cassette_file.Cassette({}, [])
    if isinstance(opened, LlmCassetteError):
        report(opened)
        return None
    return opened.cassette


def _show(args: argparse.Namespace) -> int:
    from llmcassette.cli.show import render, summarize

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
    if path.is_dir():
        print(f"{path}: a folder; llmcassette show takes one cassette file", file=sys.stderr)
        return 2
    cassette = _open_jsonl(args.cassette, "show")
    if cassette is None:
        return 2
    shown = [summarize(n, item) for n, item in enumerate(cassette.interactions, start=1)]
    if args.json:
        print(json.dumps([dataclasses.asdict(item) for item in shown], indent=2))
        return 0
    paint = _painter(args)
    blocks = []
    for item in shown:
        first, _, rest = render(item).partition("\n")
        blocks.append(paint(first, "header") + ("\n" + rest if rest else ""))
    print("\n\n".join(blocks))
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
        text = textconv(cassette_file.read(data, path))
    except LlmCassetteError as error:
        # Not a readable llmcassette file (another JSONL file, a damaged revision): git
        # still gets the text, under a line that says why it is not rendered.
        problem = getattr(error, "problem", str(error))
        text = f"(not rendered by llmcassette: {problem})\n" + data.decode("utf-8", "replace")
    sys.stdout.write(text)
    return 0


def _diff(args: argparse.Namespace) -> int:
    from llmcassette.cli.diff import diff_cassettes, render, to_json

    cassettes = []
    for raw in (args.a, args.b):
        if os.path.isdir(raw):
            print(f"{raw}: a folder; llmcassette diff compares two cassette files", file=sys.stderr)
            return 2
        cassette = _open_jsonl(raw, "diff", empty_ok=True)
        if cassette is None:
            return 2
        cassettes.append(cassette)
    result = diff_cassettes(*cassettes, a_name=args.a, b_name=args.b, everything=args.all)
    if args.json:
        print(json.dumps(to_json(result), indent=2, default=repr))
    else:
        print(render(result, _painter(args)))
    return 0 if result.equivalent else 1


def _migrate(args: argparse.Namespace) -> int:
    from llmcassette.cassette.migrations import FORMAT_VERSION
    from llmcassette.cli.migrate import migrate_file

    status = 0
    pending = files = 0
    for opened in cassettes(args.paths, "migrate", (JSONL,)):
        if isinstance(opened, LlmCassetteError):
            report(opened)
            print("  the file was not changed", file=sys.stderr)
            status = 2
            continue
        path = opened.path
        files += 1
        try:
            outcome = migrate_file(path, write=not args.check, opened=opened)
        except OSError as error:
            print(f"{path}: cannot write: {error.strerror or error}; not changed", file=sys.stderr)
            status = 2
            continue
        except LlmCassetteError as error:
            print(f"{error}\n  the file was not changed", file=sys.stderr)
            status = 2
            continue
        if outcome.changes:
            pending += 1
            verb = "would migrate" if args.check else "migrated"
            print(f"{path}: {verb} from format_version {outcome.version} to {FORMAT_VERSION}")
    if not args.quiet:
        verb = "need migrating" if args.check else "migrated"
        print(f"llmcassette migrate: {pending} of {files} cassette(s) {verb}", file=sys.stderr)
    if status:
        return status
    return 1 if args.check and pending else 0


def _convert(args: argparse.Namespace) -> int:
    from llmcassette._vcr.tempfiles import atomic_write
    from llmcassette.cli.convert import to_jsonl, to_vcrpy_json

    to_json = args.to == "vcrpy-json"
    status = 0
    for opened in cassettes(args.paths, "convert", (JSONL,) if to_json else (VCRPY,)):
        if isinstance(opened, CassetteFormatError):
            report(opened)
            status = 2
            continue
        source = opened.path
        stem = source.name[:-3] if source.name.endswith(".gz") else source.name
        stem = stem.rsplit(".", 1)[0]
        suffix = ".json" if to_json else ".jsonl"
        target = (Path(args.out) if args.out else source.parent) / (stem + suffix)
        if target.exists() and not args.force:
            print(f"{source}: {target} exists; use --force to replace it", file=sys.stderr)
            status = max(status, 1)
            continue
        try:
            text = to_vcrpy_json(opened) if to_json else to_jsonl(opened)
            atomic_write(target, text.encode("utf-8"))
        except CassetteFormatError as error:
            report(error)
            status = 2
            continue
        except (OSError, LlmCassetteError) as error:
            print(f"{source}: cannot convert: {error}", file=sys.stderr)
            status = 2
            continue
        print(f"{source} -> {target}")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``llmcassette`` command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="llmcassette", description=__doc__)
    parser.add_argument("--version", action="version", version=f"llmcassette {__version__}")
    commands = parser.add_subparsers(dest="command")
    scan = commands.add_parser(
        "scan", help="report secret-looking values in cassettes (exit 1 if any); never prints them"
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    scan.add_argument("-q", "--quiet", action="store_true", help="print findings only")
    scan.add_argument(
        "--json", action="store_true", help="print the findings as a JSON list (never the values)"
    )
    scan.set_defaults(run=_scan)
    redact = commands.add_parser(
        "redact", help="rewrite cassettes in place with the current redaction rules"
    )
    redact.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    redact.add_argument("-n", "--dry-run", action="store_true", help="only say what would change")
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
    check.add_argument("--json", action="store_true", help="print the problems as a JSON list")
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
    mode.add_argument("--json", action="store_true", help="machine-readable output")
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
    diff.add_argument("--json", action="store_true", help="machine-readable output")
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
    migrate.set_defaults(run=_migrate)
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
    convert.set_defaults(run=_convert)
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 0
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
