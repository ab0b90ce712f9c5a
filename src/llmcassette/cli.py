"""The ``llmcassette`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__
from .errors import LlmCassetteError


def _scan(args: argparse.Namespace) -> int:
    from .redact import Redactor, project_config
    from .redact.files import cassette_paths, scan

    redactor = Redactor(project_config())
    total = files = 0
    for path in cassette_paths(args.paths):
        try:
            findings = scan(redactor, path)
        except (OSError, ValueError, LlmCassetteError) as error:
            print(f"{path}: cannot scan: {type(error).__name__}", file=sys.stderr)
            return 2
        files += 1
        for finding in findings:
            print(finding.render())  # file:line: json path: rule -- never the value
        total += len(findings)
    if total:
        print(
            f"llmcassette scan: {total} secret-looking value(s) in {files} file(s); "
            "run `llmcassette redact PATH...` to replace them",
            file=sys.stderr,
        )
        return 1
    if not args.quiet:
        print(f"llmcassette scan: no secrets found in {files} file(s)", file=sys.stderr)
    return 0


def _redact(args: argparse.Namespace) -> int:
    from .persister import atomic_write
    from .redact import Redactor, project_config
    from .redact.files import cassette_paths, redact_file

    config = project_config()
    for path in cassette_paths(args.paths):
        redactor = Redactor(config)  # placeholders are numbered per cassette
        try:
            text, changed = redact_file(redactor, path)
        except (OSError, ValueError, LlmCassetteError) as error:
            print(f"{path}: cannot redact: {type(error).__name__}", file=sys.stderr)
            return 2
        if text is None:
            print(f"{path}: unchanged")
            continue
        if not args.dry_run:
            atomic_write(path, text.encode("utf-8"))
        kinds = ", ".join(f"{kind} x{count}" for kind, count in sorted(redactor.counts.items()))
        verb = "would redact" if args.dry_run else "redacted"
        print(f"{path}: {verb} {changed} value(s)" + (f" ({kinds})" if kinds else ""))
    return 0


def _check(args: argparse.Namespace) -> int:
    from .format import cassette_file
    from .redact.files import cassette_paths
    from .stream.integrity import missing_terminator

    problems = files = 0
    for path in cassette_paths(args.paths):
        if path.suffix != ".jsonl":
            continue
        files += 1
        try:
            cassette = cassette_file.read(path.read_bytes(), path)
        except OSError as error:
            print(f"{path}: cannot read: {error.strerror}")
            problems += 1
            continue
        except LlmCassetteError as error:
            print(error)
            problems += 1
            continue
        for item in cassette.interactions:
            if item.stream is None:
                continue
            problem = item.end_extra.get("incomplete") or missing_terminator(
                item.stream, item.response_body
            )
            if problem:
                print(f"{path}:{item.line}: {item.method} {item.uri}: {problem}")
                problems += 1
    if not args.quiet:
        verdict = f"{problems} problem(s)" if problems else "no problems"
        print(f"llmcassette check: {verdict} in {files} cassette(s)", file=sys.stderr)
    return 1 if problems else 0


def _show(args: argparse.Namespace) -> int:
    import dataclasses
    import json
    from pathlib import Path

    from .format import cassette_file
    from .show import render, summarize

    path = Path(args.cassette)
    try:
        data = path.read_bytes()
        if args.raw:
            sys.stdout.write(data.decode("utf-8"))
            return 0
        cassette = cassette_file.read(data, path)
    except OSError as error:
        print(f"{path}: cannot read: {error.strerror}", file=sys.stderr)
        return 2
    except LlmCassetteError as error:
        print(error, file=sys.stderr)
        return 2
    shown = [summarize(n, item) for n, item in enumerate(cassette.interactions, start=1)]
    if args.json:
        print(json.dumps([dataclasses.asdict(item) for item in shown], indent=2))
    else:
        print("\n\n".join(render(item) for item in shown))
    return 0


def _convert(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .convert import to_jsonl, to_vcrpy_json
    from .persister import atomic_write

    status = 0
    for raw in args.paths:
        source = Path(raw)
        stem = source.name[:-3] if source.name.endswith(".gz") else source.name
        stem = stem.rsplit(".", 1)[0]
        suffix = ".json" if args.to == "vcrpy-json" else ".jsonl"
        target = (Path(args.out) if args.out else source.parent) / (stem + suffix)
        if target.exists() and not args.force:
            print(f"{source}: {target} exists; use --force to replace it", file=sys.stderr)
            status = 1
            continue
        try:
            text = to_vcrpy_json(source) if args.to == "vcrpy-json" else to_jsonl(source)
        except (OSError, LlmCassetteError) as error:
            print(f"{source}: cannot convert: {error}", file=sys.stderr)
            status = 2
            continue
        atomic_write(target, text.encode("utf-8"))
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
    scan.set_defaults(run=_scan)
    redact = commands.add_parser(
        "redact", help="rewrite cassettes in place with the current redaction rules"
    )
    redact.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    redact.add_argument("-n", "--dry-run", action="store_true", help="only say what would change")
    redact.set_defaults(run=_redact)
    check = commands.add_parser(
        "check",
        help="check cassettes' structure and find streams that were cut short (exit 1 if any)",
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or folders")
    check.add_argument("-q", "--quiet", action="store_true", help="print problems only")
    check.set_defaults(run=_check)
    show = commands.add_parser(
        "show", help="print a cassette as a conversation: requests, assembled answers, usage"
    )
    show.add_argument("cassette", metavar="CASSETTE", help="an llmcassette .jsonl file")
    show.add_argument("--raw", action="store_true", help="print the cassette's lines as they are")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(run=_show)
    convert = commands.add_parser(
        "convert",
        help="vcrpy YAML/JSON cassettes (also gzip-compressed, parsed_body style) to JSONL, "
        "or JSONL back to vcrpy JSON",
    )
    convert.add_argument("paths", nargs="+", metavar="PATH", help="cassette files")
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
