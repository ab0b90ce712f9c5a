"""Repair the known defects of a JSONL cassette, never silently (``llmcassette heal``).

``plan(data, path, rules)`` reads a cassette's bytes and returns the repaired bytes and one
``Repair`` per change, or raises a coded error when it cannot repair the file (then nothing
must be written). The repairs, in the order they are made for each interaction:

* ``body-decoded``: a body a converter stored as ``text`` or ``base64`` that is JSON (by its
  content-type) is stored as ``json``; a streamed body stored whole becomes event lines
  (a Gemini JSON array too, as earlier releases stored it).
  Either only when the new form renders the very same bytes.
* ``event-renamed`` / ``field-renamed``: the ``[tool.llmcassette.heal]`` rules, for what a
  provider renamed since the cassette was recorded (``event_aliases``, ``field_renames``).
* ``duplicate-event-removed``: an event line that repeats the line before it byte for byte
  (time included: two real events do not arrive at the same tenth of a millisecond with
  the same payload, a copy-paste or a doubled write does).
* ``terminator-synthesized``: the provider's own end-of-stream event appended to a stream
  that lacks it, built only from what the stream itself recorded: OpenAI chat's
  ``data: [DONE]`` after a chunk with a ``finish_reason``; Anthropic's ``message_stop``
  after a ``message_delta`` with a ``stop_reason``; the Responses API's
  ``response.completed``, its response the ``response.created`` / ``.in_progress`` object
  with the items of the ``response.output_item.done`` events as ``output``, ``status``
  ``"completed"`` and ``usage`` null; Ollama's last NDJSON object (``"done": true``,
  ``done_reason`` ``"stop"``, model and time of the line before, an empty message or
  response) without its counts and durations. The line gets ``"synthesized": "heal"``;
  the repair (and the header's ``healed.synthesized``) names the fields left empty and
  those assumed. A stream cut inside its answer (no finish or stop reason, an output item
  started and never done, an item that did not complete) is refused (``HealError``).
* ``end-count-fixed``: the end line's ``events`` set to the number of event lines.

Lines no repair touches stay byte for byte as they were; a cassette with nothing to repair
comes back identical. With repairs, the header gets a ``healed`` summary.
"""

from __future__ import annotations

import binascii
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llmcassette.cassette import bodies, events, jsonl, lines
from llmcassette.cassette.migrations import FORMAT_VERSION
from llmcassette.errors import HealError

#: The value of an event line's ``synthesized`` field when heal wrote the line.
SYNTHESIZED = "heal"


@dataclass(frozen=True)
class Synthesized:
    """An event heal wrote that the provider did not send: which, the fields of the
    provider's own event it left empty (not recorded, so not invented), and the fields it
    had to assume (``status: "completed"``, ``done_reason: "stop"``)."""

    event: str
    left_empty: tuple[str, ...] = ()
    assumed: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """As the heal log and the header's ``healed`` summary write it."""
        return {
            "event": self.event,
            "left_empty": list(self.left_empty),
            "assumed": list(self.assumed),
        }


@dataclass(frozen=True)
class Repair:
    """One change heal made: its kind, the line it is about (as in the file that was read,
    from 1), where in the line (a field) and what was there before and after; for a
    synthesized event, what it is and what it left empty."""

    kind: str
    line: int
    message: str
    path: str | None = None
    before: Any = None
    after: Any = None
    synthesized: Synthesized | None = None

    def as_json(self) -> dict[str, Any]:
        """The repair as the heal log and ``--json`` write it."""
        return {
            "kind": self.kind,
            "line": self.line,
            "path": self.path,
            "before": self.before,
            "after": self.after,
            "message": self.message,
            "synthesized": None if self.synthesized is None else self.synthesized.as_json(),
        }


@dataclass(frozen=True)
class Rules:
    """``[tool.llmcassette.heal]``: ``event_aliases`` maps an old event type to the new one,
    ``field_renames`` an old top-level field of an event's (or a JSON body's) data to the
    new name."""

    event_aliases: Mapping[str, str] = field(default_factory=dict)
    field_renames: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """What heal would do to one cassette: the new bytes and the repairs (none: ``data``
    unchanged)."""

    data: bytes
    repairs: list[Repair]

    @property
    def changes(self) -> bool:
        return bool(self.repairs)


