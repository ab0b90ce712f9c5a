"""Read and write llmcassette's JSONL cassette files (format version 2).

A file is one JSON object per line::

    {"format":"llmcassette","format_version":2,"recorded_by":...,"created_at":...}
    {"type":"request","method":"POST","uri":...,"headers":{...},"body":{...}}
    {"type":"response","status":200,"reason":"OK","headers":{...},"body":{...}}
    {"type":"event",...}              # one per streamed event, only for streamed bodies
    {"type":"end","events":2,"recorded_at":...}

``docs/format.md`` is the user-facing specification of these lines. Reading validates the
structure and reports problems with the file, line and field; writing is deterministic, so
re-recording the same traffic gives the same lines.
"""

from __future__ import annotations

import codecs
import datetime
import itertools
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import urlsplit

from llmcassette.cassette import bodies, events, eventstream, jsontext, lines, redacted
from llmcassette.cassette.compression import decode_content, too_large
from llmcassette.cassette.migrations import (
    FIRST_RELEASE_WITH_VERSION,
    FORMAT_VERSION,
    Line,
    MissingMigrationError,
    migrate,
)
from llmcassette.errors import CassetteFormatError, CassetteVersionError

FORMAT_MARKER = "llmcassette"
REWRITE_HINT = "fix the line by hand, or delete the cassette and record it again"
NOT_A_HEADER = 'the first line is not an llmcassette header (it needs "format": "llmcassette")'
CONVERT_HINT = (
    "if this is a vcrpy cassette, give it its .yaml or .json name: those replay as they are"
)

Headers = dict[str, list[str]]


@dataclass
class Interaction:
    """One request and its response, as bytes, with the metadata of its cassette lines."""

    method: str
    uri: str
    request_headers: Headers
    request_body: bytes | None
    status: int
    reason: str
    response_headers: Headers
    response_body: bytes
    stream: str | None = None
    # Seconds from the request to each event, when the recorder measured them.
    event_times: list[float] | None = None
    # Extra fields of the response line (e.g. time to headers) and of the end line.
    response_extra: dict[str, Any] = field(default_factory=dict)
    end_extra: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    # The request is stored as the cassette's redaction already left it (redacted when it
    # was sent): writing it passes None for the request to the redact hook.
    request_redacted: bool = False
    # The ``llmcassette.session`` label the request was made in (``"parent/child"``), if any.
    session: str | None = None
    # Which client object sent the request, numbered in first-call order (1, 2, ...) within
    # one use of the cassette; None when unknown. Written only when it tells clients apart.
    client: int | None = None


@dataclass
class Cassette:
    """A whole cassette file: its header line and its interactions."""

    header: dict[str, Any]
    interactions: list[Interaction]
    # The format_version the file was written in (``header`` holds the migrated one).
    written_version: int = FORMAT_VERSION


def now_iso() -> str:
    """The current UTC time as the cassettes write it."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_header(recorded_by: str, created_at: str | None = None) -> dict[str, Any]:
    """The header line for a cassette written now."""
    return {
        "format": FORMAT_MARKER,
        "format_version": FORMAT_VERSION,
        "recorded_by": recorded_by,
        "created_at": created_at or now_iso(),
    }


# ---------------------------------------------------------------- writing


def _headers_out(headers: Mapping[str, Iterable[str] | str]) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for name in sorted(headers, key=str.lower):
        value = headers[name]
        values = [value] if isinstance(value, str) else list(value)
        out[name] = values[0] if len(values) == 1 else values
    return out


def _content_type(headers: Mapping[str, Any]) -> str | None:
    for name, value in headers.items():
        if name.lower() == "content-type":
            return value if isinstance(value, str) else (value[0] if value else None)
    return None


class Redaction(Protocol):
    """What the writer asks of a redactor (``llmcassette.redact.Redactor``)."""

    def records(
        self,
        request: dict[str, Any] | None,
        response: dict[str, Any],
        events: list[dict[str, Any]] | None,
        *,
        request_redacted: bool = False,
    ) -> bool:
        """Redact one interaction's records in place; True if an event record changed."""
        ...

    def learnt(self) -> int:
        """How many credentials the redactor has learnt so far (it only ever learns more)."""
        ...


