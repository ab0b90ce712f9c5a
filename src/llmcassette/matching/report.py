"""Explain why a request was not found in a cassette: which field differs, and from what.

Computed only on a miss. Every recorded request is compared with the incoming one (both as
redaction left them), the candidates are ranked by how close they are, and the report leads
with the first difference of the closest one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from llmcassette.errors import command_for_test, without_controls
from llmcassette.matching.canonical import body_value
from llmcassette.matching.jsondiff import Difference, Missing, differences
from llmcassette.matching.matchers import (
    answer_headers,
    comparable_body,
    comparable_method,
    content_type,
    sent_body,
)
from llmcassette.matching.normalize import MatchConfig, VolatileShape, parse_path

MAX_DIFFERENCES = 6
MAX_CANDIDATES = 3

#: Where the cassette is in use, so that a hint gives the command for it: under the pytest
#: plugin (``pytest_options``: for a test whose vcr_config or marker sets record_mode, which
#: wins over ``--record-mode``), in ``llmcassette.use_cassette``, on a VCR the user gave
#: to ``configure``, or around a program ``llmcassette run`` runs (which takes no match
#: options: leaving a field out means opening the cassette in the program).
Context = Literal["pytest", "pytest_options", "use_cassette", "vcr", "run"]


@dataclass(frozen=True)
class _Hints:
    record: str  # how to record a missing cassette
    rerecord: str  # how to record a changed request again
    options: str  # where match= goes, with "{}" for it


_OPTIONS_WIN = (
    "vcr_config or the vcr marker sets record_mode, which --record-mode does not override"
)


def _pytest_hints(test: str | None, forced: bool) -> _Hints:
    """The hints under the pytest plugin: the commands name the test (its node id) when
    known, so that it can be copied; ``forced`` where the test's own record_mode wins over
    --record-mode."""
    record = command_for_test(test, "once", forced=forced)
    rerecord = command_for_test(test, "rewrite", forced=forced)
    if test is None:  # the option alone: "run with --record-mode=once"
        record = "run with " + record.removeprefix("pytest ")
    if forced:
        return _Hints(
            f"{record} ({_OPTIONS_WIN})",
            f"{rerecord}; {_OPTIONS_WIN}",
            "{} in vcr_config or the vcr marker",
        )
    return _Hints(
        record, f"{rerecord}, or record_mode='new_episodes'", "{} in vcr_config or the vcr marker"
    )


_HINTS: dict[str, _Hints] = {
    "pytest": _pytest_hints(None, forced=False),
    "pytest_options": _pytest_hints(None, forced=True),
    "use_cassette": _Hints(
        "use_cassette(..., record_mode='once')",
        "use_cassette(..., record_mode='all') to record it afresh, "
        "or record_mode='new_episodes' to add this request",
        "use_cassette(..., {})",
    ),
    "vcr": _Hints(
        "my_vcr.use_cassette(..., record_mode='once')",
        "my_vcr.use_cassette(..., record_mode='all') to record it afresh, "
        "or record_mode='new_episodes' to add this request",
        "configure(my_vcr, {})",
    ),
    "run": _Hints(
        "llmcassette run --record CASSETTE -- COMMAND",
        "llmcassette run --record CASSETTE -- COMMAND to record it afresh, "
        "or --cassette CASSETTE --mode new_episodes to add this request",
        "llmcassette.use_cassette(..., {}) in the program instead of llmcassette run, "
        "which takes no such option",
    ),
}


def _hints(context: Context, test: str | None) -> _Hints:
    """The hints of ``context``; under pytest, with ``test`` (a node id) in their commands."""
    if test is not None and context in ("pytest", "pytest_options"):
        return _pytest_hints(test, forced=context == "pytest_options")
    return _HINTS[context]


def how_to_fix(reason: str, context: Context, test: str | None = None) -> str | None:
    """A mismatch's ``how_to_fix`` in one line, with the commands of where the cassette is
    used (``context``; the pytest ones name ``test``), as its message's hints give them."""
    hints = _hints(context, test)
    if reason == "no_match":
        return (
            "make the request match the recorded one (see differences), or record the "
            f"cassette again ({hints.rerecord})"
        )
    if reason == "exhausted":
        return (
            f"the matching interactions were all played already: record the cassette again "
            f"({hints.rerecord}), or allow replaying them: "
            + hints.options.format("allow_playback_repeats=True")
        )
    if reason == "other_session":
        return (
            "make the call in the llmcassette.session it was recorded in, or record the "
            "cassette again if the code's sessions changed"
        )
    if reason == "cassette_not_found":
        return f"record the cassette ({hints.record})"
    return None