@dataclass
class _Line:
    """One line of the file: its number as read, its text, and its record once parsed."""

    number: int
    text: str
    record: dict[str, Any]
    dirty: bool = False  # re-written from ``record`` when the file is put back together

    def render(self) -> str:
        if not self.dirty:
            return self.text
        if self.record.get("type") == "event":
            fields = {k: v for k, v in self.record.items() if k not in ("type", "t")}
            return lines.event_line(self.record.get("t"), fields, None)
        return lines.dump(self.record)


def plan(data: bytes, path: str | os.PathLike[str], rules: Rules | None = None) -> Plan:
    """The repairs of one cassette (see the module docstring); ``HealError`` or
    ``CassetteFormatError`` when it cannot be repaired, or when it has nothing to repair
    but does not read (a defect heal does not know keeps its own error)."""
    name = os.fspath(path)
    rules = rules or Rules()
    header, parsed = jsonl.parse_lines(data, name)  # bad JSON or header: not for heal
    if header.get("format_version") != FORMAT_VERSION or _declared_version(data) != (
        FORMAT_VERSION
    ):
        raise HealError(
            name,
            1,
            "format_version",
            f"heal repairs cassettes of format_version {FORMAT_VERSION} only",
            f"run llmcassette migrate {name} first",
        )
    text = data.decode("utf-8")
    raw_lines = text.split("\n")
    trailing_newline = raw_lines[-1] == ""
    if trailing_newline:
        raw_lines.pop()
    # parse_lines numbered the lines from 1 as in the file (the header is not among them);
    # blank lines stay where they are.
    by_number = {line.number: line.record for line in parsed}
    first = next(index for index, raw in enumerate(raw_lines) if raw.strip())
    header_line = _Line(first + 1, raw_lines[first], header)
    records = [_Line(number, raw_lines[number - 1], record) for number, record in by_number.items()]
    prefix = raw_lines[:first]
    blank_after = {
        number: raw_lines[number - 1]
        for number in range(first + 2, len(raw_lines) + 1)
        if number not in by_number
    }
    repairs: list[Repair] = []
    healed: list[_Line] = []
    index = 0
    while index < len(records):
        request = records[index]
        if request.record.get("type") != "request" or index + 1 >= len(records):
            raise _unrepairable(name, request, "an interaction must start with a request line")
        response = records[index + 1]
        if response.record.get("type") != "response":
            raise _unrepairable(name, response, "a response line must follow the request line")
        index += 2
        event_lines: list[_Line] = []
        while index < len(records) and records[index].record.get("type") == "event":
            event_lines.append(records[index])
            index += 1
        if index >= len(records) or records[index].record.get("type") != "end":
            where = records[index] if index < len(records) else records[-1]
            raise _unrepairable(
                name, where, f"the interaction of line {request.number} has no end line"
            )
        end = records[index]
        index += 1
        event_lines = _heal_interaction(name, request, response, event_lines, end, rules, repairs)
        healed.extend([request, response, *event_lines, end])
    if not repairs:
        # Nothing heal knows to repair: the file must read as it is, or it keeps the error
        # that says why it does not (a field of the wrong type, ...), as check reports it.
        jsonl.read(data, name)
        return Plan(data, [])
    # Each line's place in the new file (blank lines are kept, before the line they came
    # before), so that the header can say where the synthesized events are.
    placed: list[str | _Line] = [*prefix, header_line]
    for line in healed:
        placed.extend(blank_after.pop(n) for n in sorted(blank_after) if n < line.number)
        placed.append(line)
    placed.extend(blank_after[n] for n in sorted(blank_after))
    summary = _summary(header_line.record, repairs)
    synthesized = _synthesized_lines(header_line.record, placed, repairs)
    if synthesized:
        summary["synthesized"] = synthesized
    header_line.record = {**header_line.record, "healed": summary}
    header_line.dirty = True
    out = [item if isinstance(item, str) else item.render() for item in placed]
    new = ("\n".join(out) + ("\n" if trailing_newline else "")).encode("utf-8")
    jsonl.read(new, name)  # what is written must read back
    return Plan(new, repairs)


def _declared_version(data: bytes) -> Any:
    """The format_version the file itself declares (parse_lines reports the migrated one)."""
    first = next(line for line in data.decode("utf-8").split("\n") if line.strip())
    return json.loads(first.removeprefix("\ufeff")).get("format_version")