def interaction_lines(
    item: Interaction, *, with_timing: bool = True, redaction: Redaction | None = None
) -> list[str]:
    """The cassette lines of one interaction (without line ends), redacted by ``redaction``."""
    return _Records.of(item, redaction).lines(with_timing)


@dataclass
class _Records:
    """The records of one interaction's lines, redacted: written with its timing or not."""

    item: Interaction
    request: dict[str, Any]
    response: dict[str, Any]
    events: list[dict[str, Any]]
    # The payload of each event whose ``data`` is stored in the compact layout, as it was
    # streamed: the line takes that text instead of encoding the value again.
    compact_data: list[str | None]

    @classmethod
    def of(cls, item: Interaction, redaction: Redaction | None) -> _Records:
        # Stored decoded, as a response body is (redaction already decoded a request it saw).
        request_body, request_headers = item.request_body, item.request_headers
        if request_body:
            request_body, request_headers = decode_content(request_body, request_headers)
        request: dict[str, Any] = {
            "type": "request",
            "method": item.method,
            "uri": item.uri,
            "headers": _headers_out(request_headers),
            "body": bodies.encode(request_body, _content_type(request_headers)),
        }
        if item.session is not None:
            request["session"] = item.session
        if item.client is not None:
            request["client"] = item.client
        body_bytes, response_headers = decode_content(item.response_body, item.response_headers)
        kind = events.stream_kind(_content_type(response_headers), item.uri, body_bytes)
        if kind is None and eventstream.is_eventstream(_content_type(response_headers)):
            kind = eventstream.KIND
        response: dict[str, Any] = {
            "type": "response",
            "status": item.status,
            "reason": item.reason,
            "headers": _headers_out(response_headers),
        }
        text = _stream_text(body_bytes) if kind and kind != eventstream.KIND else None
        event_records: list[dict[str, Any]] = []
        compact_data: list[str | None] = []
        if kind == eventstream.KIND:  # binary frames: one record each, payloads decoded
            event_records = eventstream.encode_records(body_bytes)
            compact_data = [None] * len(event_records)
            response["body"] = {"stream": kind}
        elif kind and text is not None:
            event_records = events.encode_events(kind, text, compact_data)
            response["body"] = {"stream": kind}
        else:
            response["body"] = bodies.encode(body_bytes, _content_type(response_headers))
        # llmcassette.redact: secrets never reach the lines. When it changed an event, the
        # texts as streamed may hold what it took out: the lines encode the records.
        if redaction is not None and redaction.records(
            request, response, event_records, request_redacted=item.request_redacted
        ):
            compact_data = [None] * len(event_records)
        return cls(item, request, response, event_records, compact_data)

    def matched_request(self) -> str:
        """What two requests must share to answer each other at replay (method, URI, body,
        session), as one string."""
        return lines.dump(
            {key: value for key, value in self.request.items() if key not in ("headers", "client")}
        )

    def lines(self, with_timing: bool = True) -> list[str]:
        """The lines, with the times and extra fields recorded (``with_timing``) or not."""
        item = self.item
        response = {**self.response, **item.response_extra} if with_timing else self.response
        out = [lines.dump(self.request), lines.dump(response)]
        times = item.event_times if with_timing else None
        if times is not None and len(times) != len(self.events):
            times = None  # the split changed: drop stale timing
        for index, fields in enumerate(self.events):
            t = times[index] if times is not None else None
            out.append(lines.event_line(t, fields, self.compact_data[index]))
        end: dict[str, Any] = {"type": "end", "events": len(self.events)}
        end.update(item.end_extra if with_timing else {})
        out.append(lines.dump(end))
        return out


def _stream_text(body: bytes | None) -> str | None:
    try:
        return (body or b"").decode("utf-8")
    except UnicodeDecodeError:
        return None