@dataclass(frozen=True)
class Candidate:
    """A recorded interaction compared with the incoming request."""

    position: int  # the interaction's number in the cassette, from 1 (as messages say #N)
    method: str
    uri: str
    differences: tuple[Difference, ...]
    played: bool
    # Loaded from another test's cassette that the test names: that file, and the
    # interaction's number in it (None: the cassette's own).
    source: tuple[str, int] | None = None
    # The llmcassette.session it was recorded in (None: outside any).
    session: str | None = None

    @property
    def where(self) -> str:
        """``#3``, or ``#1 of test_other.jsonl`` for an interaction of a named cassette."""
        if self.source is None:
            return f"#{self.position}"
        return f"#{self.source[1]} of {os.path.basename(self.source[0])}"

    @property
    def outside_body(self) -> int:
        """How many differences are outside the body (method, URL): none means vcrpy's
        default ``match_on`` matches it."""
        return sum(1 for d in self.differences if not d.path.startswith("body"))

    @property
    def score(self) -> tuple[int, int, int]:
        """Fewer differences first, then fewer outside the body, then smaller ones."""
        size = sum(_change_size(d.recorded, d.incoming) for d in self.differences)
        return (self.outside_body, len(self.differences), size)


def _change_size(recorded: Any, incoming: Any) -> int:
    """How much of two values differs: what remains once their common start and end go."""
    if not (isinstance(recorded, str) and isinstance(incoming, str)):
        return len(repr(recorded)) + len(repr(incoming))
    limit = min(len(recorded), len(incoming))
    start = 0
    while start < limit and recorded[start] == incoming[start]:
        start += 1
    end = 0
    while end < limit - start and recorded[-1 - end] == incoming[-1 - end]:
        end += 1
    return len(recorded) + len(incoming) - 2 * (start + end)


def _request_parts(request: Any, config: MatchConfig) -> dict[str, Any]:
    query: dict[str, list[str]] = {}
    for name, value in request.query:
        query.setdefault(name, []).append(value)
    return {
        "method": comparable_method(request),
        "url": {
            "scheme": request.scheme,
            "host": request.host,
            "port": request.port,
            "path": request.path,
            "query": query,
        },
        "headers": answer_headers(request),
        "body": comparable_body(request, config),
    }


def compare(incoming: Any, recorded: Any, config: MatchConfig) -> tuple[Difference, ...]:
    """Every difference between two (already redacted) vcrpy requests, with its path; a
    recorded placeholder in the body filled by the incoming request is none
    (``differences``)."""
    same = comparable_method(incoming) == comparable_method(recorded)
    same = same and incoming.uri == recorded.uri
    same = same and answer_headers(incoming) == answer_headers(recorded)
    if same and incoming.body == recorded.body:
        return ()  # equal as sent: nothing to canonicalize (a body can be megabytes)
    ours, theirs = _request_parts(incoming, config), _request_parts(recorded, config)
    found: list[Difference] = []
    for part in ("method", "url", "headers", "body"):
        # A recorded placeholder accepts any value in the body (``FillingPlaceholders``);
        # the URL is matched as it is (both sides redacted), as the lookup matches it.
        found.extend(differences(theirs[part], ours[part], part, placeholders=part == "body"))
    return tuple(_as_sent(found, incoming, recorded))


