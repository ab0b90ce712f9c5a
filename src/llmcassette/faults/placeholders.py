"""``{{fromRequest:<regex>}}``: response text filled in from the request being answered.

A recorded or scripted response may hold ``{{fromRequest:REGEX}}``. At replay it becomes
the last match of REGEX (its first group, if it has groups) in the incoming request's
string values: the JSON body's strings (or the whole body when it is not JSON), the URL
with ``{{fromRequest.url:REGEX}}``, header values with ``{{fromRequest.headers:REGEX}}``.

The placeholder ends at the last two braces of the run of ``}`` that closes it, so a
pattern may end in a brace quantifier: ``{{fromRequest:id-\\d{8}}}`` is the pattern
``id-\\d{8}``. Inside a JSON body (and in SSE/NDJSON events) it is part of a JSON string,
so its backslashes are JSON-escaped (``\\\\d``) and the filled-in value is JSON-escaped.

A pattern whose structure lets Python's ``re`` backtrack without end (``(a+)+``,
``.*.*x``: ``faults/backtracking.py``) is refused before it runs, like an invalid one. One
whose failed search takes time quadratic in the text (``.*!``, ``(\\d+)-(\\d+)``) is refused
on requests with long runs of what its repeat takes (``SEARCH_LIMIT``): a base64 image is
a megabyte-long run for ``.*!``, and ``re.search(".*!", "a" * 10**6)`` runs for minutes.

Escape: ``{{!fromRequest`` stands for the literal text ``{{fromRequest`` (each extra ``!``
stands for one ``!``). llmcassette adds the ``!`` itself when it records a response that
happens to contain the marker text, so such recordings replay unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from llmcassette.cassette import jsontext
from llmcassette.cassette.compression import decode_content
from llmcassette.errors import PlaceholderError
from llmcassette.faults.backtracking import backtracking_problem, quadratic_repeat, quadratic_runs

MARKER = b"fromRequest"
_OPENING = re.compile(r"\{\{(!*)fromRequest")
_SCOPE = re.compile(r"(?:\.(body|url|headers))?:")
#: The longest text a pattern of quadratic search time runs on (the root of the sum of the
#: squares of the lengths of a scope's strings): a second at most for such patterns.
SEARCH_LIMIT = 10_000


def has_markers(data: bytes) -> bool:
    """Whether ``data`` may hold a placeholder or an escaped marker (a cheap first test)."""
    return MARKER in data


def escape(text: str) -> str:
    """Recorded text as stored: every ``{{fromRequest`` (however many ``!``) gets one more ``!``."""
    return _OPENING.sub(lambda m: "{{!" + m.group(1) + "fromRequest", text)


def escape_body(body: bytes, headers: dict[str, list[str]]) -> tuple[bytes, dict[str, list[str]]]:
    """A received response body (and its headers) as the cassette must keep it.

    Literal marker text gets its ``!`` so that replay gives it back unchanged. A compressed
    body is decoded first when it holds such text (cassettes store bodies decoded anyway).
    """
    decoded, decoded_headers = decode_content(body, headers)
    if not has_markers(decoded):
        return body, headers
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        return body, headers
    return escape(text).encode("utf-8"), decoded_headers


@dataclass(frozen=True)
class _Found:
    """A placeholder or an escaped marker at ``text[start:end]``."""

    start: int
    end: int
    #: What an escaped marker stands for, or the placeholder as written.
    text: str
    #: The part of the request a placeholder reads (None: an escaped marker).
    scope: str | None = None
    pattern: re.Pattern[str] | None = None
    #: Whether a failed search for the pattern takes time quadratic in the text.
    quadratic: bool = False


def _found_in(
    text: str, *, json_strings: bool, cassette: str | None, location: str
) -> Iterator[_Found]:
    """The placeholders and escaped markers of ``text``, in order; raises
    ``PlaceholderError`` for one that is malformed, unterminated or an invalid regex."""
    position = 0
    for opening in _OPENING.finditer(text):
        if opening.start() < position:
            continue
        bangs = opening.group(1)
        if bangs:  # an escaped marker: drop one "!"
            position = opening.end()
            yield _Found(opening.start(), position, "{{" + bangs[1:] + "fromRequest")
            continue
        scope_match = _SCOPE.match(text, opening.end())
        if scope_match is None:
            raise PlaceholderError(
                cassette,
                location,
                f"malformed placeholder {_excerpt(text, opening.start())!r}: expected "
                "{{fromRequest:REGEX}} (or .url / .headers / .body before the colon)",
                "write {{!fromRequest to keep the text as it is",
            )
        close = text.find("}}", scope_match.end())
        if close < 0:
            raise PlaceholderError(
                cassette,
                location,
                f"unterminated placeholder {_excerpt(text, opening.start())!r}: no closing }}}}",
                "end it with }} (a pattern ending in } keeps its brace: ...\\d{8}}}})",
            )
        end = close + 2
        while end < len(text) and text[end] == "}":
            end += 1
        raw_pattern = text[scope_match.end() : end - 2]
        pattern = _decode(raw_pattern) if json_strings else raw_pattern
        placeholder = text[opening.start() : end]
        try:
            compiled = re.compile(pattern)
        except RecursionError:  # re's parser recurses once per group
            raise PlaceholderError(
                cassette,
                location,
                f"invalid regex in {_excerpt(placeholder, 0)}: its groups nest too deeply for "
                "Python's re module",
                "nest groups a few levels at most",
            ) from None
        except re.error as problem:
            raise PlaceholderError(
                cassette,
                location,
                f"invalid regex in {placeholder}: {problem}",
                "write a pattern Python's re module compiles (in JSON text, with its "
                "backslashes doubled: \\\\d)",
            ) from None
        hazard = backtracking_problem(pattern)
        if hazard is not None:
            raise PlaceholderError(
                cassette,
                location,
                f"refused {placeholder}: {hazard} (Python's re has no time limit, so such a "
                "pattern could hang the replay)",
                "rewrite it so that one quantifier alone can take each character: put a "
                'literal or a negated class between quantifiers ("(.*) (.*)x" -> "([^ ]*) '
                '([^x]*)x"), and keep quantifiers out of repeated groups ("(\\w+ ?)+" -> '
                '"[\\w ]+")',
            )
        position = end
        scope = scope_match.group(1) or "body"
        yield _Found(opening.start(), end, placeholder, scope, compiled, quadratic_repeat(pattern))


def check(text: str, *, json_strings: bool, cassette: str | None, location: str) -> None:
    """Raise the ``PlaceholderError`` that ``resolve`` raises for ``text`` whatever the
    request: a placeholder that is malformed, unterminated or an invalid regex."""
    for _ in _found_in(text, json_strings=json_strings, cassette=cassette, location=location):
        pass


def resolve(
    text: str,
    request: Any,
    *,
    json_strings: bool,
    cassette: str | None,
    location: str,
) -> str:
    """``text`` with its placeholders filled in from ``request`` and its escapes undone."""
    out: list[str] = []
    position = 0
    values: dict[str, list[str]] = {}
    for found in _found_in(text, json_strings=json_strings, cassette=cassette, location=location):
        out.append(text[position : found.start])
        position = found.end
        if found.scope is None or found.pattern is None:
            out.append(found.text)
            continue
        if found.scope not in values:
            values[found.scope] = list(_request_strings(request, found.scope))
        if found.quadratic:
            _check_search_size(found, found.pattern, values[found.scope], cassette, location)
        match = _last_match(found.pattern, values[found.scope])
        if match is None:
            raise PlaceholderError(
                cassette,
                location,
                f"{found.text} matches nothing in the request's {found.scope}",
                "check the pattern against the request this interaction answers "
                "(`llmcassette show --raw` prints it)",
            )
        out.append(json.dumps(match, ensure_ascii=False)[1:-1] if json_strings else match)
    if position == 0:
        return text
    out.append(text[position:])
    return "".join(out)


def _check_search_size(
    found: _Found,
    pattern: re.Pattern[str],
    values: list[str],
    cassette: str | None,
    location: str,
) -> None:
    # A failed search costs up to the square of each run its repeat takes.
    runs = quadratic_runs(pattern.pattern, values)
    if sum(run**2 for run in runs) <= SEARCH_LIMIT**2:
        return
    raise PlaceholderError(
        cassette,
        location,
        f"refused {found.text} on the request's {found.scope}: a search for it may start "
        "over at every character of a run its repeat takes, so a failed one takes time "
        f"quadratic in the run, and the request's {found.scope} holds runs of such "
        f"characters whose squares add up to more than {SEARCH_LIMIT:,} squared (the "
        f"longest: {max(runs):,}; Python's re has no time limit, so the search could hang "
        "the replay)",
        'begin the pattern with text its repeat cannot take ("pages (\\d+)-(\\d+)" rather '
        'than "(\\d+)-(\\d+)", "id: (\\d+)" rather than "\\s*(\\d+)"), or end it with the '
        'repeat ("model (.*)")',
    )


def _decode(raw: str) -> str:
    try:
        decoded = json.loads(f'"{raw}"')
    except json.JSONDecodeError:
        return raw
    return str(decoded)


def _excerpt(text: str, start: int) -> str:
    excerpt = text[start : start + 60]
    return excerpt + "…" if len(text) > start + 60 else excerpt


def _last_match(pattern: re.Pattern[str], values: list[str]) -> str | None:
    found = None
    for value in values:
        for match in pattern.finditer(value):
            found = match.group(1) if pattern.groups else match.group(0)
    return None if found is None else str(found)


def _request_strings(request: Any, scope: str) -> Iterator[str]:
    if scope == "url":
        yield str(request.uri)
        return
    if scope == "headers":
        for value in request.headers.values():
            yield from value if isinstance(value, list) else [str(value)]
        return
    body = request.body or b""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    try:
        parsed = jsontext.loads_body(text)
    except ValueError:
        yield text
        return
    yield from jsontext.strings_in(parsed)