def write(
    cassette: Cassette, previous: Cassette | None = None, *, redaction: Redaction | None = None
) -> str:
    """The text of a cassette file.

    When ``previous`` (the file being replaced) holds an interaction with the same content,
    its lines are reused as they were, timing and timestamps included, and it keeps its place
    and its client number (``_in_previous_order``), so re-recording unchanged traffic changes
    no line, even when concurrent calls finished in another order this time.
    """
    out = [lines.dump(cassette.header)]
    records = _redacted(_numbered_clients(cassette.interactions), redaction)
    if previous is None or not previous.interactions:
        out.extend(line for item in records for line in item.lines())
        return "\n".join(out) + "\n"
    old = _redacted(previous.interactions, redaction)
    old_plain = [item.lines(with_timing=False) for item in old]
    new_plain = [item.lines(with_timing=False) for item in records]
    order, found = _in_previous_order(records, new_plain, old, old_plain)
    rename = redacted.renumbering(
        (
            (line, old_line)
            for index, place in enumerate(found)
            if place is not None
            for line, old_line in zip(new_plain[index], old_plain[place], strict=True)
        ),
        (line for plain in new_plain for line in plain),
    )
    reusable: dict[tuple[str, ...], list[list[str]]] = {}
    for item, plain in zip(old, old_plain, strict=True):
        reusable.setdefault(tuple(plain), []).append(item.lines())
    for index in order:
        plain = new_plain[index] if rename is None else [rename(line) for line in new_plain[index]]
        candidates = reusable.get(tuple(plain))
        if candidates:
            out.extend(candidates.pop(0))
        else:
            written = records[index].lines()
            out.extend(written if rename is None else [rename(line) for line in written])
    return "\n".join(out) + "\n"


def _redacted(items: list[Interaction], redaction: Redaction | None) -> list[_Records]:
    """Each interaction's records, redacted.

    Those redacted before the redactor learnt its last credential are redacted again, last:
    a value first named a secret by a later call (a password a tool call sends) is still
    plain in an earlier prompt the first time, and taken out of it the second. Redoing
    learns nothing new: every credential it meets, it met the first time.
    """
    records, learnt = [], []
    for item in items:
        learnt.append(redaction.learnt() if redaction is not None else 0)
        records.append(_Records.of(item, redaction))
    if redaction is not None:
        final = redaction.learnt()
        for index, item in enumerate(items):
            if learnt[index] < final:
                records[index] = _Records.of(item, redaction)
    return records


def _in_previous_order(
    new: list[_Records], new_plain: list[list[str]], old: list[_Records], old_plain: list[list[str]]
) -> tuple[list[int], list[int | None]]:
    """The order to write ``new`` in, and for each new interaction the old one it repeats
    (the same lines but for timing, client and placeholder numbers; ``*_plain`` are their
    lines without timing), if any. Each repeated one takes the old one's place and client
    number (``new`` and ``new_plain`` are updated).

    Concurrent calls finish in a different order each run, and clients are numbered in the
    order of their first call, so without this an unchanged re-recording of concurrent code
    moves lines about. Interactions found in ``old`` take its order; each other one comes
    after all those recorded before it now. Requests that match each other (same method, URI,
    body and session) stay in the order they were made now: replay answers them in that
    order. Client numbers are renamed one for one, so which calls share a client is kept.
    """
    places: dict[tuple[str, ...], list[int]] = {}
    for index, item in enumerate(old):
        places.setdefault(_content_key(item, old_plain[index]), []).append(index)
    found: list[int | None] = []
    for index, item in enumerate(new):
        free = places.get(_content_key(item, new_plain[index]))
        found.append(free.pop(0) if free else None)
    sort_keys: list[tuple[int, int, int]] = []
    latest = -1  # the latest place in ``old`` of what was recorded so far
    for index, place in enumerate(found):
        if place is None:
            sort_keys.append((latest, 1, index))
        else:
            latest = max(latest, place)
            sort_keys.append((place, 0, index))
    proposed = sorted(range(len(new)), key=sort_keys.__getitem__)
    requests = [item.matched_request() for item in new]
    made: dict[str, list[int]] = {}
    for index, request in enumerate(requests):
        made.setdefault(request, []).append(index)
    order = [0] * len(new)
    for position, index in enumerate(proposed):
        # the next of the requests like this one, in the order they were made
        order[position] = made[requests[index]].pop(0)
    if _rename_clients(new, found, old):
        for index, item in enumerate(new):
            new_plain[index][0] = lines.dump(item.request)
    return order, found


