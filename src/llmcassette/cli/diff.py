"""What changed between two cassettes: interactions added, removed or changed, and where.

Each interaction is turned into a *view*: a nested value holding its request (method, URI,
headers, parsed body), its response (status, headers), the answer assembled as the SDKs
assemble it (``show.assemble``) and a summary of its stream. Two views are compared with
``matching.diff.differences``, so every change is named by a path such as
``request.body.messages[0].content`` or ``answer.tool_calls[0].arguments.city``.

By default what changes on every recording is left out: the header's ``created_at`` and
``recorded_by``, event and header timings, headers such as ``date`` or request ids, and the
value behind a redaction placeholder. ``everything=True`` (``--all``) compares them too.
The same views, flattened into one line per path, are the ``git diff`` textconv output.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.cli.show import assemble, event_payloads, session_heading
from llmcassette.matching.jsondiff import (
    MISSING,
    Difference,
    child_path,
    differences,
    shorten_pair,
)
from llmcassette.redact.rules import PLACEHOLDER_RE

# Header fields that say when and by which release a cassette was written, not what it holds.
VOLATILE_HEADER_FIELDS = ("created_at", "recorded_by", "redaction")

# HTTP headers whose values change on every request without the conversation changing.
VOLATILE_HTTP_HEADERS = frozenset(
    {
        "date",
        "age",
        "content-length",
        "cf-ray",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "x-envoy-upstream-service-time",
        "x-stainless-retry-count",
        "x-stainless-read-timeout",
    }
)
# Rate-limit counters and reset times move with every call.
_VOLATILE_HTTP_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")

# Answer kinds show.assemble builds from an LLM API; other bodies are compared field by field.
_LLM_ANSWERS = frozenset({"openai-chat", "openai-responses", "anthropic-messages", "ndjson"})


def is_volatile_header(name: str) -> bool:
    """Whether an HTTP header changes between recordings of the same conversation."""
    lowered = name.lower()
    return lowered in VOLATILE_HTTP_HEADERS or lowered.startswith(_VOLATILE_HTTP_PREFIXES)


# ---------------------------------------------------------------- views


def _parse_body(data: bytes | None) -> Any:
    """A body as JSON if it is JSON, else text, else a short description of its bytes."""
    if not data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        import hashlib

        return f"<{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}>"
    if text.strip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _headers(headers: dict[str, list[str]], everything: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, values in headers.items():
        if not everything and is_volatile_header(name):
            continue
        out[name.lower()] = values[0] if len(values) == 1 else list(values)
    return out


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    arguments: Any = call.get("arguments", "")
    if isinstance(arguments, str) and arguments.strip()[:1] == "{":
        with contextlib.suppress(ValueError):  # so a change is named down to the argument
            arguments = json.loads(arguments)
    return {"name": call.get("name", ""), "arguments": arguments}


def view(item: Interaction, *, everything: bool = False) -> dict[str, Any]:
    """The comparable form of one interaction (see the module docstring)."""
    answer = assemble(item)
    response: dict[str, Any] = {
        "status": item.status,
        "reason": item.reason,
        "headers": _headers(item.response_headers, everything),
    }
    result: dict[str, Any] = {
        "request": {
            "method": item.method,
            "uri": item.uri,
            "headers": _headers(item.request_headers, everything),
            "body": _parse_body(item.request_body),
        },
        "response": response,
    }
    if item.session is not None:  # absent outside a session, so old cassettes compare as before
        result["request"]["session"] = item.session
    payloads = event_payloads(item)
    if answer.kind in _LLM_ANSWERS:
        result["answer"] = {
            "kind": answer.kind,
            "text": answer.text,
            "tool_calls": [_tool_call(call) for call in answer.tool_calls],
            "usage": answer.usage,
        }
    elif item.stream is None:  # not an LLM answer: the body itself is what the test saw
        response["body"] = _parse_body(item.response_body)
    # The end line's fields other than its time: cut_short, error, incomplete.
    ending = {k: v for k, v in item.end_extra.items() if k != "recorded_at"}
    if item.stream is not None:
        result["stream"] = {"kind": item.stream, "events": len(payloads), **ending}
        if answer.kind not in _LLM_ANSWERS:  # a stream of another API: compare its events
            result["stream"]["data"] = [
                data if name is None else {"event": name, "data": data} for name, data in payloads
            ]
    elif ending:
        result["end"] = ending
    if everything:
        times = item.event_times or []
        extra = dict(item.response_extra)
        result["timing"] = {
            "response_headers": extra.pop("t", None),
            **extra,
            "first_event": times[0] if times else None,
            "last_event": times[-1] if times else None,
            "recorded_at": item.end_extra.get("recorded_at"),
        }
    return result


def header_view(header: dict[str, Any], *, everything: bool = False) -> dict[str, Any]:
    """The cassette's header line as compared: without its volatile fields by default."""
    if everything:
        return dict(header)
    return {k: v for k, v in header.items() if k not in VOLATILE_HEADER_FIELDS}


