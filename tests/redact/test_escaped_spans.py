"""A secret found URL-encoded or JSON-escaped replaces only its own written span (#18).

Redaction looks for secrets in the text as written and in its decoded views (``%XX`` and
``\\uXXXX`` escapes decoded). Whatever a view finds is replaced where it is written: the
escapes around it stay escapes (``a%26b`` is not turned into ``a&b``, another form
parameter), and a binary body read as Latin-1 keeps every byte outside the secret.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.redact import Redactor
from llmcassette.redact.rules import PLACEHOLDER_RE, Rules

from .test_rules import ANTHROPIC, OPENAI, SHAPES

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
RULES = Rules(environ={})


def test_a_url_encoded_secret_leaves_the_other_escapes_of_a_form_as_written() -> None:
    text = "q=a%26b&key=" + KEY.replace("-", "%2D") + "&x=%20y"
    assert Redactor(environ={}).text(text) == "q=a%26b&key=<REDACTED:openai-api-key>&x=%20y"


def test_a_binary_body_keeps_every_byte_but_the_secret() -> None:
    before, after = b"\xff\xfe%C3%28 key=", b" \x80"
    body = before + KEY.replace("-", "%2D").encode() + after
    redacted = Redactor(environ={}).body_bytes(body, "application/octet-stream")
    assert redacted == before + b"<REDACTED:openai-api-key>" + after


def test_a_json_escaped_secret_leaves_the_other_escapes_as_written() -> None:
    text = "caf\\u00e9 \\u2028 \\u0073k" + KEY[2:] + " \\ud83d\\ude00 \\u005c"
    assert (
        Redactor(environ={}).text(text)
        == "caf\\u00e9 \\u2028 <REDACTED:openai-api-key> \\ud83d\\ude00 \\u005c"
    )


def test_a_secret_gets_one_placeholder_however_it_is_written() -> None:
    redactor = Redactor(environ={})
    written = [KEY, quote(KEY, safe=""), KEY.replace("-", "%2D"), "\\u0073" + KEY[1:]]
    assert {redactor.text(f"[{form}]") for form in written} == {"[<REDACTED:openai-api-key>]"}
    assert redactor.changes == len(written)  # found as written and decoded: counted once


def test_a_secret_partly_escaped_is_replaced_whole() -> None:
    # As written the shape ends at the first escape; decoded it runs on: one span.
    text = "k: " + KEY + "%41%42cd" + " done%21"
    assert Redactor(environ={}).text(text) == "k: <REDACTED:openai-api-key> done%21"


def test_a_span_edge_inside_a_multibyte_character_takes_all_its_escapes() -> None:
    # A literal ending in "é": its last character is two escaped bytes.
    from llmcassette.redact import RedactionConfig

    redactor = Redactor(RedactionConfig(literals=(("hunter2é", "pw"),)), environ={})
    # Not as the literal's URL-encoded variant (upper-case hex) is written: found decoded.
    text = "%E2%82%AC hunt%65r2%c3%a9%C3%A8 %E2%82"
    assert redactor.text(text) == "%E2%82%AC <REDACTED:pw>%C3%A8 %E2%82"


def test_an_escape_sign_that_decodes_nothing_changes_nothing() -> None:
    redactor = Redactor(environ={})
    assert redactor.text("C:\\users\\u12 100% sure") == "C:\\users\\u12 100% sure"


def test_a_secret_parameter_not_replaced_stays_as_written() -> None:
    redactor = Redactor(environ={})
    for query in (
        "token=%2A%2A%2A%2A&a=1",  # ****, another tool's placeholder
        "password=scrubbed+",
        "key=%3CREDACTED%3Aopenai-api-key%3E",
    ):
        assert redactor.params(query) == query
    assert redactor.params("token=a%26b&x=%20") == "token=<REDACTED:token>&x=%20"


# ------------------------------------------------------------------ the promise


def _url_escaped(secret: str, which: list[bool]) -> str:
    return "".join(
        quote(c, safe="") if escape else c for c, escape in zip(secret, which, strict=True)
    )


def _json_escaped(secret: str, which: list[bool]) -> str:
    return "".join(
        f"\\u{ord(c):04x}" if escape else c for c, escape in zip(secret, which, strict=True)
    )


@st.composite
def written_secrets(draw: st.DrawFn) -> str:
    """A secret as written: plain, or with some or all of its characters escaped."""
    secret = draw(st.sampled_from([OPENAI, ANTHROPIC, KEY, *SHAPES["google-api-key"]]))
    how = draw(st.sampled_from(["plain", "url", "json"]))
    if how == "plain":
        return secret
    which = draw(st.lists(st.booleans(), min_size=len(secret), max_size=len(secret)))
    if how == "url":
        return _url_escaped(secret, which) if any(which) else quote(secret, safe="")
    return _json_escaped(secret, which)


# Pieces that hold no secret: prose, form syntax, escapes (whole, cut, invalid), non-ASCII
# and what a binary body read as Latin-1 holds.
_SAFE = st.one_of(
    st.sampled_from(["a", " ", "&", "=", "q=a%26b", "%20", "+", "100%", "%zz", "\n", '"']),
    st.sampled_from(["%C3%A9", "%E2%82", "%FF", "%C3%28", "\\u00e9", "\\ud83d", "\\u", "\\"]),
    st.sampled_from(["é", "\xff\xfe", "\x80", "😀", "%2D", "\\u0073", "sk", "Bearer"]),
)


@settings(max_examples=600, derandomize=True, deadline=None, database=None)
@given(
    st.lists(_SAFE, max_size=5).map("".join),
    written_secrets(),
    st.lists(_SAFE, max_size=5).map("".join),
)
def test_redaction_changes_only_secret_spans_and_leaves_no_secret(
    before: str, secret: str, after: str
) -> None:
    text = before + " " + secret + " " + after
    redactor = Redactor(environ={})
    redacted = redactor.text(text)
    assert RULES.kinds_in(text)  # the secret stands alone: found, as written or decoded
    assert RULES.kinds_in(redacted) == []
    assert redactor.text(redacted) == redacted  # idempotent
    # Outside the placeholders the text is as written; each placeholder stands for a span
    # of the written secret.
    kept = PLACEHOLDER_RE.split(redacted)
    assert len(kept) > 1
    pattern = "(.+?)".join(re.escape(piece) for piece in kept)
    match = re.fullmatch(pattern, text, re.DOTALL)
    assert match is not None
    secret_start = len(before) + 1
    for number in range(1, len(kept)):
        start, end = match.span(number)
        assert start < secret_start + len(secret)
        assert secret_start < end
