"""The event lines of a streamed body, written without parsing events of a known shape.

Writing a recorded stream used to parse every event's JSON, encode it again to see that
it is compact, walk it for redaction, and then have the fail-closed scan read each line.
Most events of a stream share one shape (see ``skeleton``): for those, the payload text is
cut at its quotes instead, and what redaction and the scan must look at (each JSON path's
strings joined in stream order, the keys and the text outside strings, and the rest of
each line) is handed to the redactor in one piece. When it can prove that nothing in it
needs redacting, the lines are final and already checked. Otherwise the writer takes the
long way: every event parsed, redacted and scanned as before.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from llmcassette.cassette import events, jsontext, lines
from llmcassette.cassette.skeleton import Match, OneValueApart, Skeleton, Skeletons, safe_text

Path = tuple[Any, ...]

# What follows the payload in an event line, by layout: a spaced payload is written as
# the value of ``data`` in a line, whose items are spaced alike, then its ``layout``.
_TAILS = {jsontext.DEFAULT_LAYOUT: "}", "spaced": ', "layout": "spaced"}'}
_HEADS_KEPT = 4096
_NO_FIELDS: dict[str, Any] = {}  # the fields of the usual event, besides its data (read only)


class Redaction(Protocol):
    """What the writer asks of a redactor (``llmcassette.redact.Redactor``)."""

    def records(
        self,
        request: dict[str, Any] | None,
        response: dict[str, Any],
        events: list[dict[str, Any]] | None,
    ) -> bool:
        """Redact one interaction's records in place; True if an event record changed."""
        ...

    def proves_clean(self, strings: Iterable[Sequence[str]], texts: Iterable[str] = ()) -> bool:
        """Whether no rule can match in ``strings`` (each searched joined) or ``texts``."""
        ...

    def finds_nothing(self, record: dict[str, Any]) -> bool:
        """Whether the fail-closed scan finds nothing in a record about to be written."""
        ...


@dataclass
class QuickLines:
    """The event lines of one stream, and which of them redaction has already checked."""

    lines: list[str]
    checked: list[int]  # positions in ``lines``


@dataclass
class StreamWriter:
    """Writes the event lines of the streamed bodies of one cassette file."""

    redaction: Redaction | None
    skeletons: Skeletons = field(default_factory=lambda: Skeletons(root=("data",)))
    # Skeletons whose outline the redactor has judged (by identity), and its verdict.
    _outline_clean: dict[int, bool] = field(default_factory=dict)
    _usual_head_clean: bool | None = None
    # The usual event heads by time: times are rounded (to 0.1 ms), so they repeat.
    _usual_heads: dict[float, str] = field(default_factory=dict)

    def quick(self, kind: str, text: str, times: list[Any] | None) -> QuickLines | None:
        """The event lines of a stream in which redaction would change nothing, or None.

        None when an event's payload is JSON in a layout other than compact or spaced,
        when an event line would be escaped, or when the redactor cannot prove the stream
        clean: the caller then parses, redacts and writes every event the usual way.
        """
        usual = events.usual_payloads(kind, text)
        pieces = usual if usual is not None else events.split_events(kind, text)
        if times is not None and len(times) != len(pieces):
            times = None
        check = self.redaction is not None
        match_known = self.skeletons.match
        usual_heads = self._usual_heads
        # One look at the whole stream for characters that rule a payload out, instead of
        # one per event; a payload then only needs no line end (the usual event has none).
        safe = safe_text(text, line_ends=True)
        # Strings by JSON path, in stream order. The string values of consecutive events of
        # one skeleton are kept as rows (a run) and turned into columns once, at its end.
        strings: dict[Path, list[str]] = {}
        run: list[Sequence[str]] = []
        run_skeleton: Skeleton | None = None
        heads: list[str] = []
        out: list[str] = []
        checked: list[int] = []
        # The event that most events repeat but for one value (their text delta), and the
        # values of the last event of each skeleton, to find it.
        template: OneValueApart | None = None
        last_values: dict[int, Sequence[str]] = {}
        resume = 0  # the events before it were written by a run of the template
        for index, piece in enumerate(pieces):
            if index < resume:
                continue
            t = times[index] if times is not None else None
            if usual is not None:
                fields: dict[str, Any] = _NO_FIELDS
                payload: str | None = piece
                payload_safe = safe
            else:
                split = events.event_fields(kind, piece)
                if split is None:
                    _add(strings, ("raw",), piece)
                    out.append(lines.event_line(t, {"raw": piece}, None))
                    continue
                fields, payload = split
                payload_safe = safe and payload is not None and "\n" not in payload
                for name in ("event", "id"):
                    if name in fields:
                        _add(strings, (name,), fields[name])
            if payload is None:
                out.append(lines.event_line(t, fields, None))
                continue
            match = template.match(payload) if template is not None and payload_safe else None
            if match is None:
                found = match_known(payload, payload_safe) or self._learn(payload)
                if found is None:
                    return None  # JSON that is not compact, or of a shape that cannot be learnt
                if isinstance(found, str):  # not JSON: stored as text
                    _add(strings, ("text",), payload)
                    out.append(lines.event_line(t, {**fields, "text": payload}, None))
                    continue
                match = found
                previous = last_values.get(id(found[0]))
                last_values[id(found[0])] = found[1]
                if previous is not None and (template is None or template.skeleton is not found[0]):
                    template = OneValueApart.of(payload, found, previous) or template
            skeleton, values = match
            if not fields and type(t) is float and math.isfinite(t):
                # The usual head: its words are checked once (``_usual_head_is_clean``); a
                # number is never a finding of the scan nor changed by redaction.
                head = _usual_head(usual_heads, t)
            else:
                head = lines.data_event_head(t, fields)
                if fields and any(s in head for s in lines.LINE_SEPARATORS):
                    return None  # the line would be escaped: not the bytes checked here
                heads.append(head)
            if check:
                if skeleton is not run_skeleton:
                    if not self._outline_is_clean(skeleton):
                        return None
                    _columns(strings, run_skeleton, run)
                    run, run_skeleton = [], skeleton
                run.append(values)
            checked.append(len(out))
            out.append(head + payload + _TAILS[skeleton.layout])
            if (
                usual is not None
                and safe
                and template is not None
                and skeleton is template.skeleton
            ):
                # The events that follow are most often this one with another text delta.
                resume = _template_run(
                    template,
                    pieces,
                    index + 1,
                    times,
                    usual_heads,
                    out,
                    checked,
                    run if check else None,
                )
        if check:
            assert self.redaction is not None
            if not self._usual_head_is_clean():
                return None
            _columns(strings, run_skeleton, run)
            if not self.redaction.proves_clean(strings.values(), heads):
                return None
        return QuickLines(out, checked)

    def _learn(self, payload: str) -> Match | str | None:
        """The match of a payload of a new shape, the payload when it is text, or None."""
        stored = events.structure_payload(payload)
        if "text" in stored:
            return payload
        layout = stored.get("layout", jsontext.DEFAULT_LAYOUT)
        if layout not in _TAILS:
            return None
        return self.skeletons.learn(payload, stored["data"], layout)

    def _usual_head_is_clean(self) -> bool:
        if self._usual_head_clean is None:
            assert self.redaction is not None
            self._usual_head_clean = self.redaction.proves_clean(
                (), [lines.data_event_head(0.0, _NO_FIELDS)]
            )
        return self._usual_head_clean

    def _outline_is_clean(self, skeleton: Skeleton) -> bool:
        verdict = self._outline_clean.get(id(skeleton))
        if verdict is None:
            assert self.redaction is not None
            # Framed as in a line: what precedes the payload ends with ": ".
            framed = ": " + skeleton.outline + _TAILS[skeleton.layout]
            verdict = self.redaction.proves_clean((), [framed])
            self._outline_clean[id(skeleton)] = verdict
        return verdict