def _as_sent(found: list[Difference], incoming: Any, recorded: Any) -> list[Difference]:
    """``found``, a side that matching reads as absent but the body holds (an empty value:
    ``empty_is_absent``) shown as the body holds it: ``recorded {}``, not ``(absent)``."""
    if not any(
        d.path.startswith(("body.", "body[")) and Missing in (type(d.recorded), type(d.incoming))
        for d in found
    ):
        return found
    sent = {
        side: body_value(sent_body(request), content_type(request))
        for side, request in (("recorded", recorded), ("incoming", incoming))
    }
    shown = []
    for difference in found:
        for side in ("recorded", "incoming"):
            if isinstance(getattr(difference, side), Missing) and difference.path != "body":
                value = _at(sent[side], parse_path(difference.path))
                if not isinstance(value, Missing):
                    difference = dataclasses.replace(difference, **{side: value})
        shown.append(difference)
    return shown


def _at(value: Any, tokens: Sequence[str | int]) -> Any:
    """The value at ``tokens`` (``parse_path``'s) in a parsed body, or a ``Missing``."""
    for token in tokens:
        if isinstance(token, int):
            if not isinstance(value, list) or not 0 <= token < len(value):
                return Missing()
            value = value[token]
        elif isinstance(value, dict) and token in value:
            value = value[token]
        else:
            return Missing()
    return value


# The presets a hint may suggest, the narrowest first: a tool-call id is left out by its
# place (its key or holder), the others wherever their shape occurs in a string.
_SUGGESTED_PRESETS: tuple[VolatileShape, ...] = (
    "tool_call_id",
    "uuid",
    "hex_id",
    "timestamp",
    "epoch_seconds",
    "epoch_ms",
)


@dataclass(frozen=True)
class LeaveOut:
    """What leaves a candidate's body differences out of matching, should they change on
    every run: ``volatile`` presets, for values a client makes anew on every run (a uuid, a
    tool-call id: most often copied to other places of the body and of later calls, where
    leaving out their one path would not help), then the JSON paths no preset covers."""

    volatile: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def option(self) -> str:
        """The ``match`` option, as Python: ``match={'volatile': ['uuid']}``."""
        parts = []
        if self.volatile:
            parts.append(f"'volatile': {list(self.volatile)!r}")
        if self.ignore:
            parts.append(f"'ignore': {list(self.ignore)!r}")
        return "match={" + ", ".join(parts) + "}"


def leave_out_for(
    incoming: Any, recorded: Any, config: MatchConfig, differences: Sequence[Difference]
) -> LeaveOut | None:
    """What leaves ``differences`` (of ``incoming`` from ``recorded``) out of matching: the
    presets that take some of them away, tried in turn, then the paths left; None when
    one of them is not in the body (a URL or method the match option cannot leave out)."""
    if not differences or not all(d.path.startswith(("body.", "body[")) for d in differences):
        return None
    left = [difference.path for difference in differences]
    presets: list[VolatileShape] = []
    for preset in _SUGGESTED_PRESETS:
        if preset in config.volatile:
            continue
        wider = dataclasses.replace(config, volatile=(*config.volatile, *presets, preset))
        remaining = {difference.path for difference in compare(incoming, recorded, wider)}
        if any(path not in remaining for path in left):
            presets.append(preset)
            left = [path for path in left if path in remaining]
    return LeaveOut(tuple(presets), tuple("$" + path[len("body") :] for path in left))


def leave_out_option(leave: LeaveOut, context: Context, test: str | None = None) -> str:
    """``leave``'s ``match`` option where ``context`` takes it: ``match={...} in vcr_config
    or the vcr marker`` under pytest, ``use_cassette(..., match={...})``..."""
    return _hints(context, test).options.format(leave.option())


