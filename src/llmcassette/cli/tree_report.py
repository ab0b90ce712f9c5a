"""``llmcassette report``: one summary over a tree of cassettes, for people, JSON or Markdown.

Per cassette: its interactions, hosts and models, whether any answer streamed, the tokens
in and out that the recorded ``usage`` fields hold, age, size, format and redaction
version, the test that uses it (by pytest-recording's naming rule,
``cassettes/<module>/[<Class>.]<test>.jsonl``) and how many ``check`` findings it has
(orphans included). Then totals, the largest and the oldest cassettes, and the orphans.

Tokens come from the usage the answer reports, read as ``llmcassette show`` assembles it:
a JSON body's ``usage``; the last OpenAI chunk carrying ``usage``; Responses'
``response.completed``; Anthropic's ``message_start`` updated by ``message_delta``; Gemini's
``usageMetadata``; Bedrock's ``metadata.usage``; Ollama's ``*_count``. Input is the first of
``INPUT_KEYS`` the usage has, output the first of ``OUTPUT_KEYS``: cached and reasoning
token counts are parts of those, never added again. The ``--json`` document follows
``report.schema.json``, shipped beside this module.

A vcrpy cassette (YAML or JSON) is reported as ``llmcassette convert`` would write it,
redacted by the project's rules and read back (``vcrpy_cassette``): its interactions,
models, streams and tokens, dated by its responses' ``Date`` headers, with its ``check``
problems; ``format`` says ``vcrpy`` and the document lists it under ``vcrpy``, to be
converted. One that convert would refuse is still counted, with its interactions and
problems.

A file with problems that is no cassette, an overrides sidecar or the temporary file of a
save that was killed, is no row of the table: it is listed under ``others`` with how many
problems it has, which count in the totals and are findings as ``check`` reports them. The
totals count every problem ``check`` finds under the paths, those of a file that cannot be
read as a cassette (an error, exit 2) included.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmcassette.cli.check import UNREADABLE, Options, check_paths, owning_test
from llmcassette.cli.output import Output, terminal_safe
from llmcassette.cli.paths import JSONL, VCRPY, Opened, cassettes
from llmcassette.errors import CassetteFormatError

SCHEMA = Path(__file__).with_name("report.schema.json")
INPUT_KEYS = (
    "prompt_tokens",
    "input_tokens",
    "promptTokenCount",
    "inputTokens",
    "prompt_eval_count",
)
OUTPUT_KEYS = (
    "completion_tokens",
    "output_tokens",
    "candidatesTokenCount",
    "outputTokens",
    "eval_count",
)
WIDTH = 100  # the terminal table fits 100 columns


def usage_tokens(usage: Any) -> tuple[int, int]:
    """``(input, output)`` tokens of one recorded usage object (0 for what it lacks)."""
    if not isinstance(usage, dict):
        return 0, 0

    def first(keys: tuple[str, ...]) -> int:
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return 0

    return first(INPUT_KEYS), first(OUTPUT_KEYS)


def _body_usage(item: Any) -> Any:
    """The top-level ``usage`` of a JSON body no provider shape was recognized in (e.g.
    OpenAI's /responses/compact), so its tokens are not lost."""
    if item.stream is not None:
        return None
    try:
        body = json.loads(item.response_body)
    except ValueError:
        return None
    return body.get("usage") if isinstance(body, dict) else None


def summarize_cassette(path: Path, cassette: Any, size: int, problems: int) -> dict[str, Any]:
    """One cassette's entry of the report (see the module docstring)."""
    from llmcassette.cli.show import summarize
    from llmcassette.config import age_of

    hosts: set[str] = set()
    models: set[str] = set()
    tokens_in = tokens_out = 0
    streamed = False
    for number, item in enumerate(cassette.interactions, 1):
        shown = summarize(number, item)
        hosts.add(urllib.parse.urlsplit(item.uri).hostname or "")  # the reader checked it
        if shown.model:
            models.add(shown.model)
        streamed = streamed or item.stream is not None
        used_in, used_out = usage_tokens(shown.answer.usage or _body_usage(item))
        tokens_in += used_in
        tokens_out += used_out
    header = cassette.header
    redaction = header.get("redaction")
    owner = owning_test(path)
    return {
        "file": os.fspath(path),
        "interactions": len(cassette.interactions),
        "hosts": sorted(hosts - {""}),
        "models": sorted(models),
        "streamed": streamed,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "created_at": header.get("created_at"),
        "age_seconds": age_of(header),
        "size": size,
        "format_version": header.get("format_version"),
        "redaction_version": redaction.get("version") if isinstance(redaction, dict) else None,
        "test": None if owner is None else ".".join(filter(None, owner)),
        "problems": problems,
    }


def vcrpy_cassette(opened: Opened) -> Any:
    """The vcrpy cassette ``opened`` as ``llmcassette convert`` would write it (redacted by
    the project's rules), read back; its ``created_at`` is when its responses' ``Date``
    headers say it was recorded, or absent. None when convert would refuse the file."""
    from llmcassette.cassette import jsonl as cassette_file
    from llmcassette.cassette import vcrpy_files
    from llmcassette.cli.convert import jsonl_of
    from llmcassette.errors import LlmCassetteError

    try:
        text, _ = jsonl_of(opened)
        converted = cassette_file.read(text.encode("utf-8"), opened.path)
    except LlmCassetteError:  # check reports what it can of the file
        return None
    header = dict(converted.header)
    recorded = vcrpy_files.recorded_on(item.response_headers for item in converted.interactions)
    if recorded is None:  # convert would date it now: the recording's age is unknown
        header.pop("created_at", None)
    else:
        header["created_at"] = recorded
    return cassette_file.Cassette(header, converted.interactions)


def _vcrpy_entry(opened: Opened, cassette: Any, problems: int) -> dict[str, Any]:
    """The entry of a vcrpy cassette (``vcrpy_cassette``): no llmcassette format or
    redaction version, since the file on disk is neither."""
    from llmcassette.cassette import jsonl as cassette_file

    assert opened.vcrpy is not None
    read = cassette if cassette is not None else cassette_file.Cassette({}, [])
    entry = summarize_cassette(opened.path, read, len(opened.data), problems)
    if cassette is None:  # refused by convert: what it holds is counted, not read
        entry["interactions"] = len(opened.vcrpy["interactions"])
    entry["format_version"] = entry["redaction_version"] = None
    return entry


def build(
    paths: Sequence[str], out: Output, details: dict[str, tuple[Any, list[Any]]] | None = None
) -> dict[str, Any]:
    """The report document of the cassettes under ``paths``; unreadable files go to ``out``.

    ``details``, when given, receives per cassette file its opened cassette and its check
    problems (what ``report --html`` shows beyond the document)."""
    from llmcassette.cli.progress import path_of, track

    problems: dict[Path, list[Any]] = {}
    # Every problem check reports, secrets included (a key in a cassette is the worst).
    checked = check_paths(paths, Options(orphans=True, secrets=True), "report")
    for path, found in track(
        checked,
        "report",
        as_json=out.as_json,
        name=lambda done: os.fspath(done[0]),
        what="checking",
    ):
        problems[path] = found
    entries: list[dict[str, Any]] = []
    # check_paths has said which folders hold no cassettes: this pass says nothing again.
    with contextlib.redirect_stderr(io.StringIO()):
        opened_files = list(cassettes(paths, "report", (JSONL, VCRPY)))
    failed: set[Path] = set()
    for opened in track(opened_files, "report", as_json=out.as_json, name=path_of):
        if isinstance(opened, CassetteFormatError):
            failed.add(Path(opened.path))
            out.failed(opened)
            if details is not None:  # no cassette: only what check found, or the error
                details[opened.path] = (None, problems.get(Path(opened.path)) or [opened])
            continue
        found = problems.get(opened.path, [])
        for problem in found:  # what the table counts: findings, as check reports them
            out.finding(problem.as_json(), None)
        if opened.kind == VCRPY:
            cassette = vcrpy_cassette(opened)
            entry = _vcrpy_entry(opened, cassette, len(found))
        else:
            cassette = opened.cassette
            entry = summarize_cassette(opened.path, cassette, len(opened.data), len(found))
        entry["format"] = "vcrpy" if opened.kind == VCRPY else "jsonl"
        entry["orphan"] = any(problem.kind == "orphan" for problem in found)
        entries.append(entry)
        if details is not None:
            details[entry["file"]] = (cassette, found)
    # What check finds in a file that is no row (a sidecar, a killed save's temporary
    # file): listed apart, each problem a finding (an error when it cannot be read).
    rows = {Path(entry["file"]) for entry in entries}
    others: list[dict[str, Any]] = []
    for path, found in problems.items():
        if not found or path in rows or path in failed:
            continue
        for problem in found:
            if problem.kind == UNREADABLE:
                out.error(problem.as_json(), problem.render())
            else:
                out.finding(problem.as_json(), None)
        others.append({"file": os.fspath(path), "problems": len(found)})
        if details is not None:
            details[os.fspath(path)] = (None, found)
    dated = [e for e in entries if e["age_seconds"] is not None]
    return {
        "cassettes": entries,
        "totals": {
            "cassettes": len(entries),
            "interactions": sum(e["interactions"] for e in entries),
            "tokens_in": sum(e["tokens_in"] for e in entries),
            "tokens_out": sum(e["tokens_out"] for e in entries),
            "size": sum(e["size"] for e in entries),
            # Every problem check finds, those of a file no row stands for included.
            "problems": sum(len(found) for found in problems.values()),
        },
        "largest": [e["file"] for e in sorted(entries, key=lambda e: -e["size"])[:5]],
        "oldest": [e["file"] for e in sorted(dated, key=lambda e: -e["age_seconds"])[:5]],
        "orphans": [e["file"] for e in entries if e["orphan"]],
        "vcrpy": [e["file"] for e in entries if e["format"] == "vcrpy"],
        "others": others,
    }


#: What the text and Markdown reports say above the vcrpy cassettes they list.
VCRPY_NOTE = "vcrpy cassettes, read as convert would write them (llmcassette convert PATH)"
#: ... and above the files with problems that are no cassette (``others``).
OTHERS_NOTE = "other files with problems (llmcassette check PATH says what is wrong)"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    for unit, length in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= length:
            return f"{int(seconds // length)}{unit}"
    return f"{int(seconds)}s"


def _size(size: int) -> str:
    return f"{size / 1024:.1f}K" if size >= 1024 else f"{size}B"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def render_text(document: dict[str, Any], color: bool) -> str:
    """The report as an aligned table of at most ``WIDTH`` columns."""
    columns = "{:<36} {:>4} {:<18} {:>3} {:>7} {:>7} {:>5} {:>7} {:>4}"
    head = columns.format(
        "cassette", "int", "model", "str", "tok in", "tok out", "age", "size", "prob"
    )
    lines = [f"\x1b[1m{head}\x1b[0m" if color else head]
    for entry in document["cassettes"]:
        models = ",".join(entry["models"]) or "-"
        row = columns.format(
            _cut(entry["file"], 36),
            entry["interactions"],
            _cut(models, 18),
            "yes" if entry["streamed"] else "no",
            entry["tokens_in"],
            entry["tokens_out"],
            _age(entry["age_seconds"]),
            _size(entry["size"]),
            entry["problems"],
        )
        if color and entry["problems"]:
            row = f"\x1b[33m{row}\x1b[0m"
        lines.append(row)
    totals = document["totals"]
    lines.append(
        f"{totals['cassettes']} cassette(s), {totals['interactions']} interaction(s), "
        f"{totals['tokens_in']} tokens in, {totals['tokens_out']} tokens out, "
        f"{_size(totals['size'])}, {totals['problems']} problem(s)"
    )
    for label in ("largest", "oldest", "orphans", "vcrpy"):
        if document[label]:
            lines.append(f"{VCRPY_NOTE}:" if label == "vcrpy" else f"{label}:")
            lines.extend("  " + _cut(path, WIDTH - 2) for path in document[label])
    if document["others"]:
        lines.append(f"{OTHERS_NOTE}:")
        for other in document["others"]:
            count = f": {other['problems']} problem(s)"
            lines.append("  " + _cut(other["file"], WIDTH - 2 - len(count)) + count)
    return "\n".join(line[:WIDTH] if not color else line for line in lines)


def render_markdown(document: dict[str, Any]) -> str:
    """The report as a Markdown table (for a CI job summary)."""
    lines = [
        "| cassette | interactions | models | streamed | tokens in | tokens out | age | size "
        "| test | problems |",
        "|---|---:|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for e in document["cassettes"]:
        lines.append(
            f"| `{e['file']}` | {e['interactions']} | {', '.join(e['models']) or '-'} | "
            f"{'yes' if e['streamed'] else 'no'} | {e['tokens_in']} | {e['tokens_out']} | "
            f"{_age(e['age_seconds'])} | {_size(e['size'])} | {e['test'] or '-'} | "
            f"{e['problems']} |"
        )
    totals = document["totals"]
    lines.append("")
    lines.append(
        f"**{totals['cassettes']} cassette(s)**, {totals['interactions']} interaction(s), "
        f"{totals['tokens_in']} tokens in, {totals['tokens_out']} tokens out, "
        f"{totals['problems']} problem(s)"
    )
    if document["orphans"]:
        lines.append("")
        lines.append("Orphans: " + ", ".join(f"`{path}`" for path in document["orphans"]))
    if document["vcrpy"]:
        lines.append("")
        lines.append(f"{VCRPY_NOTE}: " + ", ".join(f"`{path}`" for path in document["vcrpy"]))
    if document["others"]:
        lines.append("")
        listed = (f"`{o['file']}` ({o['problems']})" for o in document["others"])
        lines.append(f"{OTHERS_NOTE}: " + ", ".join(listed))
    return "\n".join(lines) + "\n"


def run(paths: Sequence[str], *, as_json: bool, markdown: bool, color: bool) -> int:
    """Print the report of ``paths``; the exit code (0, 1 when a cassette has a problem,
    2 when a file cannot be read)."""
    out = Output("report", as_json)
    document = build(paths, out)
    if as_json:
        return out.done(**document)
    text = render_markdown(document) if markdown else render_text(document, color) + "\n"
    sys.stdout.write(terminal_safe(text, colors=color and not markdown))
    return out.done()


def schema() -> dict[str, Any]:
    """The JSON Schema of ``report --json``."""
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return loaded