def _content_key(item: _Records, plain: list[str]) -> tuple[str, ...]:
    # The lines without timing, client number and placeholder numbers.
    first = plain[0]
    if "client" in item.request:
        first = lines.dump({key: value for key, value in item.request.items() if key != "client"})
    return tuple(redacted.unnumbered(line) for line in (first, *plain[1:]))


def _rename_clients(new: list[_Records], found: list[int | None], old: list[_Records]) -> bool:
    """Give each new client the number of the old client whose interaction it repeats
    first; clients with no such interaction take the lowest numbers left. True if any
    number changed."""
    renamed: dict[int, int] = {}
    taken: set[int] = set()
    for item, place in zip(new, found, strict=True):
        number = item.request.get("client")
        if place is None or number is None or number in renamed:
            continue
        was = old[place].request.get("client")
        if was is not None and was not in taken:
            renamed[number] = was
            taken.add(was)
    if all(number == was for number, was in renamed.items()):
        return False
    free = (n for n in itertools.count(1) if n not in taken)
    for item in new:
        number = item.request.get("client")
        if number is not None:
            if number not in renamed:
                renamed[number] = next(free)
            item.request["client"] = renamed[number]
    return True


def _numbered_clients(items: list[Interaction]) -> list[Interaction]:
    """``items``, without client numbers unless they name two or more clients.

    The number only tells clients apart at replay: one client's number says nothing, and
    leaving it out keeps the lines of a one-client cassette as they were before numbers.
    """
    numbers = {item.client for item in items if item.client is not None}
    if len(numbers) >= 2 or not numbers:
        return items
    return [replace(item, client=None) if item.client is not None else item for item in items]


# ---------------------------------------------------------------- reading


def _fail(
    path: str, line: int | None, problem: str, hint: str = REWRITE_HINT
) -> CassetteFormatError:
    return CassetteFormatError(path, line, problem, hint)