def echoes_an_answer(incoming: Any, difference: Difference) -> bool:
    """Whether ``difference`` is in the text of a turn of the conversation that the model
    said (an ``assistant`` message, a Gemini ``model`` turn) and the client sends back: the
    answer an earlier call got differs from the one recorded in this conversation. (A field
    an SDK adds to such turns differs from absent, not from text.)"""
    texts = isinstance(difference.recorded, str) and isinstance(difference.incoming, str)
    if not texts or not difference.path.startswith(("body.", "body[")):
        return False
    tokens = parse_path(difference.path)
    if len(tokens) < 3 or tokens[0] not in ("messages", "contents", "input"):
        return False
    if tokens[2:] != ("content",) and tokens[-1] != "text":
        return False  # not the turn's text: an id, a tool call's arguments
    body = comparable_body(incoming, MatchConfig(sdk_defaults=False))
    turns = body.get(tokens[0]) if isinstance(body, dict) else None
    index = tokens[1]
    if not isinstance(turns, list) or not isinstance(index, int) or index >= len(turns):
        return False
    turn = turns[index]
    return isinstance(turn, dict) and turn.get("role") in ("assistant", "model")


def call_label(call: int, method: str, uri: str) -> str:
    """``call #3 to POST /v1/chat/completions``."""
    from urllib.parse import urlsplit

    return f"call #{call} to {method} {urlsplit(uri).path or '/'}"


def render(
    *,
    reason: str,
    call: int,
    method: str,
    uri: str,
    path: str | None,
    recorded: list[Candidate],
    record_mode: str,
    context: Context,
    named: Sequence[tuple[str, str]] = (),
    leave: LeaveOut | None = None,
    session: str | None = None,
    echoed: bool = False,
    test: str | None = None,
) -> str:
    """The message of a ``CassetteMismatch`` (see ``llmcassette.errors``); its hints give
    the commands for ``context``. ``named`` are the other tests' cassettes the test names,
    whose interactions ``recorded`` holds too (their ``source``), each with its path as
    the message shows it. ``leave`` is what leaves
    the closest candidate's differences out of matching (``leave_out_for``);
    ``session`` the llmcassette.session the request was made in; ``echoed`` says that
    difference is in an answer of the model the client sends back (``echoes_an_answer``);
    ``test`` the pytest node id of the test, which the pytest hints' commands name."""
    hints = _hints(context, test)
    where = call_label(call, method, uri)
    cassette = _cassette_line(path, recorded, record_mode, named)
    lines: list[str] = []
    if reason == "cassette_not_found":
        lines.append(f"{where}, but the cassette does not exist: {path}")
        lines.append(f"  record it: {hints.record} (record_mode is {record_mode!r})")
        return "\n".join(lines)
    exact = [candidate for candidate in recorded if not candidate.differences] or [
        # a legacy cassette replayed on method and URL: its body may have drifted
        candidate
        for candidate in recorded
        if not candidate.outside_body
    ]
    if reason == "other_session":
        alike = [candidate for candidate in recorded if not candidate.differences]
        recorded_in = _sessions_phrase({candidate.session for candidate in alike})
        lines.append(
            f"{where}, but the {len(alike)} recorded {'call' if len(alike) == 1 else 'calls'} "
            f"like it {'was' if len(alike) == 1 else 'were'} made {recorded_in}, and this "
            f"one {_session_name(session)}"
        )
        lines.append(f"  cassette: {cassette}")
        lines.append(
            "  to fix: a request matches only interactions recorded in its own session: make "
            f"the call in the session it was recorded in, or record again ({hints.rerecord}) "
            "if the code's sessions changed (docs/concurrency.md)"
        )
        return "\n".join(lines)
    if reason == "exhausted":
        lines.append(
            f"{where}, but the cassette recorded {len(exact)} "
            f"{'such call' if len(exact) == 1 else 'such calls'}, all played already"
        )
        lines.append(f"  cassette: {cassette}")
        lines.append(
            f"  to fix: record again ({hints.rerecord}) if the code now makes more calls, or "
            "allow repeats: " + hints.options.format("allow_playback_repeats=True")
        )
        return "\n".join(lines)
    closest = recorded[0] if recorded else None
    if closest is None:
        lines.append(f"{where}: the cassette holds no interactions")
    else:
        first = closest.differences[0]
        lines.append(f"{first.describe()}  [{where}]")
        lines.append(
            f"  closest recorded: interaction {closest.where} "
            f"({without_controls(f'{closest.method} {closest.uri}')})"
        )
        for difference in closest.differences[1:MAX_DIFFERENCES]:
            lines.append(f"    {difference.describe()}")
        hidden = len(closest.differences) - MAX_DIFFERENCES
        if hidden > 0:
            lines.append(f"    … and {hidden} more difference{'s' if hidden > 1 else ''}")
        others = recorded[1:MAX_CANDIDATES]
        if others:
            lines.append("  other near candidates:")
            for other in others:
                count = len(other.differences)
                lines.append(
                    f"    {other.where}: {count} difference{'s' if count != 1 else ''}, "
                    f"first {other.differences[0].describe()}"
                )
    lines.append(f"  cassette: {cassette}")
    moved = _sdk_moved(closest)
    if moved:
        lines.append(f"  likely cause: {moved}")
    if echoed and closest is not None:
        # Leaving the answer out would let one caller carry on another's conversation.
        lines.append(
            f"  to fix: {closest.differences[0].path} is an answer of the model, sent back: "
            "an earlier call got another recorded answer than the one this conversation "
            "continues (or the code now changes an answer before sending it back). Callers "
            "that send identical requests at the same time get the "
            "recorded answers in arrival order: run each in its own "
            f"llmcassette.session(name) and record again ({hints.rerecord}); see "
            "docs/concurrency.md"
        )
        return "\n".join(lines)
    lines.append(
        f"  to fix: if the request changed on purpose, record again ({hints.rerecord}); "
        + _leave_out_hint(closest, hints, leave)
    )
    return "\n".join(lines)


