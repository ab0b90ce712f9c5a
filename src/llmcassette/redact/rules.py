"""The redaction rules: secret shapes, and the header, key and parameter names.

Every value-shape rule is one regular expression; :func:`compile_shapes` joins them into a
single alternation with one named group per rule, so a string is searched once, whatever
the number of rules. A rule may carry a validator that rejects look-alikes (``Basic`` prose).

:class:`Rules` is one configuration of them, compiled: it answers "is this secret, and by
which rule" and holds no state. The redactor (which replaces what it finds) and the
fail-closed scan (which reports it) each ask it on their own.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import json
import os
import re
import string
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from llmcassette.cassette.redacted import PLACEHOLDER_PATTERN
from llmcassette.config import RedactionConfig
from llmcassette.errors import ConfigError

#: Name and version of the built-in rule set, written in every cassette header. A cassette
#: whose header names another version is redacted again when it is loaded and saved
#: (``Redactor.already_applied``). 2: tokens running into base64 runs (RS256 JWTs),
#: camelCase keys, XML elements, more header and parameter names, lists under keys.
RULES_VERSION = 2

# What a placeholder looks like (its form is part of the cassette format); nothing inside
# one is ever matched by a rule.
PLACEHOLDER_RE = re.compile(PLACEHOLDER_PATTERN)
PLACEHOLDER_LEAD = "<REDACTED:"  # how every placeholder begins (``ShapeRule.leads``)


def _basic_auth_ok(value: str) -> bool:
    text = value.replace("%3D", "=").replace("%3d", "=")
    try:
        decoded = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and all(32 <= byte < 127 for byte in decoded)


@dataclass(frozen=True)
class ShapeRule:
    """A secret recognised by the shape of its value.

    ``triggers``: substrings one of which every string with a match contains (in the match
    or around it); a string holding none of them is skipped without running the regex
    (``()``: always run it).

    ``leads``: substrings that every match begins with or directly follows (``sk-``; the
    ``Bearer `` before a bearer token). Where they are rare in a long text, the regex is
    tried only where they begin and end (``_matches``); ``()``: at every position. A rule
    with leads never matches an empty string.
    """

    name: str
    pattern: str
    validate: Callable[[str], bool] | None = None
    triggers: tuple[str, ...] = ()
    leads: tuple[str, ...] = ()
    #: Every match holds separators that no base64 run has (a JWT's two dots): it is never
    #: a piece of encoded data, so ``in_base64_run`` does not apply to it, even where one of
    #: its parts is as long as a run (an RS256 signature: 342 characters) or a base64
    #: character follows it (``/verify/<JWT>/confirm``).
    separated: bool = False


_B = r"(?<![A-Za-z0-9_\-])"  # not preceded by a token character
_E = r"(?![A-Za-z0-9_\-])"  # not followed by one

SHAPE_RULES: tuple[ShapeRule, ...] = (
    ShapeRule(
        "private-key",
        r"-----BEGIN[A-Z ]{0,30}PRIVATE KEY-----[\s\S]{0,10000}?-----END[A-Z ]{0,30}PRIVATE KEY-----",
        triggers=("PRIVATE KEY",),
        leads=("-----BEGIN",),
    ),
    ShapeRule(
        "anthropic-api-key",
        _B + r"sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{20,}",
        triggers=("sk-ant-",),
        leads=("sk-ant-",),
    ),
    ShapeRule(
        "openrouter-api-key",
        _B + r"sk-or-v1-[0-9a-f]{64}" + _E,
        triggers=("sk-or-",),
        leads=("sk-or-v1-",),
    ),
    ShapeRule(
        "openai-api-key",
        _B
        + r"(?:sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{0,200}T3BlbkFJ[A-Za-z0-9_\-]{8,}"
        r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"
        r"|sk-[A-Za-z0-9]{48})" + _E,
        triggers=("sk-",),
        leads=("sk-",),
    ),
    ShapeRule(
        "google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, triggers=("AIza",), leads=("AIza",)
    ),
    ShapeRule(
        "google-oauth-token",
        _B + r"ya29\.[0-9A-Za-z_\-]{20,}",
        triggers=("ya29.",),
        leads=("ya29.",),
    ),
    ShapeRule(
        "aws-access-key-id",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Z0-9])",
        triggers=("AKIA", "ASIA", "ABIA", "ACCA"),
        leads=("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    ShapeRule(
        "aws-sigv4-signature",
        r"(?<=Signature=)[0-9a-f]{64}(?![0-9a-f])",
        triggers=("Signature=",),
        leads=("Signature=",),
    ),
    ShapeRule(
        "aws-bedrock-api-key",
        _B + r"ABSK[A-Za-z0-9+/]{40,}={0,2}",
        triggers=("ABSK",),
        leads=("ABSK",),
    ),
    ShapeRule(
        "github-token",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})" + _E,
        triggers=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        leads=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ShapeRule("huggingface-token", _B + r"hf_[A-Za-z]{34}" + _E, triggers=("hf_",), leads=("hf_",)),
    ShapeRule(
        "groq-api-key", _B + r"gsk_[A-Za-z0-9]{52}" + _E, triggers=("gsk_",), leads=("gsk_",)
    ),
    ShapeRule("xai-api-key", _B + r"xai-[A-Za-z0-9]{80}" + _E, triggers=("xai-",), leads=("xai-",)),
    ShapeRule(
        "perplexity-api-key",
        _B + r"pplx-[A-Za-z0-9]{48}" + _E,
        triggers=("pplx-",),
        leads=("pplx-",),
    ),
    ShapeRule(
        "replicate-api-token", _B + r"r8_[A-Za-z0-9]{37}" + _E, triggers=("r8_",), leads=("r8_",)
    ),
    ShapeRule(
        "langsmith-api-key",
        _B + r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}" + _E,
        triggers=("lsv2_",),
        leads=("lsv2_",),
    ),
    ShapeRule(
        "slack-token",
        _B + r"(?:xox[abposr]-[0-9A-Za-z\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})",
        triggers=("xox", "xapp-"),
        leads=("xox", "xapp-"),
    ),
    ShapeRule(
        "stripe-key",
        _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _E,
        triggers=("_live_", "_test_"),
        leads=("sk_", "rk_"),
    ),
    ShapeRule(
        "jwt",
        _B + r"ey[A-Za-z0-9_\-]{8,}\.ey[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{0,}",
        # Every match holds ".ey" (the payload after the header); "eyJ" (base64 of '{"')
        # would leave out a JWT whose header starts '{ "' (eyAi...), which the pattern takes.
        triggers=(".ey",),
        leads=("ey",),
        separated=True,
    ),
    ShapeRule(
        "basic-auth",
        r"(?:(?<=Basic )|(?<=basic )|(?<=BASIC ))[A-Za-z0-9+/]{6,}(?:={0,2}|(?:%3[Dd]){1,2})",
        _basic_auth_ok,
        triggers=("Basic ", "basic ", "BASIC "),
        leads=("Basic ", "basic ", "BASIC "),
    ),
    ShapeRule(
        "bearer-token",
        r"(?:(?<=Bearer )|(?<=bearer )|(?<=BEARER ))[A-Za-z0-9_\-.~+/]{16,}=*",
        triggers=("Bearer ", "bearer ", "BEARER "),
        leads=("Bearer ", "bearer ", "BEARER "),
    ),
    ShapeRule(
        "url-userinfo",
        r"(?<=://)[^\s/:@<>\"'?#]{1,200}:[^\s/@<>\"'?#]{1,200}(?=@)",
        triggers=("@",),  # rarer than "://", which every URL holds
        leads=("://",),
    ),
)

# Header names (lower case) whose whole value is a credential.
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cf-aig-authorization",
        "ocp-apim-subscription-key",
        "x-amz-security-token",
        "x-auth-token",
        "apikey",  # Supabase
        "x-functions-key",  # Azure Functions
        "x-rapidapi-key",
    }
)
# Suffixes and fragments that make any other header a credential header.
CREDENTIAL_HEADER_SUFFIXES = ("-api-key", "-apikey", "-token", "-secret", "-key-id")
# ``auth`` anywhere (``x-auth-token``, ``x-oauth-scopes``), but not the words ``author`` and
# ``authority``: a book's author in a "headers" object of a body, HTTP/2's ``:authority``
# (a host). ``authorization``/``authorisation`` stay credentials.
CREDENTIAL_HEADER_FRAGMENT = re.compile(r"auth(?!or(?!i[sz]))")
NOT_CREDENTIAL_HEADERS = frozenset({"www-authenticate", "authentication-info"})
# Cookie headers: each cookie value is replaced, the names and attributes are kept.
COOKIE_HEADERS = frozenset({"cookie", "set-cookie"})
# Account-bound (not secret) headers: the value is replaced by a placeholder. SigV4's
# x-amz-date is the signing time of the credentials in Authorization: it changes on every
# run and means nothing once the signature is gone, so it is replaced too (never matched).
IDENTIFYING_HEADERS = frozenset(
    {
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "x-goog-user-project",
        "x-amz-date",
    }
)
# Infrastructure trace identifiers: meaningless on replay, dropped. Provider request ids
# (x-request-id, request-id, x-amzn-requestid) are kept: SDKs expose them (error.request_id)
# and they grant no access; ``drop_headers`` removes them too.
DROPPED_HEADERS = frozenset(
    {"cf-ray", "x-amzn-trace-id", "x-amz-id-2", "x-amz-cf-id", "x-cloud-trace-context"}
)

# JSON object keys (lower case, "-" as "_") whose string value is a credential.
SECRET_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "x_api_key",
        "access_token",
        "refresh_token",
        "id_token",
        "auth_token",
        "bearer_token",
        "session_token",
        "client_secret",
        "password",
        "passwd",
        "secret",
        "secret_key",
        "private_key",
        "aws_secret_access_key",
        "secret_access_key",
        "authorization",
    }
)
# Secret keys whose value a person chooses: in a response they hold the model's words.
CHOSEN_SECRET_KEYS = frozenset({"password", "passwd", "secret"})


# JSON keys too common to always hold a credential (``{"key": "colour"}``): their string
# value is one when it looks like a token (``looks_like_token``), as a tool call's
# ``{"key": "<the API key>"}`` does.
TOKEN_KEYS = frozenset({"key"})
_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-.+/=:]{16,}")
# Query and form parameter names (lower case) whose value is a credential.
SECRET_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "password",
        "sig",
        "signature",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",
        "x-goog-credential",
        "subscription-key",  # Azure API Management
    }
)
# Parameters too common to always hold a credential: their value is one when it looks like a
# token (``looks_like_token``). ``code``: an OAuth authorization code or an Azure Functions
# key (``?code=...``), not ``?code=US``.
TOKEN_PARAMS = frozenset({"code"})

# Environment variable names whose values are redacted wherever they appear.
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
# A run of escapes. Spelled with the "%" first, not as ``(?:%XX)+``: ``re`` then jumps from
# one "%" to the next, where a pattern that opens with a repeat is tried at every position
# (20 times slower on a binary body read as Latin-1, which holds a few escapes by chance).
_URL_ESCAPES = re.compile(r"%[0-9A-Fa-f]{2}(?:%[0-9A-Fa-f]{2})*")


def _escaped_bytes(match: re.Match[str]) -> str:
    return bytes.fromhex(match.group().replace("%", "")).decode("utf-8", "replace")


def url_decoded(text: str) -> str | None:
    """``text`` with its URL escapes (``%2D``) decoded; None when it holds none.

    A percent sign alone ("100% sure") escapes nothing: looking for a real escape first
    spares decoding a long text that would come back unchanged.

    The text is what ``urllib.parse.unquote`` gives (a property test holds them equal):
    each run of escapes decoded as UTF-8 (invalid bytes replaced), all else kept. unquote
    cuts the text at every non-ASCII character first, which on a binary body read as
    Latin-1 means millions of pieces; a run of escapes ends at any character that is not
    one, and UTF-8 decoding restarts at an ASCII byte, so runs decode alike on their own.
    """
    if "%" not in text or _URL_ESCAPE.search(text) is None:
        return None
    return _URL_ESCAPES.sub(_escaped_bytes, text)


#: A run of escapes in a decoded view: ``(decoded start, written start, written ends)``,
#: the written end of each character the run decodes to.
EscapeRun = tuple[int, int, tuple[int, ...]]


@dataclass(frozen=True)
class DecodedView:
    """A text with its escapes decoded, and where each decoded character is written.

    Outside the runs of escapes a character is written as itself, so only the runs are
    recorded: the map of a megabyte body costs memory for its escapes, not its characters.
    """

    text: str
    runs: tuple[EscapeRun, ...]

    def written_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the written text that ``text[start:end]`` was decoded from: whole
        escapes, and every escape of a character decoded from several."""
        return self._written_at(start), self._written_at(end)

    def _written_at(self, index: int) -> int:
        """Where decoded character ``index`` starts in the written text (at the end: its
        length). The characters tile the written text, so a start is the previous end."""
        number = bisect_right(self.runs, index, key=lambda run: run[0])
        if number == 0:
            return index
        decoded_start, written_start, ends = self.runs[number - 1]
        offset = index - decoded_start
        if offset == 0:
            return written_start
        if offset <= len(ends):
            return ends[offset - 1]
        return ends[-1] + offset - len(ends)


