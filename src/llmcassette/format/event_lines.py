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

from dataclasses import dataclass, field
from typing import Any, Protocol

from . import events, jsontext, lines
from .skeleton import Match, Skeleton, Skeletons

Path = tuple[Any, ...]

# What follows the payload in an event line, by layout: a spaced payload is written as
# the value of ``data`` in a line, whose items are spaced alike, then its ``layout``.
_TAILS = {jsontext.DEFAULT_LAYOUT: "}", "spaced": ', "layout": "spaced"}'}


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

    def proves_clean(self, texts: list[str]) -> bool:
        """Whether no rule can match in any of ``texts``, checked cheaply."""
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

    def quick(self, kind: str, text: str, times: list[Any] | None) -> QuickLines | None:
        """The event lines of a stream in which redaction would change nothing, or None.

        None when an event's payload is JSON in a layout other than compact or spaced,
        when an event line would be escaped, or when the redactor cannot prove the stream
        clean: the caller then parses, redacts and writes every event the usual way.
        """
        pieces = events.split_events(kind, text)
        if times is not None and len(times) != len(pieces):
            times = None
        check = self.redaction is not None
        strings: dict[Path, list[str]] = {}
        heads: list[str] = []
        out: list[str] = []
        checked: list[int] = []
        for index, piece in enumerate(pieces):
            t = times[index] if times is not None else None
            split = events.event_fields(kind, piece)
            if split is None:
                fields: dict[str, Any] = {"raw": piece}
                _add(strings, ("raw",), piece)
                out.append(lines.event_line(t, fields, None))
                continue
            fields, payload = split
            for name in ("event", "id"):
                if name in fields:
                    _add(strings, (name,), fields[name])
            if payload is None:
                out.append(lines.event_line(t, fields, None))
                continue
            match = self._match(payload)
            if match is None:
                return None  # JSON that is not compact, or of a shape that cannot be learnt
            if isinstance(match, str):  # not JSON: stored as text
                fields["text"] = payload
                _add(strings, ("text",), payload)
                out.append(lines.event_line(t, fields, None))
                continue
            skeleton, values = match
            head = lines.data_event_head(t, fields)
            if fields and any(s in head for s in lines.LINE_SEPARATORS):
                return None  # the line would be escaped: not the bytes checked here
            if check:
                if not self._outline_is_clean(skeleton):
                    return None
                for path, value in zip(skeleton.paths, values):  # noqa: B905 (same length)
                    _add(strings, path, value)
                heads.append(head)
            checked.append(len(out))
            out.append(head + payload + _TAILS[skeleton.layout])
        if check:
            assert self.redaction is not None
            texts = ["".join(group) for group in strings.values()]
            if not self.redaction.proves_clean(texts + heads):
                return None
        return QuickLines(out, checked)

    def _match(self, payload: str) -> Match | str | None:
        """The payload's match, the payload itself when it is stored as text, or None."""
        match = self.skeletons.match(payload)
        if match is not None:
            return match
        stored = events.structure_payload(payload)
        if "text" in stored:
            return payload
        layout = stored.get("layout", jsontext.DEFAULT_LAYOUT)
        if layout not in _TAILS:
            return None
        return self.skeletons.learn(payload, stored["data"], layout)

    def _outline_is_clean(self, skeleton: Skeleton) -> bool:
        verdict = self._outline_clean.get(id(skeleton))
        if verdict is None:
            assert self.redaction is not None
            # Framed as in a line: what precedes the payload ends with ": ".
            framed = ": " + skeleton.outline + _TAILS[skeleton.layout]
            verdict = self.redaction.proves_clean([framed])
            self._outline_clean[id(skeleton)] = verdict
        return verdict


def _add(strings: dict[Path, list[str]], path: Path, value: str) -> None:
    group = strings.get(path)
    if group is None:
        strings[path] = [value]
    else:
        group.append(value)