def _session_name(session: str | None) -> str:
    return "outside any session" if session is None else f"in llmcassette.session {session!r}"


def _sessions_phrase(sessions: set[str | None]) -> str:
    """``in llmcassette.session 'a'``, ``in llmcassette.sessions 'a', 'b'``, ``outside any
    session``, or both."""
    named = sorted(session for session in sessions if session is not None)
    parts = ["outside any session"] if None in sessions else []
    if len(named) == 1:
        parts.append(_session_name(named[0]))
    elif named:
        parts.append("in llmcassette.sessions " + ", ".join(map(repr, named)))
    return " and ".join(parts)


def _cassette_line(
    path: str | None,
    recorded: list[Candidate],
    record_mode: str,
    named: Sequence[tuple[str, str]],
) -> str:
    """``PATH (N interactions, P played, record_mode 'none')``, and a line per cassette of
    another test that the test names, with what it holds."""

    def counted(candidates: list[Candidate]) -> str:
        size = f"{len(candidates)} interaction" + ("" if len(candidates) == 1 else "s")
        return f"{size}, {sum(1 for candidate in candidates if candidate.played)} played"

    own = [candidate for candidate in recorded if candidate.source is None]
    line = f"{path} ({counted(own)}, record_mode {record_mode!r})"
    for file, shown in named:
        held = [c for c in recorded if c.source is not None and c.source[0] == file]
        line += f"\n  also loaded, as the test names it: {shown} ({counted(held)})"
    return line


@dataclass(frozen=True)
class _VersionMove:
    """An SDK release that changed the API version in every path it calls."""

    recorded: str  # the path segment cassettes recorded before hold
    incoming: str  # the one the new release sends
    advice: str