def _decode_text(raw: bytes, path: str, number: int) -> str:
    """Line ``number`` of a cassette as text, or ``CassetteFormatError`` naming its column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _fail(
            path,
            number,
            f"byte {raw[error.start]:#04x} at column {error.start + 1} is not valid UTF-8; "
            "cassettes are UTF-8 text",
            "restore the file from version control, or re-encode it as UTF-8",
        ) from None


# Limits on what a line may hold (docs/format.md, "Limits"): deeper JSON would exhaust
# Python's recursion in the code that walks it, longer integers Python's int conversion.
MAX_DEPTH = 128
MAX_INT_DIGITS = 1000
MAX_SECONDS = 1_000_000.0
_INT_BOUND = 10**MAX_INT_DIGITS
_MAX_FLOAT = sys.float_info.max
LIMITS_HINT = (
    f"a line may nest arrays and objects {MAX_DEPTH} deep and hold integers of up to "
    f"{MAX_INT_DIGITS} digits and finite numbers; {REWRITE_HINT}"
)


def _decode_line(path: str, number: int, raw: str, *, first: bool = False) -> Any:
    """One line parsed, within the limits, or ``CassetteFormatError`` naming the line."""
    try:
        record = jsontext.loads_strict(raw)
    except json.JSONDecodeError as error:
        problem = f"line is not valid JSON (column {error.colno}: {error.msg})"
        if first:  # e.g. a vcrpy YAML or pretty-printed JSON cassette
            raise _fail(path, number, f"{problem}; {NOT_A_HEADER}", CONVERT_HINT) from None
        raise _fail(path, number, problem) from None
    except RecursionError:
        problem = f"arrays and objects nest more than {MAX_DEPTH} levels deep"
        raise _fail(path, number, problem, LIMITS_HINT) from None
    except ValueError as error:  # NaN or Infinity, or an integer longer than Python reads
        if str(error) in ("NaN", "Infinity", "-Infinity"):
            problem = f"{error} is not JSON; numbers must be finite"
        else:
            problem = f"an integer has more than {MAX_INT_DIGITS} digits"
        raise _fail(path, number, problem, LIMITS_HINT) from None
    # The parsed values are walked, not the text searched: a line's cost follows its
    # values, and a megabyte of base64 is one string.
    if isinstance(record, dict):
        for name, value in record.items():
            beyond = _out_of_limits(value)
            if beyond is not None:
                raise _fail(path, number, f"field {name!r}: {beyond}", LIMITS_HINT)
    return record


def _out_of_limits(value: Any) -> str | None:
    """What in a field's value (at depth 2 of its line) exceeds the limits, if anything."""
    stack = [(value, 2)] if type(value) in (dict, list) else []
    if not stack:
        return _number_out_of_limits(value)
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"arrays and objects nest more than {MAX_DEPTH} levels deep"
        # Only containers are pushed: a line's strings, most of its values, are passed over.
        # Numbers are compared here, not in a call each: a line may hold thousands.
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is float:
                if not -_MAX_FLOAT <= child <= _MAX_FLOAT:  # infinite (NaN never parses)
                    return _number_out_of_limits(child)
            elif kind is int:
                if not -_INT_BOUND < child < _INT_BOUND:
                    return _number_out_of_limits(child)
            elif kind is dict or kind is list:
                stack.append((child, depth + 1))
    return None


def _number_out_of_limits(value: Any) -> str | None:
    if type(value) is int and not -_INT_BOUND < value < _INT_BOUND:
        return f"an integer has more than {MAX_INT_DIGITS} digits"
    if type(value) is float and not math.isfinite(value):
        return "a number is too large (it overflows to infinity)"
    return None


def _check_types(path: str, line: Line, kind: str, expected: dict[str, type]) -> None:
    """The optional fields of a line that are present have their type."""
    for name, wanted in expected.items():
        if name not in line.record:
            continue
        value = line.record[name]
        if isinstance(value, wanted) and (wanted is bool or not isinstance(value, bool)):
            continue
        noun = {"str": "a string", "dict": "an object", "bool": "true or false"}[wanted.__name__]
        raise _fail(
            path,
            line.number,
            f"{kind} line: field {name!r} must be {noun}, it is a {type(value).__name__}",
        )


def _check_seconds(path: str, number: int, kind: str, record: dict[str, Any]) -> None:
    """A line's ``t``, when present: seconds, from 0 to ``MAX_SECONDS``."""
    if "t" not in record:
        return
    t = record["t"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= MAX_SECONDS:
        shown = repr(t) if len(repr(t)) <= 40 else f"a {type(t).__name__}"
        raise _fail(
            path,
            number,
            f"{kind} line: field 't' must be a number of seconds from 0 to {MAX_SECONDS:.0f}, "
            f"it is {shown}",
        )


def _event_bytes(path: str, number: int, kind: str, record: dict[str, Any]) -> bytes:
    """The exact bytes of one stored event, or ``CassetteFormatError`` naming its line."""
    raw = record.get("raw")
    if raw is not None and not isinstance(raw, str):
        raise _fail(path, number, "event line: field 'raw' must be a string")
    _check_seconds(path, number, "event", record)
    try:
        if kind == eventstream.KIND:
            return eventstream.render_frame(record)
        events.check_fields(kind, record)
        return bodies.decode_event(kind, record)
    except bodies.DecodeErrors as error:
        raise _fail(path, number, f"event line is invalid: {error}") from None


def split_lines(data: bytes, path: str | os.PathLike[str]) -> list[bytes]:
    """A cassette file's bytes cut into its lines, without line ends; ``parse_split_lines``
    decodes each one (UTF-8, checked) as it parses it."""
    raw_lines = cut_at_newlines(data)
    if raw_lines[-1] == b"":
        raw_lines.pop()
    if raw_lines:
        raw_lines[0] = raw_lines[0].removeprefix(codecs.BOM_UTF8)  # an editor's BOM
    return raw_lines


def cut_at_newlines(data: bytes) -> list[bytes]:
    """``data.split(b"\\n")``, each newline found by ``bytes.find``.

    ``find`` skips to the next newline at memchr speed; ``split`` compares every byte in a
    loop of its own, which took twice as long on a cassette (a line is mostly one long body
    or event, a cassette a few dozen lines).
    """
    pieces: list[bytes] = []
    find, start = data.find, 0
    while (end := find(b"\n", start)) >= 0:
        pieces.append(data[start:end])
        start = end + 1
    pieces.append(data[start:])
    return pieces


def parse_lines(data: bytes, path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Line]]:
    """Check the header and parse every line; older format versions are migrated."""
    return parse_split_lines(split_lines(data, path), path)