def _summary(header: dict[str, Any], repairs: list[Repair]) -> dict[str, Any]:
    """The header's ``healed`` field: when, by whom, and how many repairs of each kind
    (counted over every heal of the file)."""
    from llmcassette._version import __version__

    before = header.get("healed")
    counts: dict[str, int] = dict(before.get("repairs", {})) if isinstance(before, dict) else {}
    for repair in repairs:
        counts[repair.kind] = counts.get(repair.kind, 0) + 1
    return {"at": jsonl.now_iso(), "by": f"llmcassette {__version__}", "repairs": counts}


def _synthesized_lines(
    header: dict[str, Any], placed: list[str | _Line], repairs: list[Repair]
) -> list[dict[str, Any]]:
    """The header's list of synthesized events: each one's line in the new file, what it
    is and what it left empty. Those of an earlier heal keep what its list said: matched in
    order when the file still has as many marked lines (a hand edit may have moved them),
    else by their line number."""
    before = header.get("healed")
    listed = before.get("synthesized") if isinstance(before, dict) else None
    earlier = [entry for entry in listed or [] if isinstance(entry, dict)]
    lines = [
        (number, item)
        for number, item in enumerate(placed, start=1)
        if not isinstance(item, str) and item.record.get("synthesized") == SYNTHESIZED
    ]
    marked = [item for _, item in lines if item.text]  # in the file as read
    if len(marked) == len(earlier):
        known = {id(item): entry for item, entry in zip(marked, earlier, strict=True)}
    else:
        by_line = {entry.get("line"): entry for entry in earlier}
        known = {id(item): by_line[item.number] for item in marked if item.number in by_line}
    # A line synthesized now has no text yet and the number of the line it follows.
    new = {repair.line: repair.synthesized for repair in repairs if repair.synthesized}
    found: list[dict[str, Any]] = []
    for number, item in lines:
        made = None if item.text else new.get(item.number)
        if made is not None:
            found.append({"line": number, **made.as_json()})
        elif id(item) in known:
            found.append({**known[id(item)], "line": number})
        else:  # marked by hand, or by a heal that kept no list
            found.append({"line": number, "event": None, "left_empty": None, "assumed": None})
    return found


def _unrepairable(name: str, line: _Line, problem: str) -> HealError:
    return HealError(
        name,
        line.number,
        None,
        problem,
        "record the cassette again; heal does not guess missing requests or responses",
    )


def _content_type(record: dict[str, Any]) -> str | None:
    headers = record.get("headers")
    if not isinstance(headers, dict):
        return None
    for key, value in headers.items():
        if key.lower() == "content-type":
            return str(value[0] if isinstance(value, list) and value else value)
    return None


def _heal_interaction(
    name: str,
    request: _Line,
    response: _Line,
    event_lines: list[_Line],
    end: _Line,
    rules: Rules,
    repairs: list[Repair],
) -> list[_Line]:
    """Repair one interaction's lines in place; returns its event lines as they now are."""
    _decode_stored_body(request, repairs)
    uri = request.record.get("uri")
    sent_to = uri if isinstance(uri, str) else None
    converted = _decode_stored_body(response, repairs, sent_to)
    if converted is not None:
        if event_lines:
            raise _unrepairable(name, event_lines[0], "event lines after a body stored whole")
        event_lines = converted
    stream = _stream_kind(response.record)
    if stream is None:
        _rename_fields(response, "body.json", rules, repairs)
    for event in event_lines:
        _apply_rules(event, stream, rules, repairs)
    event_lines = _without_duplicates(event_lines, repairs)
    if stream in (events.SSE, events.NDJSON) and event_lines:
        event_lines = _with_terminator(name, stream, event_lines, repairs, sent_to)
    declared = end.record.get("events")
    if declared != len(event_lines):
        repairs.append(
            Repair(
                "end-count-fixed",
                end.number,
                f"the end line said {declared} events; the interaction has {len(event_lines)}",
                "events",
                declared,
                len(event_lines),
            )
        )
        end.record = {**end.record, "events": len(event_lines)}
        end.dirty = True
    return event_lines


def _stream_kind(record: dict[str, Any]) -> str | None:
    body = record.get("body")
    stream = body.get("stream") if isinstance(body, dict) else None
    return stream if isinstance(stream, str) else None