# Recording again is always possible; these keep the old cassettes replaying meanwhile.
_VERSION_MOVES = (
    _VersionMove(
        "/v1beta/",
        "/v1/",
        "google-genai 3 calls the Gemini API's /v1/ where earlier releases called /v1beta/; "
        "to replay cassettes recorded before, set GOOGLE_GENAI_API_VERSION=beta or pass "
        "http_options={'api_version': 'v1beta'} to the client (docs/providers.md)",
    ),
)


def _sdk_moved(closest: Candidate | None) -> str | None:
    """What an SDK upgrade changed, when the closest candidate differs in a path that one
    known release moved to another API version."""
    if closest is None:
        return None
    for difference in closest.differences:
        if difference.path != "url.path":
            continue
        recorded, incoming = difference.recorded, difference.incoming
        for move in _VERSION_MOVES:
            if (
                isinstance(recorded, str)
                and move.recorded in recorded
                and recorded.replace(move.recorded, move.incoming, 1) == incoming
            ):
                return move.advice
    return None


def _leave_out_hint(closest: Candidate | None, hints: _Hints, leave: LeaveOut | None) -> str:
    """How to stop matching on the fields that differ, when they change on every run."""
    if closest is None or leave is None:
        return (
            "if a field changes on every run, leave it out with the match option "
            "(ignore, volatile, hosts, normalizers: docs/matching.md)"
        )
    first = closest.differences[0].path
    count = len(closest.differences)
    what = f"{first} changes" if count == 1 else f"these {count} fields change"
    option = hints.options.format(leave.option())
    if leave.volatile and count == 1:
        return (
            f"if {what} on every run, leave out every such value (here and wherever it is "
            f"copied): {option} (docs/matching.md)"
        )
    if not leave.volatile and count == 1:
        return (
            f"if {what} on every run, leave it out: {option} "
            "(or a volatile shape or normalizer: docs/matching.md)"
        )
    return f"if {what} on every run, leave them out: {option} (docs/matching.md)"


PROMPT_PREVIEW = 60


def describe_request(request: Any) -> str:
    """What tells one LLM call apart from the next: ``POST /v1/chat/completions
    model=gpt-4o "What is the capital of..."`` (the model and the start of the last user
    message or prompt, when the body has them)."""
    from urllib.parse import urlsplit

    try:
        url = urlsplit(request.uri)
        # The query stays: of GET requests it is often all that tells them apart.
        where = (url.path or "/") + (f"?{url.query}" if url.query else "")
    except ValueError:  # "[...]" that is no IPv6 address: its error would quote the text
        where = "(a URL that cannot be parsed)"
    parts = [request.method, where]
    body = comparable_body(request, MatchConfig(sdk_defaults=False))
    if isinstance(body, dict):
        model = body.get("model")
        if isinstance(model, str):
            parts.append(f"model={model}")
        prompt = last_user_text(body)
        if prompt:
            one_line = " ".join(prompt.split())
            if len(one_line) > PROMPT_PREVIEW:
                one_line = one_line[: PROMPT_PREVIEW - 1] + "…"
            parts.append(repr(one_line))
    return " ".join(parts)


def last_user_text(body: dict[str, Any]) -> str | None:
    """The text of the last user turn of a chat body (OpenAI, Anthropic, the Responses API,
    Gemini ``contents``), or a completion ``prompt``; None when there is none."""
    for key in ("messages", "input", "contents"):
        turns = body.get(key)
        if isinstance(turns, str):
            return turns
        if not isinstance(turns, list):
            continue
        for turn in reversed(turns):
            if isinstance(turn, dict) and turn.get("role") == "user":
                text = _text_of(turn.get("content", turn.get("parts")))
                if text:
                    return text
    prompt = body.get("prompt")
    return prompt if isinstance(prompt, str) else None


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
        return " ".join(texts) or None
    return None