def _template_run(
    template: OneValueApart,
    payloads: list[str],
    start: int,
    times: list[Any] | None,
    usual_heads: dict[float, str],
    out: list[str],
    checked: list[int],
    run: list[Sequence[str]] | None,
) -> int:
    """Write the usual events from ``start`` on that ``template`` recognises, the way the
    loop in ``quick`` writes them; the index of the first event it leaves to the loop.

    The loop's steps for such an event, without its branches: ``payloads`` are the usual
    payloads of a stream checked whole by ``safe_text``, and ``run`` (when redaction
    checks the stream) the values of the run of events of the template's skeleton.
    """
    value_in, tail = template.value_in, _TAILS[template.skeleton.layout]
    before, after = template.before, template.after
    index, count = start, len(payloads)
    while index < count:
        payload = payloads[index]
        value = value_in(payload)
        t = times[index] if times is not None else None
        if value is None or type(t) is not float or not math.isfinite(t):
            break  # not the template's text, or a head the loop writes another way
        if run is not None:
            run.append((*before, value, *after))
        checked.append(len(out))
        out.append(_usual_head(usual_heads, t) + payload + tail)
        index += 1
    return index


def _usual_head(known: dict[float, str], t: float) -> str:
    """The head of the usual event at finite time ``t``, from ``known`` heads by time."""
    head = known.get(t) if t > 0.0 else None  # not -0.0 for 0.0
    if head is None:
        head = lines.data_event_head(t, _NO_FIELDS)
        if t > 0.0 and len(known) < _HEADS_KEPT:
            known[t] = head
    return head


def _columns(
    strings: dict[Path, list[str]], skeleton: Skeleton | None, run: list[Sequence[str]]
) -> None:
    """Add the string values of a run of events of one skeleton to ``strings``, by path."""
    if skeleton is None or not run:
        return
    for path, column in zip(skeleton.paths, zip(*run)):  # noqa: B905 (same length)
        group = strings.get(path)
        if group is None:
            strings[path] = list(column)
        else:
            group.extend(column)


def _add(strings: dict[Path, list[str]], path: Path, value: str) -> None:
    group = strings.get(path)
    if group is None:
        strings[path] = [value]
    else:
        group.append(value)