def _decoded_view(
    text: str,
    escapes: Iterator[re.Match[str]],
    decode: Callable[[re.Match[str]], tuple[str, tuple[int, ...]]],
) -> DecodedView | None:
    """``text`` with each of ``escapes`` replaced by what ``decode`` makes of it (the
    characters, and the written end of each); None when there is no escape."""
    pieces: list[str] = []
    runs: list[EscapeRun] = []
    written = 0
    decoded_length = 0
    for match in escapes:
        plain = text[written : match.start()]
        chars, ends = decode(match)
        runs.append((decoded_length + len(plain), match.start(), ends))
        pieces += (plain, chars)
        decoded_length += len(plain) + len(chars)
        written = match.end()
    if not runs:
        return None
    pieces.append(text[written:])
    return DecodedView("".join(pieces), tuple(runs))


def _url_escape_run(match: re.Match[str]) -> tuple[str, tuple[int, ...]]:
    """A run of URL escapes decoded as UTF-8 (invalid bytes replaced, as ``url_decoded``
    does), and the written end of each decoded character.

    The decoder is fed one escaped byte at a time and holds back the bytes of a character
    not yet complete, so what it emits covers the bytes it took since it last emitted.
    Several characters at once (a U+FFFD for each invalid part of the bytes held back, then
    the byte's own character) are told apart by ``_character_lengths``.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    run, at = match.group(), match.start()
    data = bytes.fromhex(run.replace("%", ""))
    chars: list[str] = []
    ends: list[int] = []
    taken = 0  # the bytes that the characters emitted so far were decoded from
    for number in range(len(data) + 1):
        final = number == len(data)
        out = decoder.decode(data[number : number + 1], final=final)
        if out:
            held = 0 if final else len(decoder.getstate()[0])
            upto = number + (0 if final else 1) - held
            for length in _character_lengths(data[taken:upto], out):
                taken += length
                ends.append(at + 3 * taken)
            chars.append(out)
    return "".join(chars), tuple(ends)


def _character_lengths(data: bytes, chars: str) -> list[int]:
    """How many bytes of ``data`` each of ``chars`` (what UTF-8 decoding with invalid bytes
    replaced makes of them, at most a few) was decoded from."""
    return _split_into(data, chars) or [len(data)] + [0] * (len(chars) - 1)


def _split_into(data: bytes, chars: str) -> list[int] | None:
    """Lengths of consecutive parts of ``data`` that each decode to one of ``chars``, in
    order; None when there are none."""
    if len(chars) == 1:
        return [len(data)] if data.decode("utf-8", "replace") == chars else None
    for first in range(1, len(data)):
        if data[:first].decode("utf-8", "replace") == chars[0]:
            rest = _split_into(data[first:], chars[1:])
            if rest is not None:
                return [first, *rest]
    return None


def url_decoded_view(text: str) -> DecodedView | None:
    """``url_decoded(text)`` and where each of its characters is written in ``text``; None
    when ``text`` holds no escape."""
    if "%" not in text:
        return None
    return _decoded_view(text, _URL_ESCAPES.finditer(text), _url_escape_run)


#: How the name of an environment variable holding a credential ends (any case).
ENV_NAME_ENDINGS = (
    "APIKEY",
    "_KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "_AUTH",
    "_PAT",
)
ENV_MIN_LENGTH = 8


def all_rule_names() -> list[str]:
    """Every built-in rule name, for ``disable``."""
    return [rule.name for rule in SHAPE_RULES] + ["env", "headers", "json-keys", "params"]


def group_name(index: int) -> str:
    return f"r{index}"


def compile_shapes(
    rules: Iterable[tuple[int, ShapeRule]], literals: Iterable[str]
) -> re.Pattern[str]:
    """One regex: placeholders first (so they are skipped), then each rule as a group named
    after its number (``group_name``), then the literals."""
    parts = [f"(?P<placeholder>{PLACEHOLDER_PATTERN})"]
    parts += [f"(?P<{group_name(i)}>{rule.pattern})" for i, rule in rules]
    ordered = sorted(set(literals), key=len, reverse=True)
    if ordered:
        parts.append("(?P<literal>" + _alternatives(ordered) + ")")
    return re.compile("|".join(parts))


def _alternatives(words: Iterable[str]) -> str:
    """A regex matching any of ``words`` (see ``_options``); none: a regex matching nothing."""
    return _alternatives_of(frozenset(words))


@functools.lru_cache(maxsize=64)
def _alternatives_of(words: frozenset[str]) -> str:
    # Each use_cassette compiles its rules again, mostly from the same word lists: the
    # factoring below costs milliseconds a time (the regexes themselves ``re`` caches).
    options = _options(words)
    if not options:
        return "(?!)"
    return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"


def _options(words: Iterable[str]) -> list[str]:
    """Alternatives, one per first character, that together match exactly ``words``.

    The words are factored like a trie (``sk-``, ``sk-ant-`` become ``sk\\-(?:ant\\-)?``): the
    regex engine then tries one branch per character of the text, not one per word, and,
    as each alternative starts with a plain character, it skips at once the positions
    where none can start.
    """
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str:
        options = [re.escape(char) + branch(child) for char, child in sorted(node.items()) if char]
        if not options:
            return ""
        body = options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return [re.escape(char) + branch(child) for char, child in sorted(root.items()) if char]


#: How long a text ``Rules.might_match`` answers without searching it (see there).
LOOK_CLOSELY = 8192
#: Characters of base64 and base64url: a run of them is either one token or encoded data.
BASE64_ALPHABET = string.ascii_letters + string.digits + "+/_-"
#: A run of base64 characters this long is encoded data (an image, a video, a binary body
#: held as text), not words: longer than any credential around its neighbours in text.
BASE64_RUN_MIN = 256
#: How far before a long base64 run a token that goes on into it may begin (``Rules.
#: _into_runs``): a JWT's header and payload, each shorter than a run, and their dots.
RUN_REACH = 2 * BASE64_RUN_MIN + 2
_BASE64_CHARS = frozenset(BASE64_ALPHABET)
_BASE64_SPAN = re.compile(f"[{re.escape(BASE64_ALPHABET)}]*")


def long_runs(text: str) -> list[tuple[int, int]]:
    """The spans of the runs of ``BASE64_RUN_MIN`` or more base64 characters in ``text``, in
    order: what the regex ``[<base64 characters>]{256,}`` finds.

    ``re`` looks for such a run by trying that regex at every base64 character, and a
    binary body read as Latin-1 holds one in four, in short runs: 10 ns a character, as
    long as the rest of its shape search. A long run covers one of every ``BASE64_RUN_MIN``
    consecutive positions, so only those are looked at. Where one holds a base64 character,
    the run through it is measured: forward with a regex, back by fewer than
    ``BASE64_RUN_MIN`` characters (had the run begun further back, the position looked at
    before would have been in it, and found it). The property test
    ``test_the_long_runs_are_those_the_regex_finds`` holds it to the regex.
    """
    step = BASE64_RUN_MIN
    runs = []
    at = step - 1
    while at < len(text):
        if text[at] in _BASE64_CHARS:
            forward = _BASE64_SPAN.match(text, at)
            assert forward is not None  # a repeat of zero or more matches everywhere
            start, end = at - _run_left(text, at, step), forward.end()
            if end - start >= step:
                runs.append((start, end))
                at = end  # not a base64 character: the next run begins after it
        at += step
    return runs


def in_base64_run(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]``, a shape rule's match, is a piece of a base64 run of
    ``BASE64_RUN_MIN`` or more characters, not a token of its own.

    A credential in text stands at a token boundary: whatever its own length, when the
    characters on both sides of it are not base64 characters (quotes, spaces, ``=``, ``&``,
    ``.``, a line end) it counts. When a base64 character touches it, it counts only if the
    run it belongs to is short: ``Credential=AKIA.../20240101/us-east-1/s3/aws4_request``
    is a 60-character run, ``…+ABIAAAASAAAAAAAAAABD…`` is four megabytes of video, where any
    shape turns up by chance. Only runs are measured, so a JWT (``.`` between its parts),
    a URL path or a PEM block (line breaks) are not one run. The redactor and the
    fail-closed scan both see it through ``Rules.shapes``; key-name rules and known values
    (``Redactor.known``) apply inside runs too.
    """
    limit = BASE64_RUN_MIN
    before = _run_left(text, start, limit)
    if before and before + _run_right(text, start, limit) >= limit:
        return True
    after = _run_right(text, end, limit)
    return bool(after) and after + _run_left(text, end, limit) >= limit