def _decode_stored_body(
    line: _Line, repairs: list[Repair], uri: str | None = None
) -> list[_Line] | None:
    """Store a JSON body kept as text or base64 as ``json``, and a whole stream body as
    events (a Gemini JSON array told by ``uri``, its request's); returns the new event
    lines of a stream, else None."""
    body = line.record.get("body")
    if not isinstance(body, dict) or not ({"text", "base64"} & body.keys()):
        return None
    try:
        raw = bodies.decode(body)
    except (ValueError, TypeError, binascii.Error):
        return None  # not a body heal understands; check reports it
    if raw is None:
        return None
    stored = "text" if "text" in body else "base64"
    content_type = _content_type(line.record)
    is_response = line.record.get("type") == "response"
    kind = events.stream_kind(content_type, uri, raw) if is_response else None
    if kind is not None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        compact: list[str | None] = []
        fields = events.encode_events(kind, text, compact)
        rendered = "".join(bodies.decode_event(kind, item).decode() for item in fields)
        if rendered != text or not fields:
            return None  # the events would not give back the same bytes
        line.record = {**line.record, "body": {"stream": kind}}
        line.dirty = True
        repairs.append(
            Repair(
                "body-decoded",
                line.number,
                f"the {kind} stream stored as {stored} is stored as {len(fields)} event lines",
                "body",
                stored,
                "stream",
            )
        )
        t = line.record.get("t")
        return [
            _Line(
                line.number,
                "",
                {"type": "event", **({"t": t} if t is not None else {}), **item},
                dirty=True,
            )
            for item in fields
        ]
    encoded = bodies.encode(raw, content_type)
    if encoded is None or "json" not in encoded or bodies.decode(encoded) != raw:
        return None
    line.record = {**line.record, "body": encoded}
    line.dirty = True
    repairs.append(
        Repair(
            "body-decoded",
            line.number,
            f"the JSON body stored as {stored} is stored as json",
            "body",
            stored,
            "json",
        )
    )
    return None


def _apply_rules(event: _Line, stream: str | None, rules: Rules, repairs: list[Repair]) -> None:
    record = event.record
    old = _event_name(event) if stream == events.SSE else None
    new = rules.event_aliases.get(old) if isinstance(old, str) else None
    if new is not None:
        record = {**record, "event": new}
        data = record.get("data")
        if isinstance(data, dict) and data.get("type") == old:
            record["data"] = {**data, "type": new}
        events.leave_implied_name_out(record)
        event.record = record
        event.dirty = True
        repairs.append(
            Repair(
                "event-renamed", event.number, f"event {old!r} is now {new!r}", "event", old, new
            )
        )
    _rename_fields(event, "data", rules, repairs)