# ---------------------------------------------------------------- comparing


def _placeholder_pattern(text: str) -> re.Pattern[str]:
    pieces = PLACEHOLDER_RE.split(text)
    return re.compile(".*?".join(re.escape(piece) for piece in pieces), re.DOTALL)


def same_but_redacted(a: Any, b: Any) -> bool:
    """Strings equal once each redaction placeholder may stand for any value.

    ``Bearer <REDACTED:bearer-token>`` equals ``Bearer <REDACTED:bearer-token:2>`` and
    ``Bearer sk-live…``: what was behind a placeholder is unknown, so it is no difference.
    """
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    if "<REDACTED:" not in a and "<REDACTED:" not in b:
        return False
    for pattern, other in ((a, b), (b, a)):
        if "<REDACTED:" in pattern and _placeholder_pattern(pattern).fullmatch(other):
            return True
    normalized = [PLACEHOLDER_RE.sub("<REDACTED>", value) for value in (a, b)]
    return normalized[0] == normalized[1]


def compare(a: Any, b: Any, *, everything: bool = False, path: str = "") -> list[Difference]:
    """Where two views differ; placeholders count only with ``everything``."""
    found = differences(a, b, path)
    found.sort(key=_part_order)  # what was sent, then what came back; stable within a part
    if everything:
        return found
    return [d for d in found if not same_but_redacted(d.recorded, d.incoming)]


_PARTS = ("request", "response", "answer", "stream", "end", "timing")


def _part_order(difference: Difference) -> int:
    part = re.split(r"[.\[]", difference.path, maxsplit=1)[0]
    return _PARTS.index(part) if part in _PARTS else len(_PARTS)


@dataclass
class Change:
    """One interaction of either cassette: unchanged, changed, only in A, or only in B."""

    status: str  # "same", "changed", "removed" (only in A) or "added" (only in B)
    a: int | None  # 1-based position in A
    b: int | None
    method: str
    uri: str
    differences: list[Difference] = field(default_factory=list)
    # The session it is listed under: B's side, or A's for an interaction only in A.
    session: str | None = None


@dataclass
class CassetteDiff:
    """Everything that differs between two cassettes."""

    a: str
    b: str
    header: list[Difference]
    changes: list[Change]
    # Whether either cassette has sessions: then changes are listed under one per session.
    sessions: bool = False

    @property
    def equivalent(self) -> bool:
        """True when nothing that counts differs."""
        return not self.header and all(change.status == "same" for change in self.changes)

    def counts(self) -> dict[str, int]:
        """How many interactions are in each state."""
        totals = {"same": 0, "changed": 0, "removed": 0, "added": 0}
        for change in self.changes:
            totals[change.status] += 1
        return totals


def _identity(item: Interaction) -> str:
    """What pairs an interaction with its counterpart: method, path and query, body."""
    parts = urlsplit(item.uri)
    canonical = json.dumps(_parse_body(item.request_body), sort_keys=True, default=str)
    return f"{item.method} {parts.path}?{parts.query} {PLACEHOLDER_RE.sub('<REDACTED>', canonical)}"


def _endpoint(item: Interaction) -> tuple[str, str]:
    return item.method, urlsplit(item.uri).path