def _run_left(text: str, at: int, limit: int) -> int:
    """How many base64 characters end at ``at`` (at most ``limit``)."""
    window = text[max(0, at - limit) : at]
    return len(window) - len(window.rstrip(BASE64_ALPHABET))


def _run_right(text: str, at: int, limit: int) -> int:
    """How many base64 characters start at ``at`` (at most ``limit``)."""
    window = text[at : at + limit]
    return len(window) - len(window.lstrip(BASE64_ALPHABET))


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is one placeholder, whole."""
    return PLACEHOLDER_RE.fullmatch(value) is not None


# What other tools (pydantic-ai's scrubbers, vcrpy filters, hand edits) write in place of a
# credential: ``scrubbed``, ``<redacted>``, ``REDACTED_API_KEY``, ``****``, ``xxxxxxxx``.
_SCRUBBED_RE = re.compile(
    r"[<\[{(]?\s*(?:(?:redacted|scrubbed|filtered|removed|masked)(?:[-_:][a-z_\-]{0,40})?"
    r"|\*{3,}|x{4,}|\.{3})\s*[>\]})]?",
    re.IGNORECASE,
)


def is_scrubbed(value: str) -> bool:
    """Whether ``value`` is a placeholder another tool left where a credential was
    (``scrubbed``, ``<redacted>``): it is kept as it is, and not searched for elsewhere as
    a known value (``client_id=scrubbed`` is no secret because ``client_secret=scrubbed``)."""
    return _SCRUBBED_RE.fullmatch(value.strip()) is not None


def kind_of(name: str) -> str:
    """The placeholder kind for a header, key or parameter name: ``X-Api-Key`` -> ``x-api-key``."""
    return _KIND_CHARS.sub("-", name).strip("-").lower() or "secret"


def unescape_json(text: str) -> str:
    """``text`` with its ``\\uXXXX`` escapes decoded (the rest of it left as it is)."""
    return _JSON_ESCAPE.sub(lambda match: chr(int(match.group(1), 16)), text)


def json_unescaped_view(text: str) -> DecodedView | None:
    """``unescape_json(text)`` and where each of its characters is written in ``text``
    (an escape: 6 characters); None when ``text`` holds no ``\\uXXXX`` escape."""
    if "\\u" not in text:
        return None
    return _decoded_view(
        text,
        _JSON_ESCAPE.finditer(text),
        lambda match: (chr(int(match.group(1), 16)), (match.end(),)),
    )


# A numeric character reference of HTML or XML (``&#115;``, ``&#x2d;``): an encoder that
# writes every character but letters and digits so (OWASP's) spells ``sk&#x2d;proj&#x2d;``.
_CHAR_REF = re.compile(r"&#(?:([0-9]{1,7})|[xX]([0-9A-Fa-f]{1,6}));")


def _char_of_ref(match: re.Match[str]) -> str:
    decimal, hexadecimal = match.groups()
    code = int(decimal) if decimal else int(hexadecimal, 16)
    return chr(code) if code <= 0x10FFFF else match.group()


def char_refs_decoded(text: str) -> str:
    """``text`` with its numeric character references (``&#115;``) decoded."""
    return _CHAR_REF.sub(_char_of_ref, text) if "&#" in text else text


def char_refs_view(text: str) -> DecodedView | None:
    """``char_refs_decoded(text)`` and where each of its characters is written in ``text``;
    None when ``text`` holds no numeric character reference."""
    if "&#" not in text:
        return None
    return _decoded_view(text, _CHAR_REF.finditer(text), _char_ref_run)


def _char_ref_run(match: re.Match[str]) -> tuple[str, tuple[int, ...]]:
    """A reference decoded, and the written end of its character: a reference to no
    character (beyond U+10FFFF) stays as written, each of its characters its own."""
    char = _char_of_ref(match)
    if len(char) == 1:
        return char, (match.end(),)
    return char, tuple(range(match.start() + 1, match.end() + 1))


def decoded_forms(text: str) -> list[tuple[str, Callable[[str], DecodedView | None]]]:
    """The readings of ``text`` with its URL escapes, then its ``\\uXXXX`` escapes, then its
    numeric character references, decoded, each with the function that maps it back to
    ``text`` (``url_decoded_view``, ``json_unescaped_view``, ``char_refs_view``). A reading
    that decodes nothing holds what the text does (a binary body read as Latin-1 often
    holds a "\\u" that is no escape): it is left out."""
    forms: list[tuple[str | None, Callable[[str], DecodedView | None]]] = [
        (url_decoded(text), url_decoded_view),
        (unescape_json(text) if "\\u" in text else None, json_unescaped_view),
        (char_refs_decoded(text) if "&#" in text else None, char_refs_view),
    ]
    return [(decoded, view) for decoded, view in forms if decoded is not None and decoded != text]


def looks_like_token(value: str) -> bool:
    """Whether ``value`` could be a credential: 16 or more token characters, no spaces,
    letters and digits mixed (``tok_9f8a...``, not ``description`` or ``user_profile``)."""
    return (
        _TOKEN_RE.fullmatch(value) is not None
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


_NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")

#: The shortest base64 run read decoded (the encoding of 15 characters): a text shorter
#: than that (most strings of traffic: a streamed piece of text, an id) is not searched.
BASE64_DECODED_MIN = 20
#: A run of base64 characters (either alphabet) that could encode a secret, with padding.
_BASE64_TEXT = re.compile(f"[A-Za-z0-9+/_\\-]{{{BASE64_DECODED_MIN},}}={{0,2}}")
#: The longest base64 run read decoded. A longer one is data (an image, a file), as a
#: long run is for the shapes (``BASE64_RUN_MIN``): only known values are looked for there.
BASE64_DECODED_MAX = 65536
_URLSAFE_TO_STANDARD = str.maketrans("-_", "+/")
_STANDARD_TO_URLSAFE = str.maketrans("+/", "-_")


def base64_cores(word: str) -> list[str]:
    """What the base64 encoding of any text holding ``word`` holds, whatever comes before
    it: at each of the three alignments, the characters that ``word``'s bits alone decide,
    in the standard and the URL-safe alphabet; none shorter than 3 characters."""
    data = word.encode("utf-8")
    out: list[str] = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data + b"\0\0").decode("ascii")
        first, end = 8 * shift, 8 * (shift + len(data))  # word's bits
        decided = [i for i in range(len(encoded)) if 6 * i >= first and 6 * i + 6 <= end]
        if len(decided) < 3:
            continue
        core = encoded[decided[0] : decided[-1] + 1]
        out += dict.fromkeys([core, core.translate(_STANDARD_TO_URLSAFE)])
    return out


def base64_decoded(run: str) -> str | None:
    """The bytes a base64 run (either alphabet, padded or not) encodes, as Latin-1 text
    (every byte one character: an ASCII secret reads as itself); None when it is not
    base64 (a length no encoding has)."""
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    try:
        raw = base64.b64decode(
            body.translate(_URLSAFE_TO_STANDARD) + "=" * (-len(body) % 4), validate=True
        )
    except (binascii.Error, ValueError):
        return None
    return raw.decode("latin-1")


def base64_like(decoded: str, run: str) -> str:
    """``decoded`` (Latin-1 text, as ``base64_decoded`` gives it) encoded as ``run`` is:
    its alphabet, and padded unless ``run`` is base64 without its padding."""
    encoded = base64.b64encode(decoded.encode("latin-1")).decode("ascii")
    if "-" in run or "_" in run:
        encoded = encoded.translate(_STANDARD_TO_URLSAFE)
    unpadded = not run.endswith("=") and len(run) % 4 != 0
    return encoded.rstrip("=") if unpadded else encoded


# Text in UTF-16 or UTF-32 read byte by byte (a body that is not UTF-8 is read as Latin-1,
# and one in UTF-16 without its byte order mark is UTF-8 too): printable ASCII characters,
# each followed (little-endian) or preceded (big-endian) by NULs; 8 of them at least.
_SPACED_RUN = re.compile(r"(?:[\x20-\x7e]\x00{1,3}){8,}|(?:\x00{1,3}[\x20-\x7e]){8,}")
# Each byte as its class, printable ASCII "a", NUL "0", any other "x": a run in UTF-16
# holds "a0" 8 times over (big-endian too, from its second byte), in UTF-32 "a000". Found
# in a C-speed search of the classes, which spares the regex search above (slow on the
# megabytes of a binary body) the bodies that hold no run.
_BYTE_CLASSES = bytes.maketrans(bytes(range(256)), b"0" + b"x" * 31 + b"a" * 95 + b"x" * 129)
_RUN_MARKS = (b"a0" * 8, b"a000" * 8)


def spaced_runs(text: str) -> list[tuple[int, int, str]]:
    """The runs of UTF-16 or UTF-32 text in ``text``, where no rule can see what they
    spell: ``(start, end, characters)``, each where it is written and its characters
    without their NULs. Runs only, not the whole text without its NULs: binary data (audio,
    images) is full of NULs, and taking them all out would glue its bytes together."""
    if "\x00" not in text:
        return []
    classes = text.encode("utf-8", "surrogatepass").translate(_BYTE_CLASSES)
    if not any(mark in classes for mark in _RUN_MARKS):
        return []
    return [(m.start(), m.end(), m[0].replace("\x00", "")) for m in _SPACED_RUN.finditer(text)]


def is_prose(value: str) -> bool:
    """Whether a value of a credential-named header is words, not a credential: three or
    more words apart by spaces, no ``=`` and no word that looks like a token
    (``x-clerk-auth-message: Invalid JWT form. A JWT consists of three parts``). A
    credential is one token, maybe after a scheme (``Bearer sk-...``); signatures with
    parts (AWS SigV4, Digest) have ``=``. A tab or a line break is in no sentence of a
    header: ``Bearer <key>\t<more>`` is a credential whole, not three words whose first
    token alone would be found by its shape. Prose is still searched for credential shapes
    and known values."""
    if "=" in value or any(c.isspace() and c != " " for c in value):
        return False
    words = value.split()
    return len(words) >= 3 and not any(looks_like_token(w.strip(_PUNCTUATION)) for w in words)


_PUNCTUATION = ".,;:!?()[]{}'\"`"


_XML_ENTITY = re.compile(r"&(?:(lt|gt|amp|quot|apos)|#([0-9]{1,7})|#x([0-9A-Fa-f]{1,6}));")
_XML_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _xml_char(match: re.Match[str]) -> str:
    named, decimal, hexadecimal = match.groups()
    if named:
        return _XML_NAMED[named]
    code = int(decimal) if decimal else int(hexadecimal, 16)
    return chr(code) if code <= 0x10FFFF else match.group()


def xml_unescaped(text: str) -> str:
    """XML text with its entity and character references decoded (``&lt;`` is ``<``)."""
    return _XML_ENTITY.sub(_xml_char, text) if "&" in text else text


def xml_escaped(text: str) -> str:
    """``text`` written as XML text: ``&``, ``<`` and ``>`` as references."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def is_model_turn(value: Mapping[str, Any]) -> bool:
    """Whether a JSON object of a request is a turn the model said, sent back in the history
    (an ``assistant`` message, a Gemini ``model`` turn, a Responses ``function_call``): the
    model's words, read as a response is (``Rules.is_secret_entry``), so a tool call's
    ``{"password": "mellon"}`` is the same in the answer and in the next request."""
    return value.get("role") in ("assistant", "model") or value.get("type") == "function_call"


# Where a camelCase or PascalCase name starts a word: before an upper-case letter that
# follows a lower-case one or a digit (``access|Token``), or that starts a word after an
# acronym (``API|Key``).
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@functools.lru_cache(maxsize=8192)
def norm_key(key: str) -> str:
    """A JSON key as the key rules compare it: camelCase and PascalCase words joined by
    ``_`` (``SessionToken``, ``accessToken``, ``APIKey``: ``session_token``,
    ``access_token``, ``api_key``), lower case, ``-`` as ``_``.

    The hottest call of redaction (every key of every body), hence the cache: the keys of
    recorded traffic are few, and mostly the same."""
    return _WORD_START.sub("_", key).lower().replace("-", "_")


def key_spellings(key: str) -> set[str]:
    """A key name given in the configuration as the key rules compare it (``norm_key``),
    and as they did before camelCase was split: ``userId`` stands for ``user_id`` and
    ``userid`` alike."""
    return {norm_key(key), key.lower().replace("-", "_")}


def split_scheme(value: str) -> tuple[str, str, str] | None:
    """A credential header value as ``(scheme, space, rest)``: ``Bearer sk-...``; None if it
    has no scheme."""
    match = _SCHEME.fullmatch(value)
    return None if match is None else (match[1], match[2], match[3])


def is_signature_scheme(scheme: str) -> bool:
    """Whether a credential's scheme carries a signature with readable parts (AWS SigV4,
    Digest): only its secret parts are replaced, not the whole rest."""
    lower = scheme.lower()
    return lower.startswith("aws4-") or lower == "digest"


def scheme_kind(scheme: str, name: str) -> str:
    """The kind of the credential after ``scheme`` in header ``name``."""
    return _SCHEME_KINDS.get(scheme.lower(), name)


def cookie_values(lower_name: str, value: str) -> list[tuple[int, str, str]]:
    """The cookie values in a ``cookie`` / ``set-cookie`` header value, as ``(index, prefix,
    cookie value)``: the piece ``index`` of ``value.split(";")`` is ``prefix`` (the cookie's
    name and ``=``, or nothing) then the value. ``set-cookie`` attributes are not values."""
    pieces = value.split(";")
    limit = 1 if lower_name == "set-cookie" else len(pieces)
    out = []
    for index in range(min(limit, len(pieces))):
        cookie_name, sep, cookie_value = pieces[index].partition("=")
        if sep and cookie_value.strip():
            out.append((index, cookie_name + sep, cookie_value))
        elif not sep and cookie_name.strip():
            out.append((index, "", cookie_name))
    return out


_KIND_CHARS = re.compile(r"[^A-Za-z0-9_.\-]+")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9_\-]*)(\s+)(.+)", re.DOTALL)
_SCHEME_KINDS = {"bearer": "bearer-token", "basic": "basic-auth"}
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# A field of a multipart/form-data body that is no file: a part whose Content-Disposition
# names it and nothing else, and its value, up to the line end before the next boundary.
_FORM_FIELD = re.compile(
    r'^content-disposition:[ \t]*form-data;[ \t]*name="([^"\r\n]*)"[ \t]*\r?\n'
    r"(?:[^\r\n]+\r?\n)*?\r?\n(.*?)(?=\r?\n--)",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
)
#: How JSON text held in a string starts (the arguments of a tool call).
JSON_OPENINGS = ("{", "[")

#: A secret found in a string: ``(start, end, kind)``.
Span = tuple[int, int, str]


class Rules:
    """One configuration of the rules, compiled. Holds no state: every answer depends only
    on the configuration and the environment it was built with.
    """

    def __init__(
        self, config: RedactionConfig | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self.config = config = config or RedactionConfig()
        disabled = set(config.disable)
        unknown = disabled - set(all_rule_names())
        if unknown:
            raise ConfigError(
                f"cannot disable unknown redaction rule(s) {sorted(unknown)}; "
                f"known: {', '.join(all_rule_names())}"
            )
        shape_rules = [rule for rule in SHAPE_RULES if rule.name not in disabled]
        for name, pattern in config.patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ConfigError(f"redaction pattern {name!r}: {error}") from None
            shape_rules.append(ShapeRule(kind_of(name), f"(?:{pattern})"))
        self._shape_rules = tuple(shape_rules)
        # (trigger, rule number) for every trigger of every rule.
        self._rule_triggers = tuple(
            (trigger, number)
            for number, rule in enumerate(shape_rules)
            for trigger in rule.triggers
        )
        self._group_rule = {group_name(i): rule for i, rule in enumerate(shape_rules)}
        # Where a match of some rule may begin (``Rules._begin_positions``); None when a
        # rule has no leads (a custom pattern), and may begin anywhere.
        self._rule_leads: tuple[str, ...] | None = None
        if all(rule.leads for rule in shape_rules):
            self._rule_leads = tuple(sorted({lead for rule in shape_rules for lead in rule.leads}))

        literals: dict[str, str] = {}  # value as it may be written -> kind
        for value, name in config.literals:
            _add_literal(literals, value, kind_of(name), minimum=1)
        if "env" not in disabled and config.env:
            for name, value in credential_variables(config, environ):
                _add_literal(literals, value, "env-" + kind_of(name).upper().replace(".", "_"))
        self._literal_kinds = literals
        self._shapes = compile_shapes(enumerate(shape_rules), literals)

        self.headers_on = "headers" not in disabled
        self.keys_on = "json-keys" not in disabled
        self.params_on = "params" not in disabled
        keep = {name.lower() for name in config.keep_headers}
        self._keep_headers = frozenset(keep)
        self._drop_headers = (DROPPED_HEADERS | {h.lower() for h in config.drop_headers}) - keep
        self._extra_headers = frozenset(h.lower() for h in config.headers)
        kept_keys = {n for k in config.keep_json_keys for n in key_spellings(k)}
        self._secret_keys = (
            SECRET_KEYS | {n for k in config.json_keys if "." not in k for n in key_spellings(k)}
        ) - kept_keys
        self._token_keys = TOKEN_KEYS - kept_keys
        self._secret_paths = tuple(
            sorted({n for k in config.json_keys if "." in k for n in key_spellings(k)})
        )
        self._secret_params = SECRET_PARAMS | {p.lower() for p in config.query_params}
        self._token_params = TOKEN_PARAMS - self._secret_params

        # Cheap tests for "could a rule match here": a shape rule's trigger or a literal
        # (``_triggers``, None for a custom pattern without triggers, which can match
        # anywhere); a secret key spelled as JSON (`"password":`, also escaped in a string:
        # `\\"password\\":`); a secret parameter (`?token=`). Key and parameter names are
        # searched in the lower-cased text with case-sensitive patterns.
        triggers = [t for rule in shape_rules for t in rule.triggers] + list(literals)
        self._triggers: re.Pattern[str] | None = None
        if all(rule.triggers for rule in shape_rules):
            self._triggers = re.compile(trigger_search(triggers))
        # The same triggers base64-encoded (``base64_cores``): what a base64 run that
        # encodes a secret holds (``base64_spans``). None: every run is decoded (a custom
        # pattern without triggers may match anything).
        self._encoded_triggers: re.Pattern[str] | None = None
        if self._triggers is not None:
            cores = [core for trigger in triggers for core in base64_cores(trigger)]
            self._encoded_triggers = re.compile(trigger_search(cores) if cores else "(?!)")
        # Which triggers a text holds (``_shapes_triggered_in``): a word of one character is
        # looked for on its own, at C speed; searched with the others it would stop the
        # search at each of its hits, and "@" is one byte in 200 of a binary body.
        self._singles = frozenset(word for word in triggers if len(word) == 1)
        self._near = re.compile(trigger_search(set(triggers) - self._singles))
        self._reach = max(map(len, triggers), default=0)  # see ``around_hits``
        names = names_of_keys(self._secret_keys | self._token_keys, self._secret_paths)
        self._keys = (
            re.compile('"' + _key_alternatives(names) + r'\\*"\s*:') if self.keys_on else None
        )
        # A parameter starts the text or follows ``?`` or ``&``: ``might_match`` searches
        # ``"&" + text``, so the pattern starts with a character set and ``re`` jumps from one
        # ``?``/``&`` to the next; ``(?:^|[?&])`` would be tried at every position.
        self._params = (
            re.compile(r"[?&]" + _alternatives(self._secret_params | self._token_params) + "=")
            if self.params_on
            else None
        )
        # A secret key with a string value in JSON text held by a string (the arguments of
        # a tool call): the key, and the value as spelled there (escapes kept).
        self._embedded_key = re.compile(
            r'"(' + _key_alternatives(names) + r')"\s*:\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE
        )
        # A secret key with a list of strings for its value: the key, and the strings as
        # spelled there (``_JSON_STRING`` finds each).
        self._embedded_list = re.compile(
            r'"(' + _key_alternatives(names) + r')"\s*:\s*\[\s*("(?:[^"\\]|\\.)*"'
            r'(?:\s*,\s*"(?:[^"\\]|\\.)*")*)\s*\]',
            re.IGNORECASE,
        )
        # An XML element named as a secret key, holding text only (AWS STS's answer:
        # ``<SecretAccessKey>...</SecretAccessKey>``, ``<SessionToken>``): the name and the
        # text. ``_markup_open`` finds its opening tag in a text read in lower case.
        self._markup = re.compile(
            "<(" + _key_alternatives(names) + r")>([^<>]+)</\1>", re.IGNORECASE
        )
        self._markup_open = re.compile("<" + _key_alternatives(names) + ">")

    # ------------------------------------------------------------------ strings

    def might_match_a_key(self, mapping: Mapping[Any, Any]) -> bool:
        """``might_match`` for the keys of ``mapping``, asked of them all at once: most
        objects' keys are plain words (``role``, ``content``), and a key is written to the
        cassette as much as a value is."""
        try:
            return self.might_match("\n".join(mapping))
        except TypeError:  # a key that is not a string (YAML): each is asked on its own
            return True

    def might_match(self, text: str) -> bool:
        """Whether any rule could match in ``text``: False means none does, anywhere in it
        (as a shape, a literal, a secret key or parameter, URL-encoded or JSON-escaped).

        A text of ``LOOK_CLOSELY`` characters or more is answered True unsearched: in
        traffic such a text is mostly base64 data (an image), which the trigger search reads
        through (two thirds of this function's time in converting a large corpus) and a
        chance hit in it makes True anyway, while the closer look (``shapes``) skips it.
        """
        if self._triggers is None or "%" in text or "\\u" in text or "&#" in text:
            return True  # an escape may hide anything: the text is looked at closely
        if len(text) >= LOOK_CLOSELY:
            return True
        if self._triggers.search(text) is not None:
            return True
        if len(text) >= BASE64_DECODED_MIN and next(self._encoded_runs(text), None):
            return True  # base64 that may encode a trigger (``base64_spans``)
        if "orm-data" in text and self.form_field_secrets(text):
            return True
        keys = self._keys if '"' in text else None  # a key is spelled with quotes
        params = self._params if "=" in text else None
        markup = self._markup_open if self.keys_on and "</" in text else None
        if keys is None and params is None and markup is None:
            return False
        lowered = text.lower()
        if keys is not None and keys.search(lowered) is not None:
            return True
        if markup is not None and markup.search(lowered) is not None:
            return True
        return params is not None and params.search("&" + lowered) is not None

    def shapes(self, text: str) -> list[Span]:
        """Every secret-shaped substring of ``text`` as written (not decoded), in order.

        Placeholders are never matched, and a rule's validator rejects look-alikes.
        """
        runs = long_runs(text)
        if not runs:
            return self._shapes_in(text, [(0, len(text))], text)
        # Encoded data (an image, a video): a shape touching a long base64 run is no token
        # (``in_base64_run``) unless it is the whole run, so the shape rules run between the
        # runs and once at the start of each, and megabytes of base64 cost one scan of a
        # character class. Known values are looked for in the whole text, runs included.
        ends = [0, *(edge for run in runs for edge in run), len(text)]
        outside = [(ends[i], ends[i + 1]) for i in range(0, len(ends), 2) if ends[i] < ends[i + 1]]
        # A region's triggers are looked for from ``_reach`` characters before it: the one a
        # lookbehind holds (``Signature=``) may begin in the run before the region.
        probe = "\0".join(text[max(0, a - self._reach) : b] for a, b in outside)
        spans = self._shapes_in(text, outside, probe)
        into = self._into_runs(text, runs)
        spans += into
        for start, end in runs:
            if any(a < end and start < b for a, b, _ in into):
                continue  # a token found going into the run, or through it
            whole = self._shapes.fullmatch(text, start, end)
            if whole is None:
                continue
            rule = self._group_rule.get(whole.lastgroup or "")
            if rule is not None and (rule.validate is None or rule.validate(whole.group())):
                spans.append((start, end, rule.name))
        present = [literal for literal in self._literal_kinds if literal in text]
        if present:
            known = [
                (match.start(), match.end(), self._literal_kinds[match.group()])
                for match in compile_shapes((), present).finditer(text)
                if match.lastgroup == "literal"
            ]
            spans = [s for s in spans if not any(s[0] < b and a < s[1] for a, b, _ in known)]
            spans += known
        return sorted(set(spans))

    def _into_runs(self, text: str, runs: list[tuple[int, int]]) -> list[Span]:
        """The tokens that begin before a long base64 run (or at its start) and go on into
        it: what ``_shapes_in`` cannot see whole, as it searches only up to each run.

        A JWT whose signature is a run (RS256: 342 characters) is one: the search of the
        region before the run finds ``<header>.<payload>.`` cut short at the run, which
        touches the run and is skipped. Here each rule is tried, with nothing cut off, at
        the positions where a match may begin (``ShapeRule.leads``) from ``RUN_REACH``
        characters before each run to its first character. A match that goes into the run
        counts as the matches between runs do: when it is no piece of a run
        (``in_base64_run``: it ends at a token boundary, past the run), or when its rule's
        separators tell it from encoded data (``ShapeRule.separated``: a JWT). A match that
        ends before the run is the search between runs' business.
        """
        spans: list[Span] = []
        taken = 0  # where the last token found ends: none begins inside it
        previous_end = 0
        for start, end in runs:
            first = max(start - RUN_REACH, previous_end, taken)
            previous_end = end
            for at in self._begin_positions(text, first, start):
                if at < taken:
                    continue
                match = self._shapes.match(text, at)
                if match is None or match.end() <= start:
                    continue
                rule = self._group_rule.get(match.lastgroup or "")
                if rule is None:  # a placeholder, or a literal (looked for in ``shapes``)
                    continue
                if rule.validate is not None and not rule.validate(match.group()):
                    continue
                if not rule.separated and in_base64_run(text, match.start(), match.end()):
                    continue
                spans.append((match.start(), match.end(), rule.name))
                taken = match.end()
        return spans

    def _begin_positions(self, text: str, first: int, last: int) -> list[int]:
        """The positions from ``first`` to ``last`` (included) where a match of a rule may
        begin: where a lead of a rule begins or ends (every position, when a rule has
        none)."""
        if self._rule_leads is None:
            return list(range(first, last + 1))
        positions: set[int] = set()
        for lead in self._rule_leads:
            at = text.find(lead, max(0, first - len(lead)), last + len(lead))
            while at >= 0:
                positions.update(p for p in (at, at + len(lead)) if first <= p <= last)
                at = text.find(lead, at + 1, last + len(lead))
        return sorted(positions)

    def _shapes_in(self, text: str, regions: list[tuple[int, int]], probe: str) -> list[Span]:
        """``shapes`` of ``text`` found in ``regions`` (start, end); ``probe`` holds the text of
        the regions, for the triggers."""
        leads: list[str] | None = None
        if self._triggers is None:
            regex = self._shapes  # a rule without triggers: every rule, every string
        elif self._triggers.search(probe) is None:
            return []
        else:
            regex, leads = self._shapes_triggered_in(probe)
        spans = []
        for start, end in regions:
            for match in _matches(regex, text, start, end, _lead_ends(text, leads, start, end)):
                group, value = match.lastgroup, match.group()
                if group == "placeholder" or not value:
                    continue
                if group == "literal":
                    spans.append((match.start(), match.end(), self._literal_kinds[value]))
                    continue
                rule = self._group_rule.get(group or "")
                if rule is None or (rule.validate is not None and not rule.validate(value)):
                    continue
                if in_base64_run(text, match.start(), match.end()):
                    continue  # a piece of encoded data, not a token (``in_base64_run``)
                spans.append((match.start(), match.end(), rule.name))
        return spans

    def _shapes_triggered_in(self, text: str) -> tuple[re.Pattern[str], list[str] | None]:
        """The regex of the rules whose triggers occur in ``text``, in rule order, and the
        leads of its matches (None when a rule has none, see ``ShapeRule``).

        A rule matches only where one of its triggers occurs, so the alternation of these
        rules finds in ``text`` exactly what the alternation of every rule finds (leftmost
        match, first alternative); it is much cheaper to run: an e-mail address is searched
        with the one rule that ``@`` triggers, not with twenty. ``re`` keeps the compiled
        regex.
        """
        near = around_hits(text, self._near, self._reach)

        def holds(word: str) -> bool:
            return word in (text if word in self._singles else near)

        numbers = sorted({number for trigger, number in self._rule_triggers if holds(trigger)})
        literals = [literal for literal in self._literal_kinds if holds(literal)]
        regex = compile_shapes(((n, self._shape_rules[n]) for n in numbers), literals)
        rules = [self._shape_rules[n] for n in numbers]
        if not all(rule.leads for rule in rules):
            return regex, None
        # The regex matches placeholders (so that no rule matches inside one) and literals
        # too: where they begin is where its matches may begin as well.
        return regex, [PLACEHOLDER_LEAD, *literals, *(lead for r in rules for lead in r.leads)]

    def kinds_in(self, text: str) -> list[str]:
        """The rules that match in ``text``, also URL-encoded (``sk%2D...``), JSON-escaped
        (``\\u0073k-...``) or written with character references (``&#115;k-...``): the kind
        of every secret ``Redactor.text`` would replace."""
        kinds = [kind for _, _, kind in self.shapes(text)]
        for decoded, _ in decoded_forms(text):
            kinds += [kind for _, _, kind in self.shapes(decoded)]
        return kinds + [kind for _, _, kind in self.base64_spans(text)]

    def base64_spans(self, text: str) -> list[Span]:
        """The base64 runs of ``text`` (``{"data": "c2stcHJvai0..."}``, a data URI, a
        header value) that encode a secret: decoded, they hold a shape or a literal
        (``kinds_in``, so also one encoded again inside). A run longer than
        ``BASE64_DECODED_MAX`` is data, not read. A run glued to the word before it
        (``key-c2st...``) is read from each of its first four characters."""
        if len(text) < BASE64_DECODED_MIN:
            return []
        spans: list[Span] = []
        for match in self._encoded_runs(text):
            run = match.group()
            for skip in range(4):
                decoded = base64_decoded(run[skip:])
                kinds = self.kinds_in(decoded) if decoded else []
                if kinds:
                    spans.append((match.start() + skip, match.end(), kinds[0]))
                    break
        return spans

    def _encoded_runs(self, text: str) -> Iterator[re.Match[str]]:
        """The base64 runs of ``text`` short enough to be read decoded that hold the base64
        form of a trigger. The runs are found first and only they are searched for the
        encoded triggers: those are short and many, so searching a whole text for them
        (prose, or megabytes of an image no run of which is read) costs more than finding
        its runs."""
        encoded = self._encoded_triggers
        for match in _BASE64_TEXT.finditer(text):
            if match.end() - match.start() > BASE64_DECODED_MAX:
                continue
            if encoded is None or encoded.search(match.group()):
                yield match

    def secret_kind(self, value: str, name: str) -> str | None:
        """The kind of ``value``, known to be a credential (the value of header, key or
        parameter ``name``): that of the shape it is, if one spans it whole, else the
        name's. None when there is nothing to replace: it is empty or a placeholder."""
        if not value or is_placeholder(value) or is_scrubbed(value):
            return None
        spans = self.shapes(value)
        if len(spans) == 1 and spans[0][0] == 0 and spans[0][1] == len(value):
            return spans[0][2]
        return kind_of(name)

    # ------------------------------------------------------------------ names

    def header_action(self, name: str) -> str:
        """What happens to a header: keep, drop, credential, cookie, identifying or scan."""
        lower = name.lower()
        if lower in self._keep_headers:
            return "keep"
        if lower in self._drop_headers:
            return "drop"
        if not self.headers_on:
            return "scan"
        if lower in COOKIE_HEADERS:
            return "cookie"
        if lower in IDENTIFYING_HEADERS:
            return "identifying"
        if lower in self._extra_headers or lower in CREDENTIAL_HEADERS:
            return "credential"
        if lower in NOT_CREDENTIAL_HEADERS:
            return "scan"
        if lower.endswith(CREDENTIAL_HEADER_SUFFIXES):
            return "credential"
        if CREDENTIAL_HEADER_FRAGMENT.search(lower) is not None:
            return "credential"
        return "scan"

    def is_no_credential(self, name: str, value: str) -> bool:
        """Whether ``value`` of header ``name``, which ``header_action`` names a credential,
        is none: words (``is_prose``) or a number (Hugging Face TGI's ``x-time-per-token:
        21``) in a header that only a part of its name makes one. Either is still searched
        for credential shapes and known values. The value of a header named a credential
        whole (``authorization``, ``x-api-key``, ``headers`` of the configuration) always
        is one."""
        lower = name.lower()
        named = lower in self._extra_headers or lower in CREDENTIAL_HEADERS
        if named:  # ``authorization``, ``x-api-key``...: what they hold is a credential
            return False
        return is_prose(value) or _NUMBER.fullmatch(value.strip()) is not None

    def is_secret_key(self, key: str, path: tuple[str, ...] = ()) -> bool:
        """Whether the string value of JSON key ``key`` is a credential; ``path``: the
        (normalised) keys above it, for the dotted paths of ``json_keys``."""
        if not self.keys_on:
            return False
        norm = norm_key(key)
        if norm in self._secret_keys:
            return True
        if not self._secret_paths:
            return False
        dotted = ".".join((*path, norm))
        return any(dotted == p or dotted.endswith("." + p) for p in self._secret_paths)

    def is_secret_entry(
        self, key: str, value: str, path: tuple[str, ...] = (), *, response: bool = False
    ) -> bool:
        """Whether ``value``, the string value of JSON key ``key``, is a credential: the
        key is a secret key, or one of ``TOKEN_KEYS`` and the value looks like a token.

        In a response (``response``) the value of a key that names a secret a person
        chooses (``CHOSEN_SECRET_KEYS``: ``password``) must also look like a token: what a
        client sends under ``password`` is its password, but a response's ``password`` is
        the model's words (a tool call's ``{"password": "mellon"}``, which the test replays
        and checks); servers hand out tokens (``access_token``), which stay credentials. A
        password the client sent and a response echoes is caught anyway, as a known value
        (``Redactor.known``). The redactor and the fail-closed scan both ask this, so they
        agree."""
        if self.is_secret_key(key, path):
            if response and norm_key(key) in CHOSEN_SECRET_KEYS:
                return looks_like_token(value)
            return True
        return self.is_token_key(key) and looks_like_token(value)

    def is_token_key(self, key: str) -> bool:
        """Whether JSON key ``key`` is one of ``TOKEN_KEYS`` (``key``), too common to always
        hold a credential: its value is one when it looks like a token."""
        return self.keys_on and norm_key(key) in self._token_keys

    def has_secret_paths(self) -> bool:
        """Whether some ``json_keys`` are dotted paths (then a key's path matters)."""
        return bool(self._secret_paths)

    def is_secret_param(self, name: str, value: str) -> bool:
        """Whether ``value``, that of query or form parameter ``name`` (both decoded), is a
        credential: the parameter is a secret one, or one of ``TOKEN_PARAMS`` (``code``)
        and the value looks like a token."""
        if not self.params_on:
            return False
        lower = name.lower()
        return lower in self._secret_params or (
            lower in self._token_params and looks_like_token(value)
        )

    def form_field_secrets(self, text: str) -> list[tuple[int, int, str, str]]:
        """Where ``text`` (a multipart/form-data body) has a field that is no file and whose
        value is a credential by its name (``is_secret_param``: ``api_key``, ``password``):
        ``(start, end, name, value)``, in text order. The same names as in a URL-encoded
        form: ``data={"api_key": ...}`` sent with ``files=`` is multipart."""
        if not self.params_on or "orm-data" not in text:
            return []
        out = []
        for match in _FORM_FIELD.finditer(text):
            name, value = match.group(1), match.group(2)
            if self.is_secret_param(name, value):
                out.append((match.start(2), match.end(2), name, value))
        return out

    def markup_secrets(
        self, text: str, *, response: bool = False
    ) -> list[tuple[int, int, str, str]]:
        """Where ``text`` (an XML body, or XML held in a string) has an element named as a
        secret key with text only, ``<SessionToken>...</SessionToken>``: ``(start, end, name,
        text)``, in text order. The element's name is compared as a JSON key's is
        (``SecretAccessKey``: ``secret_access_key``), and its text is a credential when a
        JSON value of that key would be (``is_secret_entry``).

        ``text`` is the element's text with its entities (``&amp;``, ``&#38;``) decoded: a
        placeholder written there is ``&lt;REDACTED:kind&gt;``, which leaves the XML valid
        and reads back as the placeholder. What XML is read is only this: an element with
        no namespace prefix or attribute, and text without CDATA.
        """
        if not self.keys_on or "</" not in text:
            return []
        out = []
        for match in self._markup.finditer(text):
            name, value = match.group(1), xml_unescaped(match.group(2))
            if self.is_secret_entry(name, value, response=response):
                out.append((match.start(2), match.end(2), name, value))
        return out

    def embedded_secrets(
        self, text: str, *, response: bool = False
    ) -> list[tuple[int, int, str, str]]:
        """Where ``text``, JSON text held in a string, has a secret key's string value, or a
        string in its list value: ``(start, end, key, value)``, ``value`` decoded, in text
        order.

        The text is searched, not parsed: a stream's tool-call arguments arrive in pieces
        that are JSON only once joined, and what is not replaced keeps its bytes.
        """
        if not self.keys_on or not text.startswith(JSON_OPENINGS):
            return []
        spelled_values = [
            (match.group(1), match.start(2), match.end(2))
            for match in self._embedded_key.finditer(text)
        ]
        for match in self._embedded_list.finditer(text):  # {"api_key": ["...", "..."]}
            spelled_values += [
                (match.group(1), item.start(1), item.end(1))
                for item in _JSON_STRING.finditer(text, match.start(2), match.end(2))
            ]
        out = []
        for name, start, end in sorted(spelled_values, key=lambda found: found[1]):
            if start == end:
                continue
            try:
                value = json.loads('"' + text[start:end] + '"')
            except ValueError:
                continue
            if not isinstance(value, str) or not self.is_secret_entry(
                name, value, response=response
            ):
                continue
            out.append((start, end, name, value))
        return out


# Printable ASCII from the most to the least frequent in recorded LLM traffic (prose, JSON,
# SSE framing, ids), measured over a corpus of real cassettes. Characters not listed count
# as rarer than all of them.
_COMMON_FIRST = " etn\"aosi:lrcdpu01_m-hb2,gf3y546.98kx7AvTRIZEw\\SNWjCYVGOLBFXUMDJHPzQ{}qK/'|[]=`;+#*()!?><%@$~&"
_FREQUENCY_RANK = {char: rank for rank, char in enumerate(_COMMON_FIRST)}


def _anchor(word: str) -> int:
    """Where to start looking for ``word``: its rarest character (the first one, on a tie)."""
    last = len(_COMMON_FIRST)
    return min(range(len(word)), key=lambda i: (-_FREQUENCY_RANK.get(word[i], last), i))


def trigger_search(words: Iterable[str]) -> str:
    """A regex that finds whether any of ``words`` occurs in a text (where does not count).

    A speed shortcut of the rules, behind this one function: the plain regex for
    the words (``"|".join(_options(words))``) is tried at every position whose character
    can start a word, and triggers start with common letters (``sk-``, ``eyJ``, ``basic``).
    Here each word is found from its rarest character, with what comes before it checked
    by a lookbehind, so a search stops at far fewer positions: every line the scan reads
    and every string redaction looks at is searched with it first, and on recorded traffic
    it takes about half the instructions of the plain regex. A word that contains another
    is left out, since the shorter one already matches there. The property test
    ``test_the_trigger_search_finds_exactly_the_texts_holding_a_word`` holds it to the
    plain definition, ``any(word in text for word in words)``.
    """
    return _trigger_search_of(frozenset(words))


@functools.lru_cache(maxsize=64)
def _trigger_search_of(words: frozenset[str]) -> str:
    # Built again by every use_cassette, from the same words (see ``_alternatives_of``).
    unique = sorted(words)
    kept = [word for word in unique if word and not any(o != word and o in word for o in unique)]
    by_anchor: dict[str, list[str]] = {}
    for word in kept:
        at = _anchor(word)
        lookbehind = f"(?<={re.escape(word[: at + 1])})" if at else ""
        by_anchor.setdefault(word[at], []).append(lookbehind + re.escape(word[at + 1 :]))
    options = []
    for anchor, rests in sorted(by_anchor.items()):
        rests.sort()
        if "" in rests:
            rest = ""  # the anchor alone is a whole word
        elif len(rests) == 1:
            rest = rests[0]
        else:
            rest = "(?:" + "|".join(rests) + ")"
        options.append(re.escape(anchor) + rest)
    if not options:
        return "(?!)"
    return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"


def around_hits(text: str, search: re.Pattern[str], reach: int) -> str:
    """The stretches of ``text`` within ``reach`` characters of a hit of ``search`` (a
    ``trigger_search`` of words none longer than ``reach``), joined by "\\0": every word
    that occurs in ``text`` occurs whole in them.

    Which triggers a text holds decides which rules search it (``Rules.shapes``). Testing
    each in the whole text scans it once per trigger (36 for the built-in rules: a third of
    a second a pass over the binary bodies of a large corpus, read as Latin-1); here one
    search finds the hits, and the words are tested in the few characters around them.

    No word is missed: an occurrence of a word holds one that the search looks for
    (``trigger_search`` leaves out only a word holding another), whose anchor character the
    search either matches at or has passed inside a hit. That hit overlaps the occurrence,
    which therefore lies within ``reach`` of the hit. The "\\0" between two stretches can
    only make a word appear that ``text`` does not hold (one holding a "\\0"): a rule run in
    vain, never one left out. A property test holds this to the plain definition,
    ``word in text``: ``test_the_words_near_the_hits_are_those_of_the_text``.
    """
    stretches: list[tuple[int, int]] = []
    for hit in search.finditer(text):
        start, end = max(0, hit.start() - reach), hit.end() + reach
        if stretches and start <= stretches[-1][1]:
            stretches[-1] = (stretches[-1][0], end)
        else:
            stretches.append((start, end))
    return "\0".join(text[start:end] for start, end in stretches)


#: Below one occurrence of a lead in this many characters, trying a regex where the leads
#: begin and end costs less than trying it everywhere (see ``_lead_ends``).
LEAD_SPACING = 256


def _lead_ends(text: str, leads: list[str] | None, start: int, end: int) -> list[int] | None:
    """Where each of ``leads`` begins and where it ends in ``text[start:end]``, in order:
    where a match in it may begin (``ShapeRule.leads``). None when the leads are not known,
    or too many for that to pay (one in fewer than ``LEAD_SPACING`` characters)."""
    if leads is None or end - start < LEAD_SPACING:
        return None
    if sum(text.count(lead, start, end) for lead in leads) * LEAD_SPACING > end - start:
        return None
    ends: set[int] = set()
    for lead in leads:
        at = text.find(lead, max(0, start - len(lead)), end)
        while at >= 0:
            ends.update((at, at + len(lead)))
            at = text.find(lead, at + 1, end)
    return sorted(ends)


def _matches(
    regex: re.Pattern[str], text: str, start: int, end: int, starts: list[int] | None
) -> Iterator[re.Match[str]]:
    """``regex.finditer(text, start, end)``, given ``starts`` (None: not known), the sorted
    positions where a match of ``regex`` may begin.

    A regex that opens with a lookbehind (``(?<=://)``, ``(?<![A-Za-z0-9_\\-])``) gives ``re``
    no character to skip to: it is tried at every position, some 14 ns a character for
    each rule, most of the time the shape search takes on a binary body read as Latin-1.
    Trying it only at ``starts`` finds the same matches: from where the last match ended,
    finditer takes the first position at which the regex matches, which is one of
    ``starts``, and what it matches there is what ``match`` at that position gives (both
    see the text before it, for a lookbehind, and none after ``end``). No match is empty
    (``ShapeRule.leads``), so the next one begins at or after this one's end.
    """
    if starts is None:
        yield from regex.finditer(text, start, end)
        return
    position = start
    for at in starts[bisect_left(starts, start) : bisect_left(starts, end)]:
        if at < position:
            continue
        match = regex.match(text, at, end)
        if match is not None:
            yield match
            position = match.end()


def names_of_keys(keys: Iterable[str], paths: Iterable[str]) -> list[str]:
    """The key names the key rules look for: the keys, and the last part of each path."""
    return sorted(set(keys) | {path.rsplit(".", 1)[-1] for path in paths})


def _key_alternatives(names: Iterable[str]) -> str:
    """A regex matching each key name, also spelled with ``-`` for ``_``, and with its words
    run together (``accesstoken``: ``accessToken`` in a text read in lower case or
    case-insensitively, which ``norm_key`` makes ``access_token``)."""
    variants = {
        variant
        for name in names
        for variant in (name, name.replace("_", "-"), name.replace("_", ""))
    }
    return _alternatives(variants)


# os.environ as credential_variables last read it (a copy of the mapping it keeps, encoded),
# and what was found in it for each ``env_vars``: every cassette asks, and reading the names
# costs some 0.25 us a variable, comparing with the copy 0.01.
_environ_read: tuple[dict[Any, Any], dict[tuple[str, ...], tuple[tuple[str, str], ...]]] = ({}, {})


def credential_variables(
    config: RedactionConfig, environ: Mapping[str, str] | None = None
) -> tuple[tuple[str, str], ...]:
    """The environment variables whose values ``config``'s rules treat as secrets, by name
    (of os.environ as it is now when ``environ`` is None)."""
    global _environ_read
    data = getattr(os.environ, "_data", None) if environ is None else None
    if data is None:
        return _credential_variables(config, os.environ if environ is None else environ)
    copy, found = _environ_read
    if data != copy:  # changed since (monkeypatch.setenv of an API key), or never read
        copy, found = dict(data), {}
        _environ_read = copy, found
    variables = found.get(config.env_vars)
    if variables is None:
        variables = found[config.env_vars] = _credential_variables(config, os.environ)
    return variables


def _credential_variables(
    config: RedactionConfig, environ: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    extra = set(config.env_vars)
    # Names first: reading a value of os.environ decodes it, and few names qualify.
    names = [name for name in environ if name in extra or name.upper().endswith(ENV_NAME_ENDINGS)]
    return tuple((name, environ[name]) for name in sorted(names))


@functools.lru_cache(maxsize=16)
def _compiled(config: RedactionConfig, credentials: tuple[tuple[str, str], ...]) -> Rules:
    return Rules(config, dict(credentials))


def compiled(
    config: RedactionConfig | None = None, environ: Mapping[str, str] | None = None
) -> Rules:
    """``Rules(config, environ)``, compiled once per process for each configuration and set
    of credential variables (a ``Rules`` holds no state, so one serves every user).

    Each cassette a test suite opens builds a redactor; compiling its rules every time cost
    a third of setting up a cassette.
    """
    config = config or RedactionConfig()
    return _compiled(config, credential_variables(config, environ))


def _add_literal(literals: dict[str, str], value: str, kind: str, minimum: int = 0) -> None:
    value = value.strip()
    if len(value) < max(minimum, ENV_MIN_LENGTH if minimum == 0 else minimum):
        return
    if value.startswith(("/", "~", "./")) or value.lower() in ("true", "false", "none", "null"):
        return  # a path or a flag, not a credential
    if PLACEHOLDER_RE.search(value) or value in "<REDACTED:>":
        return
    variants = {value, quote(value, safe=""), json.dumps(value)[1:-1]}
    for variant in variants:
        literals.setdefault(variant, kind)