def _rename_fields(line: _Line, where: str, rules: Rules, repairs: list[Repair]) -> None:
    """Rename the top-level fields of the line's data (``data`` or ``body.json``)."""
    if not rules.field_renames:
        return
    holder: Any = line.record
    keys = where.split(".")
    for key in keys[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    value = holder.get(keys[-1]) if isinstance(holder, dict) else None
    if not isinstance(value, dict):
        return
    renamed = {rules.field_renames.get(key, key): item for key, item in value.items()}
    if list(renamed) == list(value):
        return
    for old, new in rules.field_renames.items():
        if old in value:
            repairs.append(
                Repair(
                    "field-renamed",
                    line.number,
                    f"field {old!r} is now {new!r}",
                    f"{where}.{old}",
                    old,
                    new,
                )
            )
    assert isinstance(holder, dict)
    holder[keys[-1]] = renamed
    line.dirty = True


def _without_duplicates(event_lines: list[_Line], repairs: list[Repair]) -> list[_Line]:
    kept: list[_Line] = []
    for event in event_lines:
        if kept and not event.dirty and not kept[-1].dirty and event.text == kept[-1].text:
            repairs.append(
                Repair(
                    "duplicate-event-removed",
                    event.number,
                    f"line {event.number} repeated line {kept[-1].number} exactly",
                )
            )
            continue
        kept.append(event)
    return kept


def _event_name(event: _Line) -> str | None:
    """An SSE event line's name (``events.event_name``); None for a malformed one."""
    try:
        return events.event_name(event.record)
    except TypeError:
        return None


def _data(event: _Line) -> Any:
    data = event.record.get("data")
    if data is None and isinstance(event.record.get("text"), str):
        try:
            return json.loads(event.record["text"])
        except ValueError:
            return None
    return data


#: The events that end a Responses stream (as ``transport.integrity`` judges it).
_RESPONSES_ENDINGS = frozenset({"response.completed", "response.failed", "response.incomplete"})
# The counts and durations of Ollama's last object: measured by the server, never made up.
_OLLAMA_MEASURED = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


@dataclass(frozen=True)
class _Terminator:
    """The event heal would append: its fields, how the log names it, the fields of the
    provider's own terminator it left empty, and the ones it had to assume."""

    fields: dict[str, Any]
    what: str
    left_empty: tuple[str, ...] = ()
    assumed: tuple[str, ...] = ()


def _with_terminator(
    name: str, kind: str, event_lines: list[_Line], repairs: list[Repair], uri: str | None
) -> list[_Line]:
    """Append the provider's terminator where it is missing and can be written honestly;
    ``uri`` is the request's (providers that end alike differ)."""
    payloads = [_data(event) for event in event_lines]
    types = [
        _event_name(event) or (data.get("type") if isinstance(data, dict) else None)
        for event, data in zip(event_lines, payloads, strict=True)
    ]
    done = len(event_lines)
    if kind == events.NDJSON:
        terminator = _ollama_done(name, event_lines[-1], payloads[-1])
    elif any(isinstance(d, dict) and d.get("object") == "chat.completion.chunk" for d in payloads):
        terminator = _chat_done(name, event_lines[-1], payloads, uri)
    elif "message_start" in types:
        terminator = _message_stop(name, event_lines[-1], types, payloads)
    elif any(isinstance(kind, str) and kind.startswith("response.") for kind in types):
        if _is_done_marker(event_lines[-1]):  # OpenRouter sends [DONE] after the last event
            done -= 1
        terminator = _response_completed(name, event_lines[:done], types[:done], payloads[:done])
    else:
        return event_lines  # a stream of no provider heal knows: nothing to say it is cut
    if terminator is None:
        return event_lines
    last = event_lines[done - 1]
    t = last.record.get("t")
    record = {"type": "event", **({"t": t} if t is not None else {}), **terminator.fields}
    record["synthesized"] = SYNTHESIZED
    new = _Line(last.number, "", record, dirty=True)
    empty = f"; left empty: {', '.join(terminator.left_empty)}" if terminator.left_empty else ""
    assumed = f"; assumed: {', '.join(terminator.assumed)}" if terminator.assumed else ""
    repairs.append(
        Repair(
            "terminator-synthesized",
            last.number,
            f"the stream ended without its terminator; {terminator.what} appended after line "
            f'{last.number}, marked "synthesized": "{SYNTHESIZED}"{empty}{assumed}',
            None,
            None,
            terminator.what,
            synthesized=Synthesized(terminator.what, terminator.left_empty, terminator.assumed),
        )
    )
    return [*event_lines[:done], new, *event_lines[done:]]


def _is_done_marker(event: _Line) -> bool:
    return event.record.get("text") == "[DONE]" or event.record.get("data") == "[DONE]"


def _chat_done(name: str, last: _Line, payloads: list[Any], uri: str | None) -> _Terminator | None:
    """OpenAI chat's ``data: [DONE]``: it carries nothing, once a chunk has said why the
    answer finished. None for a stream that ended (Writer's ends with its usage chunk)."""
    if _is_done_marker(last) or events.ends_at_usage_chunk(uri, payloads[-1]):
        return None
    finished = any(
        isinstance(d, dict)
        and any(
            isinstance(choice, dict) and choice.get("finish_reason")
            for choice in d.get("choices") or []
        )
        for d in payloads
    )
    if not finished:
        raise _cut(name, last, "OpenAI chat", "no chunk has a finish_reason")
    return _Terminator({"text": "[DONE]"}, "data: [DONE]")


def _message_stop(
    name: str, last: _Line, types: list[Any], payloads: list[Any]
) -> _Terminator | None:
    """Anthropic's ``message_stop``: it carries nothing, once a ``message_delta`` has said
    why the message stopped."""
    if types[-1] == "message_stop":
        return None
    stopped = any(
        kind == "message_delta"
        and isinstance(d, dict)
        and isinstance(d.get("delta"), dict)
        and d["delta"].get("stop_reason")
        for kind, d in zip(types, payloads, strict=True)
    )
    if not stopped:
        raise _cut(name, last, "Anthropic", "no message_delta has a stop_reason")
    # Named by its data's type, as Anthropic names every event (``events.event_name``).
    return _Terminator({"data": {"type": "message_stop"}}, "event: message_stop")


def _response_completed(
    name: str, event_lines: list[_Line], types: list[Any], payloads: list[Any]
) -> _Terminator | None:
    """The Responses API's ``response.completed``, built only from what the stream said:
    the response object of ``response.created`` / ``response.in_progress``, its ``output``
    the items of the ``response.output_item.done`` events, ``usage`` left null."""
    last = event_lines[-1]
    if any(kind in _RESPONSES_ENDINGS for kind in types) or "error" in types:
        return None  # the stream ended as the provider ended it (an error is an end too)
    snapshot: dict[str, Any] | None = None
    started: dict[Any, Any] = {}  # output_index (or item id) -> item id, while not done
    finished: list[tuple[int, Any, dict[str, Any]]] = []
    for kind, data in zip(types, payloads, strict=True):
        if not isinstance(data, dict):
            continue
        if kind in ("response.created", "response.in_progress") and isinstance(
            data.get("response"), dict
        ):
            snapshot = data["response"]
        item = data.get("item")
        if not isinstance(item, dict):
            continue
        key = data.get("output_index", item.get("id"))
        if kind == "response.output_item.added":
            started[key] = item.get("id")
        elif kind == "response.output_item.done":
            started.pop(key, None)
            index = data.get("output_index")
            finished.append((index if isinstance(index, int) else len(finished), key, item))
    provider = "OpenAI Responses"
    if snapshot is None:
        raise _cut(name, last, provider, "no response.created event holds the response")
    if started:
        key, item_id = next(iter(started.items()))
        raise _cut(
            name,
            last,
            provider,
            f"output item {key} ({item_id}) was started and never done, so its content "
            "is not known",
        )
    if not finished:
        raise _cut(name, last, provider, "no output item was done, so there is no answer")
    for _, key, item in finished:
        status = item.get("status")
        if status not in (None, "completed"):
            raise _cut(
                name,
                last,
                provider,
                f"output item {key} ended {status!r}, so the response did not complete",
            )
    status = snapshot.get("status")
    if status not in (None, "queued", "in_progress"):
        raise _cut(name, last, provider, f"the response was {status!r}, not in progress")
    # Items in the order of their output_index (their order in the stream when equal).
    output = [item for _, _, item in sorted(finished, key=lambda found: found[0])]
    response = {**snapshot, "status": "completed", "output": output, "usage": None}
    completed: dict[str, Any] = {"type": "response.completed"}
    numbers = [d.get("sequence_number") for d in payloads if isinstance(d, dict)]
    if numbers and isinstance(numbers[-1], int):
        completed["sequence_number"] = numbers[-1] + 1
    completed["response"] = response
    # With an ``event:`` line when the stream's last event had one (``events.event_name``).
    fields: dict[str, Any] = {} if _event_name(last) else {"event": None}
    fields.update(_layout_fields(last))
    fields["data"] = completed
    return _Terminator(
        fields, "event: response.completed", ("response.usage",), ("response.status",)
    )


def _layout_fields(last: _Line) -> dict[str, Any]:
    """The layout fields of the stream's last event, for a terminator written like it."""
    return {key: last.record[key] for key in ("layout", "pad") if key in last.record}


def _ollama_done(name: str, last: _Line, data: Any) -> _Terminator | None:
    """Ollama's last NDJSON object, ``"done": true``, without the counts and durations it
    carries: the model and time of the last object, an empty message (or response)."""
    if not (isinstance(data, dict) and "done" in data) or data["done"] is True:
        return None  # not an Ollama stream, or it ended properly
    fields: dict[str, Any] = {key: data[key] for key in ("model", "created_at") if key in data}
    message = data.get("message")
    if isinstance(message, dict):  # /api/chat
        role = message.get("role")
        fields["message"] = {"role": role if isinstance(role, str) else "assistant", "content": ""}
        left_empty: tuple[str, ...] = _OLLAMA_MEASURED
    elif isinstance(data.get("response"), str):  # /api/generate
        fields["response"] = ""
        left_empty = ("context", *_OLLAMA_MEASURED)
    else:
        raise _cut(
            name,
            last,
            "NDJSON",
            "its last object, done: true, is missing and heal knows no shape for it",
        )
    fields.update({"done": True, "done_reason": "stop"})
    record: dict[str, Any] = {**_layout_fields(last), "data": fields}
    return _Terminator(record, '{"done": true} object', left_empty, ("done_reason",))


def _cut(name: str, last: _Line, provider: str, why: str) -> HealError:
    return HealError(
        name,
        last.number,
        None,
        f"the {provider} stream ends at line {last.number} without its terminator, and heal "
        f"cannot add it honestly: {why}",
        "record the cassette again: the stream was cut short while recording",
    )
