"""``llmcassette report --html OUT``: the report as one self-contained static page.

The page has the summary table of ``report`` (click a header to sort, type in the box to
filter) and, per cassette, each interaction as a conversation (system, user, assistant,
tool calls and results, as ``llmcassette show`` assembles them), its stream's event
timing as a small SVG chart, and its ``check`` findings. Redaction placeholders
(``<REDACTED:...>``) are marked.

Cassette text is untrusted: every piece of it is HTML-escaped, and none of it is put
inside the page's one ``<script>`` (which holds only the fixed sort and filter code), so
a recorded ``</script>`` is shown as text. The page loads nothing from the network.
"""

from __future__ import annotations

import html
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmcassette._vcr.tempfiles import atomic_write
from llmcassette.cli.check import CODES
from llmcassette.cli.output import CANNOT_WRITE, Output
from llmcassette.cli.show import Shown, summarize
from llmcassette.cli.tree_report import OTHERS_NOTE, VCRPY_NOTE, _age, _size, build
from llmcassette.errors import record
from llmcassette.redact.rules import PLACEHOLDER_RE

# (heading, entry field, numeric?) of the summary table: the fields of the JSON report.
COLUMNS = (
    ("cassette", "file", False),
    ("interactions", "interactions", True),
    ("models", "models", False),
    ("streamed", "streamed", False),
    ("tokens in", "tokens_in", True),
    ("tokens out", "tokens_out", True),
    ("age", "age_seconds", True),
    ("size", "size", True),
    ("test", "test", False),
    ("problems", "problems", True),
)
CHART_WIDTH = 320
CHART_HEIGHT = 28
ROLES = ("system", "developer", "user", "assistant", "tool")

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fff}
table{border-collapse:collapse}th,td{padding:2px 8px;border-bottom:1px solid #ddd;
text-align:left;vertical-align:top}th{cursor:pointer;background:#f3f3f3;user-select:none}
td{white-space:nowrap}td.n{text-align:right}tr.bad td{background:#fff4d6}
th[aria-sort=ascending]::after{content:" \\25b2"}th[aria-sort=descending]::after{content:" \\25bc"}
section.cassette{border-top:2px solid #888;margin-top:1.5em}
.turn{margin:4px 0;padding:4px 8px;border-left:4px solid #999;white-space:pre-wrap;
overflow-wrap:anywhere}.role{font-weight:bold;margin-right:.5em}
.system,.developer{border-color:#777;background:#f4f4f4}.user{border-color:#2a6fdb;
background:#eef4ff}.assistant{border-color:#2e9e4f;background:#eefaf1}
.tool,.call{border-color:#b26b00;background:#fff6e8}.reasoning{border-color:#8a5cc2;
background:#f6f0ff}mark.redacted{background:#ffd54f;color:#000}
.findings{background:#ffe9e9;border:1px solid #d33;padding:4px 8px;white-space:pre-wrap}
.meta{color:#555;font-size:12px}svg{background:#fafafa;border:1px solid #ddd}
"""

# Sorting and filtering only: no cassette text is ever inside this script.
SCRIPT = """
(function(){
var table=document.getElementById("summary"),body=table.tBodies[0];
var heads=table.tHead.rows[0].cells;
Array.prototype.forEach.call(heads,function(th,col){th.addEventListener("click",function(){
var down=th.getAttribute("aria-sort")==="ascending",num=th.dataset.num==="1";
Array.prototype.forEach.call(heads,function(h){h.removeAttribute("aria-sort")});
th.setAttribute("aria-sort",down?"descending":"ascending");
var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,b){var x=a.cells[col].dataset.v,y=b.cells[col].dataset.v;
var c=num?(parseFloat(x)||0)-(parseFloat(y)||0):x.localeCompare(y);return down?-c:c});
rows.forEach(function(r){body.appendChild(r)})})});
var box=document.getElementById("filter");
box.addEventListener("input",function(){var q=box.value.toLowerCase();
Array.prototype.forEach.call(body.rows,function(r){
r.hidden=q!==""&&r.textContent.toLowerCase().indexOf(q)<0})});
})();
"""


def _text(value: object) -> str:
    """``value`` as escaped HTML with its redaction placeholders marked."""
    text = str(value)
    pieces: list[str] = []
    start = 0
    for match in PLACEHOLDER_RE.finditer(text):
        pieces.append(html.escape(text[start : match.start()]))
        pieces.append(f'<mark class="redacted">{html.escape(match.group())}</mark>')
        start = match.end()
    pieces.append(html.escape(text[start:]))
    return "".join(pieces)


def _attr(value: object) -> str:
    return html.escape(str(value), quote=True)


def _turn(css: str, role: str, text: str) -> str:
    return (
        f'<div class="turn {_attr(css)}"><span class="role">{html.escape(role)}</span>'
        f"{_text(text)}</div>"
    )


def _conversation(shown: Shown) -> list[str]:
    """The request's turns, then the answer: reasoning, text and tool calls."""
    parts: list[str] = []
    for turn in shown.prompt:
        role, _, text = turn.partition(": ")
        parts.append(_turn(role if role in ROLES else "tool", role, text))
    if shown.answer.reasoning:
        parts.append(_turn("reasoning", "reasoning", shown.answer.reasoning))
    if shown.answer.text or not shown.answer.tool_calls:
        parts.append(_turn("assistant", "assistant", shown.answer.text))
    for call in shown.answer.tool_calls:
        parts.append(_turn("call", "tool call", f"{call['name']}({call['arguments']})"))
    return parts


def timing_chart(times: Sequence[float]) -> str:
    """An SVG strip with one tick per stream event at its offset from the request."""
    last = max(times[-1], 1e-9)
    ticks = "".join(
        f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{CHART_HEIGHT - 4}"/>'
        for x in (4 + (CHART_WIDTH - 8) * t / last for t in times)
    )
    label = f"{len(times)} events, first after {times[0]:.3f} s, last after {times[-1]:.3f} s"
    return (
        f'<svg class="timing" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" role="img" '
        f'aria-label="{_attr(label)}"><title>{html.escape(label)}</title>'
        f'<line x1="4" y1="{CHART_HEIGHT - 4}" x2="{CHART_WIDTH - 4}" y2="{CHART_HEIGHT - 4}" '
        f'stroke="#999"/><g stroke="#2a6fdb" stroke-width="1.5">{ticks}</g></svg>'
        f' <span class="meta">{html.escape(label)}</span>'
    )


def _redacted_headers(item: Any) -> list[str]:
    """``request|response header: value`` for each header holding a placeholder."""
    found = []
    for side, headers in (("request", item.request_headers), ("response", item.response_headers)):
        for name, values in headers.items():
            for value in values:
                if PLACEHOLDER_RE.search(value):
                    found.append(f"{side} {name}: {value}")
    return found


def _interaction(number: int, item: Any) -> str:
    shown = summarize(number, item)
    head = f"#{number} {shown.method} {shown.uri} → {shown.status}"
    if shown.model:
        head += f" · {shown.model}"
    if shown.session:
        head += f" · session {shown.session}"
    parts = [f'<div class="interaction"><h3>{_text(head)}</h3>']
    if shown.tools:
        parts.append(f'<p class="meta">tools: {_text(", ".join(shown.tools))}</p>')
    parts.extend(_conversation(shown))
    if shown.answer.usage:
        usage = json.dumps(shown.answer.usage, sort_keys=True)
        parts.append(f'<p class="meta">usage: {_text(usage)}</p>')
    if item.event_times:
        parts.append(f"<p>{timing_chart(item.event_times)}</p>")
    elif shown.events:
        parts.append(f'<p class="meta">{shown.events} events, no timing recorded</p>')
    redacted = _redacted_headers(item)
    if redacted:
        lines = "<br>".join(_text(line) for line in redacted)
        parts.append(f'<p class="meta">redacted headers:<br>{lines}</p>')
    parts.append("</div>")
    return "".join(parts)


def _findings(found: list[Any]) -> str:
    """The box of a file's ``check`` problems."""
    items = "".join(
        f"<li><b>{_text(problem.code or CODES.get(problem.kind, problem.kind))}</b> "
        f"{_text(problem.render())}</li>"
        for problem in found
    )
    return f'<div class="findings"><b>check findings</b><ul>{items}</ul></div>'


def _cell(entry: dict[str, Any], field: str, numeric: bool, anchor: str) -> str:
    value = entry[field]
    if field == "file":
        shown = f'<a href="#{anchor}">{_text(value)}</a>'
    elif field == "models":
        shown = _text(", ".join(value) or "-")
    elif field == "streamed":
        shown = "yes" if value else "no"
    elif field == "age_seconds":
        shown = html.escape(_age(value))
    elif field == "size":
        shown = html.escape(_size(value))
    else:
        shown = _text("-" if value is None else value)
    sort_key = value if numeric else (", ".join(value) if isinstance(value, list) else value)
    css = ' class="n"' if numeric else ""
    return f'<td{css} data-v="{_attr("" if sort_key is None else sort_key)}">{shown}</td>'


def render(document: dict[str, Any], details: dict[str, tuple[Any, list[Any]]]) -> str:
    """The whole page for a report ``document`` and its ``details`` (see ``build``)."""
    totals = document["totals"]
    heads = "".join(
        f'<th data-num="{1 if numeric else 0}">{html.escape(title)}</th>'
        for title, _, numeric in COLUMNS
    )
    rows = []
    sections = []
    for index, entry in enumerate(document["cassettes"], 1):
        anchor = f"c{index}"
        css = ' class="bad"' if entry["problems"] else ""
        cells = "".join(_cell(entry, field, numeric, anchor) for _, field, numeric in COLUMNS)
        rows.append(f"<tr{css}>{cells}</tr>")
        cassette, found = details.get(entry["file"], (None, []))
        section = [f'<section class="cassette" id="{anchor}"><h2>{_text(entry["file"])}</h2>']
        if entry["format"] == "vcrpy":  # shown as convert would write it
            kind = f"a vcrpy cassette, to convert: llmcassette convert {entry['file']}"
            formats = _text(kind)
        else:
            formats = (
                f"format {_text(entry['format_version'])} · "
                f"redaction {_text(entry['redaction_version'])}"
            )
        section.append(
            f'<p class="meta">created {_text(entry["created_at"] or "?")} · {formats}'
            f" · hosts {_text(', '.join(entry['hosts']) or '-')}</p>"
        )
        if found:
            section.append(_findings(found))
        for number, item in enumerate(cassette.interactions if cassette else [], 1):
            section.append(_interaction(number, item))
        section.append("</section>")
        sections.append("".join(section))
    for index, other in enumerate(document["others"], 1):  # a sidecar, a killed save's file
        _, found = details.get(other["file"], (None, []))
        sections.append(
            f'<section class="cassette other" id="o{index}"><h2>{_text(other["file"])}</h2>'
            f"{_findings(found)}</section>"
        )
    listed = {entry["file"] for entry in [*document["cassettes"], *document["others"]]}
    for file, (_, found) in details.items():
        if file not in listed:  # a file that could not be read: only why
            items = "".join(
                f"<li>{_text(problem if isinstance(problem, Exception) else problem.render())}</li>"
                for problem in found
            )
            sections.append(
                f'<section class="cassette unreadable"><h2>{_text(file)}</h2>'
                f'<div class="findings"><b>cannot be read</b><ul>{items}</ul></div></section>'
            )
    lists = "".join(
        f"<p><b>{_text(VCRPY_NOTE if label == 'vcrpy' else label)}:</b> "
        f"{_text(', '.join(document[label]))}</p>"
        for label in ("largest", "oldest", "orphans", "vcrpy")
        if document[label]
    )
    if document["others"]:
        links = ", ".join(
            f'<a href="#o{index}">{_text(other["file"])}</a> ({other["problems"]})'
            for index, other in enumerate(document["others"], 1)
        )
        lists += f"<p><b>{_text(OTHERS_NOTE)}:</b> {links}</p>"
    summary = (
        f"{totals['cassettes']} cassette(s), {totals['interactions']} interaction(s), "
        f"{totals['tokens_in']} tokens in, {totals['tokens_out']} tokens out, "
        f"{_size(totals['size'])}, {totals['problems']} problem(s)"
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        # No network: the page may load nothing but itself (inline style and script).
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>llmcassette report</title><style>{STYLE}</style></head><body>"
        f"<h1>llmcassette report</h1><p>{html.escape(summary)}</p>{lists}"
        '<p><input id="filter" type="search" placeholder="filter cassettes" '
        'aria-label="filter cassettes"></p>'
        f'<table id="summary"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}'
        f"</tbody></table>{''.join(sections)}<script>{SCRIPT}</script></body></html>\n"
    )


def run(paths: Sequence[str], out_path: str) -> int:
    """Write the page of ``paths`` to ``out_path``; the exit code (0, 1 when a cassette has
    a problem, 2 when a file cannot be read: the page is written without it)."""
    from llmcassette.cli.check import SECRET
    from llmcassette.cli.opened import current_rules, project_redactor
    from llmcassette.redact.scan import find_in_value

    out = Output("report", False)
    details: dict[str, tuple[Any, list[Any]]] = {}
    document = build(paths, out, details)
    # The page is kept as a CI artifact: it shows each cassette as the current rules
    # redact it (again, when older rules did or the scan found a secret in it)...
    for file, (cassette, found) in details.items():
        if cassette is not None:
            leak = any(getattr(problem, "kind", None) == SECRET for problem in found)
            redactor = project_redactor()
            details[file] = (current_rules(cassette, redactor, force=leak) or cassette, found)
    text = render(document, details)
    # ... and is written only when no rule matches anything on it (fail closed).
    rules = project_redactor().rules
    if rules.config.enabled and rules.config.fail_closed:
        leaks = sorted({rule for _, rule in find_in_value(rules, text)})
        if leaks:
            problem = (
                f"refusing to write {os.fspath(out_path)}: the page would show a value that "
                f"redaction rule {leaks[0]!r} matches; nothing was written"
            )
            fix = "run `llmcassette redact` on the cassettes, then report again"
            error = record(CANNOT_WRITE, problem, file=os.fspath(out_path), how_to_fix=fix)
            out.error(error, f"{problem}\n  how to fix: {fix}")
            return out.done()
    page = text.encode("utf-8")
    try:
        atomic_write(Path(out_path), page)
    except OSError as error:
        out.cannot_write(os.fspath(out_path), error)
        return out.done()
    count = document["totals"]["cassettes"]
    sys.stdout.write(f"wrote {os.fspath(out_path)}: {count} cassette(s), {len(page)} bytes\n")
    return out.done()