def parse_split_lines(
    raw_lines: list[bytes], path: str | os.PathLike[str]
) -> tuple[dict[str, Any], list[Line]]:
    """``parse_lines`` for the lines ``split_lines`` gave, emptying ``raw_lines`` as it
    goes: a line's bytes are dropped once decoded and its text once parsed, so a cassette
    is held about twice at the most (its largest line as text, and as what it holds)."""
    header, lines, _ = _parse_split_lines(raw_lines, os.fspath(path))
    return header, lines


def _parse_split_lines(raw_lines: list[bytes], path: str) -> tuple[dict[str, Any], list[Line], int]:
    """``parse_split_lines``, and the format_version the file was written in."""
    parsed: list[Line] = []
    # By index, not ``enumerate``: its result tuple, kept for reuse, would hold the line's
    # bytes until the next line, through the parse of this one.
    for index in range(len(raw_lines)):
        raw, raw_lines[index] = raw_lines[index], b""
        number = index + 1
        text = _decode_text(raw, path, number)
        del raw
        if not text.strip():
            continue  # blank lines are allowed, e.g. left by a hand edit
        record = _decode_line(path, number, text, first=not parsed)
        del text
        if not isinstance(record, dict):
            raise _fail(
                path, number, f"each line must be a JSON object, found {type(record).__name__}"
            )
        parsed.append(Line(number, record))
    if not parsed:
        raise _fail(path, None, "the cassette has no lines", "delete the file to record it again")
    header = parsed[0].record
    if header.get("format") != FORMAT_MARKER:
        raise _fail(
            path,
            parsed[0].number,
            NOT_A_HEADER,
            CONVERT_HINT,
        )
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise _fail(
            path, parsed[0].number, f"format_version must be a whole number, found {version!r}"
        )
    _check_types(
        path,
        parsed[0],
        "header",
        {"recorded_by": str, "created_at": str, "metadata": dict, "redaction": dict},
    )
    lines = parsed[1:]
    if version > FORMAT_VERSION:
        raise CassetteVersionError(
            path,
            version,
            FORMAT_VERSION,
            FIRST_RELEASE_WITH_VERSION.get(version),
            line=parsed[0].number,
        )
    if version < FORMAT_VERSION:
        try:
            lines = migrate(lines, version)
        except MissingMigrationError as missing:
            raise _fail(
                path,
                parsed[0].number,
                f"no migration from format_version {missing.args[0]} is known",
                "record the cassette again",
            ) from None
        except CassetteFormatError:
            raise
        except (LookupError, TypeError, ValueError, AttributeError) as error:
            # A step met a line it does not understand: the file was edited or damaged.
            raise _fail(
                path,
                parsed[0].number,
                f"cannot upgrade this cassette from format_version {version}: "
                f"{type(error).__name__}: {error}",
            ) from error
        header = {**header, "format_version": FORMAT_VERSION}
    return header, lines, version