def pair_by_session(
    a: list[Interaction], b: list[Interaction]
) -> list[tuple[str | None, list[tuple[int | None, int | None]]]]:
    """Pair interactions session by session (``pair`` within each), then pair what is left
    across sessions when the request is the same (a session renamed, or added in B).

    Returns each session, in order of first appearance in A then B, with its 0-based
    pairs; a pair across sessions is listed under B's. Without sessions this is ``pair``.
    """
    labels_a = [item.session for item in a]
    labels_b = [item.session for item in b]
    order = list(dict.fromkeys([*labels_a, *labels_b]))
    groups: dict[str | None, list[tuple[int | None, int | None]]] = {}
    for label in order:
        own_a = [i for i, other in enumerate(labels_a) if other == label]
        own_b = [j for j, other in enumerate(labels_b) if other == label]
        groups[label] = [
            (None if i is None else own_a[i], None if j is None else own_b[j])
            for i, j in pair([a[i] for i in own_a], [b[j] for j in own_b])
        ]
    if len(order) > 1:
        # Only an identical request pairs across sessions: pairing by endpoint there would
        # match one agent's turn with another's.
        every = [both for found in groups.values() for both in found]
        removed = sorted(i for i, j in every if i is not None and j is None)
        added = sorted(j for i, j in every if i is None and j is not None)
        keys_b = {j: _identity(b[j]) for j in added}
        for i in removed:
            key = _identity(a[i])
            partner = next(
                (j for j in added if keys_b[j] == key and labels_b[j] != labels_a[i]), None
            )
            if partner is None:
                continue
            added.remove(partner)
            groups[labels_a[i]].remove((i, None))
            into = groups[labels_b[partner]]
            into.remove((None, partner))
            # In B's order among that session's pairs, where B's interaction was listed.
            at = next(
                (k for k, (_, j) in enumerate(into) if j is not None and j > partner), len(into)
            )
            into.insert(at, (i, partner))
    return list(groups.items())


def pair(a: list[Interaction], b: list[Interaction]) -> Iterator[tuple[int | None, int | None]]:
    """Pair interactions by request identity in order; then, among the rest, by endpoint.

    Yields 0-based ``(index in a, index in b)``; ``None`` on one side means the interaction
    exists only in the other cassette.
    """
    keys_a = [_identity(item) for item in a]
    keys_b = [_identity(item) for item in b]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag == "equal":
            yield from zip(range(a_start, a_end), range(b_start, b_end), strict=True)
            continue
        unpaired_b = list(range(b_start, b_end))
        for index in range(a_start, a_end):
            partner = next((j for j in unpaired_b if _endpoint(b[j]) == _endpoint(a[index])), None)
            if partner is None:
                yield index, None
            else:
                unpaired_b.remove(partner)
                yield index, partner
        for j in unpaired_b:
            yield None, j


def diff_cassettes(
    a: Cassette, b: Cassette, *, a_name: str = "A", b_name: str = "B", everything: bool = False
) -> CassetteDiff:
    """Compare two cassettes interaction by interaction."""
    header: list[Difference] = []
    if a.header and b.header:  # an empty file (an added or deleted cassette) has no header
        header = compare(
            header_view(a.header, everything=everything),
            header_view(b.header, everything=everything),
            everything=everything,
            path="header",
        )
    changes: list[Change] = []
    groups = pair_by_session(a.interactions, b.interactions)
    for label, pairs in groups:
        for i, j in pairs:
            if i is not None and j is not None:
                left, right = a.interactions[i], b.interactions[j]
                found = compare(
                    view(left, everything=everything),
                    view(right, everything=everything),
                    everything=everything,
                )
                status = "changed" if found else "same"
                changes.append(Change(status, i + 1, j + 1, right.method, right.uri, found, label))
            elif i is not None:
                item = a.interactions[i]
                changes.append(Change("removed", i + 1, None, item.method, item.uri, [], label))
            elif j is not None:
                item = b.interactions[j]
                changes.append(Change("added", None, j + 1, item.method, item.uri, [], label))
    sessions = any(label is not None for label, _ in groups)
    return CassetteDiff(a_name, b_name, header, changes, sessions)


# ---------------------------------------------------------------- output


def _plain(text: str, style: str) -> str:
    return text


def describe(difference: Difference, width: int = 80) -> str:
    """``path: 'old' -> 'new'``, long strings cut around the change."""
    old, new = shorten_pair(difference.recorded, difference.incoming, width)
    return f"{difference.path}: {old} -> {new}"