def _field(path: str, line: Line, name: str, kind: type | tuple[type, ...]) -> Any:
    value = line.record.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        expected = (
            kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        )
        found = "missing" if name not in line.record else f"a {type(value).__name__}"
        raise _fail(
            path,
            line.number,
            f"{line.record.get('type')} line: field {name!r} must be {expected}, it is {found}",
        )
    return value


def _headers_in(path: str, line: Line, name: str) -> Headers:
    raw = line.record.get(name, {})
    if not isinstance(raw, dict):
        raise _fail(path, line.number, f"field {name!r} must be an object of header names")
    if all(type(value) is str for value in raw.values()):  # one string each: in one pass
        return {key: [value] for key, value in raw.items()}
    headers: Headers = {}
    for key, value in raw.items():
        if isinstance(value, str):
            headers[key] = [value]
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            headers[key] = value
        else:
            raise _fail(path, line.number, f"header {key!r} must be a string or a list of strings")
    return headers


def _body_bytes(path: str, line: Line) -> bytes | None:
    body = line.record.get("body")
    if body is not None and not isinstance(body, dict):
        raise _fail(path, line.number, "field 'body' must be an object or null")
    try:
        return bodies.decode(body)
    except bodies.DecodeErrors as error:
        raise _fail(path, line.number, f"field 'body' is invalid: {error}") from None


_KNOWN_TYPES = ("request", "response", "event", "end")


def interactions_from_lines(path: str | os.PathLike[str], lines: list[Line]) -> list[Interaction]:
    """Turn the parsed lines after the header into interactions, checking their order."""
    path = os.fspath(path)
    result: list[Interaction] = []
    index = 0
    count = len(lines)
    while index < count:
        request = lines[index]
        kind = request.record.get("type")
        if kind != "request":
            raise _unexpected(path, request, "a request line")
        if index + 1 >= count:
            raise _fail(
                path,
                request.number,
                "the interaction that starts here has no response line: the cassette is truncated",
                "record the cassette again, or delete the incomplete interaction",
            )
        response = lines[index + 1]
        if response.record.get("type") != "response":
            raise _unexpected(path, response, "a response line")
        item = _start_interaction(path, request, response)
        index += 2
        pieces: list[bytes] = []
        times: list[float] = []
        while index < count and lines[index].record.get("type") == "event":
            event = lines[index]
            index += 1
            if item.stream is None:
                raise _fail(
                    path, event.number, "event line after a response whose body is not a stream"
                )
            pieces.append(_event_bytes(path, event.number, item.stream, event.record))
            t = event.record.get("t")
            if t is not None:
                times.append(float(t))
        if index >= count:
            raise _fail(
                path,
                lines[index - 1].number,
                f"the interaction that starts on line {request.number} has no end line: "
                "the cassette is truncated",
                "record the cassette again; a cut-off file cannot be trusted",
            )
        end = lines[index]
        if end.record.get("type") != "end":
            raise _unexpected(path, end, "an event or end line")
        declared = _field(path, end, "events", int)
        if declared < 0:
            raise _fail(
                path, end.number, f"end line: field 'events' must be 0 or more, it is {declared}"
            )
        _check_types(
            path,
            end,
            "end",
            {"recorded_at": str, "cut_short": bool, "error": str, "incomplete": str},
        )
        if declared != len(pieces):
            raise _fail(
                path,
                end.number,
                f"the end line says {declared} events, but the interaction that starts on line "
                f"{request.number} has {len(pieces)}: lines are missing or were added",
            )
        index += 1
        if item.stream is not None:
            item.response_body = b"".join(pieces)
            item.event_times = times if len(times) == len(pieces) else None
        item.end_extra = {k: v for k, v in end.record.items() if k not in ("type", "events")}
        result.append(item)
    return result


def _unexpected(path: str, line: Line, wanted: str) -> CassetteFormatError:
    kind = line.record.get("type")
    if kind not in _KNOWN_TYPES:
        return _fail(
            path,
            line.number,
            f"unknown line type {kind!r}; expected one of {', '.join(_KNOWN_TYPES)}",
            "a newer llmcassette may have written it: upgrade, or fix the line",
        )
    article = "an" if str(kind)[:1] in "aeiou" else "a"
    return _fail(path, line.number, f"expected {wanted}, found {article} {kind} line")