def render(result: CassetteDiff, paint: Callable[[str, str], str] = _plain, width: int = 80) -> str:
    """The text ``llmcassette diff`` prints. ``paint(text, style)`` may add colour; styles
    are ``"header"``, ``"removed"``, ``"added"``, ``"changed"`` and ``"path"``. When either
    cassette has sessions, the interactions are listed under one heading per session."""
    lines = [paint(f"--- {result.a}", "removed"), paint(f"+++ {result.b}", "added")]
    for difference in result.header:
        lines.append(paint(f"~ {describe(difference, width)}", "changed"))
    heading: list[str | None] = []  # the session whose heading was printed last, if any
    for change in result.changes:
        if change.status == "same":
            continue
        if result.sessions and heading != [change.session]:
            heading = [change.session]
            lines.append(paint(f"== {session_heading(change.session)} ==", "path"))
        where = f"{change.method} {change.uri}"
        if change.status == "removed":
            lines.append(paint(f"- #{change.a} {where} (only in {result.a})", "removed"))
        elif change.status == "added":
            lines.append(paint(f"+ #{change.b} {where} (only in {result.b})", "added"))
        else:
            position = f"#{change.a}" if change.a == change.b else f"#{change.a} -> #{change.b}"
            lines.append(paint(f"~ {position} {where}", "header"))
            for difference in change.differences:
                lines.append("    " + paint(describe(difference, width), "changed"))
    totals = result.counts()
    summary = ", ".join(f"{totals[k]} {k}" for k in ("changed", "removed", "added", "same"))
    verdict = "equivalent" if result.equivalent else "different"
    lines.append(f"llmcassette diff: {verdict}: {summary} interaction(s)")
    return "\n".join(lines)


def to_json(result: CassetteDiff) -> dict[str, Any]:
    """The ``--json`` form; a side whose value is absent has no ``a``/``b`` key."""

    def entry(difference: Difference) -> dict[str, Any]:
        out: dict[str, Any] = {"path": difference.path}
        if difference.recorded is not MISSING:
            out["a"] = difference.recorded
        if difference.incoming is not MISSING:
            out["b"] = difference.incoming
        return out

    def interaction(change: Change) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": change.status,
            "a": change.a,
            "b": change.b,
            "method": change.method,
            "uri": change.uri,
            "differences": [entry(d) for d in change.differences],
        }
        if result.sessions:  # cassettes without sessions keep the fields they always had
            out["session"] = change.session
        return out

    return {
        "a": result.a,
        "b": result.b,
        "equivalent": result.equivalent,
        "counts": result.counts(),
        "header": [entry(d) for d in result.header],
        "interactions": [interaction(change) for change in result.changes],
    }


# ---------------------------------------------------------------- git textconv


def _flatten(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict) and value:
        for key in sorted(value, key=str):
            yield from _flatten(value[key], child_path(path, str(key)))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _flatten(item, child_path(path, index))
    elif isinstance(value, str) and "\n" in value:
        yield f"{path}: |"  # multi-line text one line per line, so git diff shows the line
        yield from (f"    {line}" for line in value.split("\n"))
    else:
        yield f"{path}: {json.dumps(value, ensure_ascii=False, sort_keys=True)}"


# The order of a textconv block: what the test sent, then what it got.
_TEXTCONV_PARTS = (
    "request.session",
    "request.body",
    "request.headers",
    "response.reason",
    "response.headers",
    "response.body",
    "answer",
    "stream",
    "end",
)


def textconv(cassette: Cassette) -> str:
    """A stable, line-oriented rendering for ``git diff``: one block per interaction,
    one line per field, the assembled answer, no timings and no volatile headers."""
    header = header_view(cassette.header)
    lines = [f"llmcassette cassette, format_version {header.get('format_version')}"]
    rest = {k: v for k, v in header.items() if k not in ("format", "format_version")}
    if rest:  # e.g. metadata a test attached
        lines.extend(_flatten(rest, "header"))
    for number, item in enumerate(cassette.interactions, start=1):
        lines.append("")
        lines.append(f"#{number} {item.method} {item.uri} -> {item.status}")
        shown = view(item)
        for part in _TEXTCONV_PARTS:
            value: Any = shown
            for key in part.split("."):
                value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
            if value is not MISSING:
                lines.extend(f"  {line}" for line in _flatten(value, part))
    return "\n".join(PLACEHOLDER_RE.sub(_unnumbered, line) for line in lines) + "\n"


def _unnumbered(match: re.Match[str]) -> str:
    # Placeholder numbers follow the order secrets were met: not worth a diff line.
    placeholder = match.group(0)
    parts = placeholder[1:-1].split(":")
    return f"<{parts[0]}:{parts[1]}>"