_STREAM_KINDS = (events.SSE, events.NDJSON, events.JSON_ARRAY, eventstream.KIND)


def _start_interaction(path: str, request: Line, response: Line) -> Interaction:
    body = response.record.get("body")
    stream = body.get("stream") if isinstance(body, dict) else None
    if stream is not None and stream not in _STREAM_KINDS:
        raise _fail(
            path,
            response.number,
            f"unknown stream kind {stream!r}; expected 'sse', 'ndjson', 'json-array' or "
            "'eventstream'",
        )
    reason = response.record.get("reason", "")
    if not isinstance(reason, str):
        raise _fail(path, response.number, "field 'reason' must be a string")
    status = _field(path, response, "status", int)
    if not 100 <= status <= 599:
        shown = status if abs(status) < 10**12 else "out of range"
        raise _fail(
            path,
            response.number,
            f"response line: field 'status' must be an HTTP status from 100 to 599, it is {shown}",
        )
    _check_seconds(path, response.number, "response", response.record)
    session = request.record.get("session")
    if session is not None and (not isinstance(session, str) or not session):
        shown = repr(session) if len(repr(session)) <= 40 else f"a {type(session).__name__}"
        raise _fail(
            path,
            request.number,
            f"request line: field 'session' must be a non-empty string, it is {shown}",
        )
    client = request.record.get("client")
    if client is not None and (type(client) is not int or client < 1):
        shown = repr(client) if len(repr(client)) <= 40 else f"a {type(client).__name__}"
        raise _fail(
            path,
            request.number,
            f"request line: field 'client' must be a whole number from 1, it is {shown}",
        )
    uri = _field(path, request, "uri", str)
    try:
        urlsplit(uri)
    except ValueError:  # its error quotes the text, a URL's password maybe: not shown
        raise _fail(
            path,
            request.number,
            "request line: field 'uri' is not a URL that can be read (brackets around what "
            "is no IPv6 address); it is not shown, since it may hold a credential",
            "fix the URL on that line, or record the cassette again",
        ) from None
    request_headers = _headers_in(path, request, "headers")
    request_body = _body_bytes(path, request)
    _check_decoded_size(path, request, request_body, request_headers)
    response_headers = _headers_in(path, response, "headers")
    response_body = b"" if stream is not None else (_body_bytes(path, response) or b"")
    _check_decoded_size(path, response, response_body, response_headers)
    return Interaction(
        method=_field(path, request, "method", str),
        uri=uri,
        request_headers=request_headers,
        request_body=request_body,
        status=status,
        reason=reason,
        response_headers=response_headers,
        response_body=response_body,
        stream=stream,
        response_extra={
            k: v
            for k, v in response.record.items()
            if k not in ("type", "status", "reason", "headers", "body")
        },
        line=request.number,
        session=session,
        client=client,
    )


def _check_decoded_size(path: str, line: Line, body: bytes | None, headers: Headers) -> None:
    """A body stored with a content-encoding that decompresses to more than the limit (a
    "decompression bomb") is refused here, naming its line, rather than by each reader that
    would decode it."""
    if body and any(name.lower() == "content-encoding" for name in headers):
        error = too_large(body, headers)
        if error is not None:
            kind = line.record.get("type")
            raise _fail(path, line.number, f"{kind} line: the body {error.problem}", error.hint)


def read(data: bytes, path: str | os.PathLike[str]) -> Cassette:
    """Parse and validate a whole cassette file."""
    return read_lines(split_lines(data, path), path)


def read_lines(raw_lines: list[bytes], path: str | os.PathLike[str]) -> Cassette:
    """``read`` for the lines ``split_lines`` gave (emptied as they are parsed)."""
    header, lines, version = _parse_split_lines(raw_lines, os.fspath(path))
    return Cassette(header, interactions_from_lines(path, lines), version)
