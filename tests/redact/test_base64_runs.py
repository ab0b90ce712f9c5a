"""Shape rules match tokens at token boundaries, never inside a base64 run (#18 item 1).

Real traffic embeds images and video as base64 text (a data URI, ``"data": "<base64>"``):
megabytes in which every shape turns up by chance. In pydantic-ai's cassettes the
``aws-access-key-id`` shape matched ``ABIAAAASAAAAAAAAAABD`` inside a video (18 cassettes
refused) and ``aws-bedrock-api-key`` matched inside a PNG (1.7 MB of it replaced). A match
touching a base64 run of ``BASE64_RUN_MIN`` or more characters is not a token: the redactor
leaves it and the fail-closed scan does not report it. The same key standing alone in text
is still caught, and known values and key-name rules apply inside runs too.
"""

from __future__ import annotations

import base64
import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.redact import RedactionConfig, Redactor, scan
from llmcassette.redact.rules import (
    BASE64_ALPHABET,
    BASE64_RUN_MIN,
    Rules,
    in_base64_run,
    long_runs,
)

from .test_rules import OPENAI

AWS_IN_VIDEO = "ABIAAAASAAAAAAAAAABD"  # the look-alike found in a base64 mp4
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
BEDROCK_KEY = "ABSK" + "QmVkcm9ja0FQSUtleS1" + "x" * 30 + "Ab3dE9kq"
RULES = Rules(environ={})


def base64_payload(size: int, seed: int) -> str:
    """``size`` bytes of random data, base64-encoded (an image or a video as text)."""
    generator = random.Random(seed)
    return base64.b64encode(bytes(generator.randrange(256) for _ in range(size))).decode()


def inside_payload(token: str, joint: str = "+") -> str:
    """``token`` in the middle of a base64 run, touching it on both sides."""
    payload = base64_payload(6000, seed=len(token))
    middle = len(payload) // 2
    return payload[:middle] + joint + token + payload[middle:]


@pytest.mark.parametrize("token", [AWS_IN_VIDEO, AWS_KEY, BEDROCK_KEY, OPENAI])
@pytest.mark.parametrize("joint", ["+", "/", "b"])
def test_a_key_shape_inside_a_base64_run_is_data_not_a_key(token: str, joint: str) -> None:
    body = {"contents": [{"inline_data": {"mime_type": "video/mp4", "data": ""}}]}
    body["contents"][0]["inline_data"]["data"] = inside_payload(token, joint)
    redactor = Redactor(environ={})
    assert redactor.json(body) == body
    assert redactor.changes == 0
    record = {"type": "request", "body": {"json": body}}
    assert list(scan.find_in_value(RULES, record)) == []
    data_uri = "data:image/png;base64," + inside_payload(token, joint)
    assert RULES.kinds_in(data_uri) == []
    assert redactor.text(data_uri) == data_uri


def test_an_unbounded_shape_does_not_swallow_the_rest_of_an_image() -> None:
    """``ABSK[A-Za-z0-9+/]{40,}`` inside a PNG once ran to the end of it (1.7 MB)."""
    png = "iVBORw0KGgoAAAANSUhEUgAA" + base64_payload(30_000, seed=7)
    image = png[:1000] + "/" + BEDROCK_KEY + png[1000:]
    text = json.dumps({"type": "image_url", "image_url": {"url": "data:image/png;base64," + image}})
    redactor = Redactor(environ={})
    assert redactor.body_text(text, "application/json") == text
    assert redactor.counts == {}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (json.dumps({"aws_key_id": AWS_KEY}), "aws-access-key-id"),
        (json.dumps({"note": f"use {BEDROCK_KEY} for bedrock"}), "aws-bedrock-api-key"),
        (f"Bearer {OPENAI}", "openai-api-key"),
        (f"https://example.test/v1/models?api={AWS_KEY}&x=1", "aws-access-key-id"),
        (f'data: {{"delta": {{"text": "{OPENAI}"}}}}\n\n', "openai-api-key"),
        (
            f"AWS4-HMAC-SHA256 Credential={AWS_KEY}/20240101/us-east-1/bedrock/aws4_request",
            "aws-access-key-id",
        ),
        (f"https://example.test/keys/{BEDROCK_KEY}/rotate", "aws-bedrock-api-key"),
    ],
)
def test_the_same_key_standing_alone_in_text_is_caught(text: str, kind: str) -> None:
    assert kind in RULES.kinds_in(text)
    redactor = Redactor(environ={})
    redacted = redactor.text(text)
    assert f"<REDACTED:{kind}>" in redacted
    assert AWS_KEY not in redacted
    assert BEDROCK_KEY not in redacted
    assert OPENAI not in redacted
    record = {"type": "response", "body": {"text": text}}
    assert [rule for _, rule in scan.find_in_value(RULES, record, response=True)] == [kind]


def test_a_key_beside_a_short_run_of_base64_characters_is_still_a_key() -> None:
    """A run shorter than ``BASE64_RUN_MIN`` is text (a path, an id, a tiny blob)."""
    short = "x" * (BASE64_RUN_MIN - len(AWS_KEY) - 2)
    assert RULES.kinds_in(f"{short}/{AWS_KEY}") == ["aws-access-key-id"]
    assert not in_base64_run(f"{short}/{AWS_KEY}", len(short) + 1, len(short) + 1 + len(AWS_KEY))
    longer = "x" * BASE64_RUN_MIN
    assert RULES.kinds_in(f"{longer}/{AWS_KEY}") == []


def test_a_long_key_bounded_on_both_sides_is_a_key_whatever_its_length() -> None:
    long_bedrock = "ABSK" + "Q" * (2 * BASE64_RUN_MIN)
    assert RULES.kinds_in(json.dumps({"k": long_bedrock})) == ["aws-bedrock-api-key"]


def test_known_values_and_key_names_apply_inside_a_base64_run() -> None:
    secret = "Zq8" + "internal" + "Tok3n" * 4  # no shape: only a literal rule knows it
    payload = inside_payload(secret)
    redactor = Redactor(RedactionConfig(literals=((secret, "internal-token"),)), environ={})
    redacted = redactor.text(payload)
    assert secret not in redacted
    assert "<REDACTED:internal-token>" in redacted
    # a key-name rule: the whole value of ``api_key`` is a credential, whatever it holds
    body = {"api_key": inside_payload(AWS_KEY)}
    assert Redactor(environ={}).json(body) == {"api_key": "<REDACTED:api_key>"}
    assert [rule for _, rule in scan.find_in_value(RULES, {"body": body})] == ["api_key"]
    # a value redacted once (a request header) is replaced wherever it appears later
    echo = Redactor(environ={})
    assert echo.header_value("x-api-key", AWS_KEY) == "<REDACTED:aws-access-key-id>"
    assert AWS_KEY not in echo.known(inside_payload(AWS_KEY))


def test_placeholders_already_in_a_cassette_are_left_alone() -> None:
    text = json.dumps(
        {"key": "<REDACTED:openai-api-key>", "auth": "Bearer <REDACTED:bearer-token:2>"}
    )
    redactor = Redactor(environ={})
    assert redactor.body_text(text, "application/json") == text
    assert redactor.headers({"authorization": "Bearer <REDACTED:bearer-token>"}) == {
        "authorization": "Bearer <REDACTED:bearer-token>"
    }
    assert redactor.changes == 0
    assert RULES.kinds_in(text) == []


def test_a_signature_after_a_long_run_is_found_though_its_trigger_begins_in_the_run() -> None:
    # ``Signature`` ends a base64 run of 256 characters and more, so the region after the
    # run holds only the "=" of the trigger ``Signature=``: the triggers of a region are
    # looked for from a few characters before it, as the rule's lookbehind looks.
    signature = "0a" * 32
    text = "x" * BASE64_RUN_MIN + "Signature=" + signature
    assert RULES.shapes(text) == [(len(text) - 64, len(text), "aws-sigv4-signature")]
    assert signature not in Redactor(environ={}).text(text)


# Runs of base64 characters around BASE64_RUN_MIN long (and short ones), between other
# characters, non-ASCII ones too, at the start and the end of the text.
_RUNS_AND_GAPS = st.lists(
    st.one_of(
        st.integers(BASE64_RUN_MIN - 3, BASE64_RUN_MIN + 3).map(lambda n: ("Ab+/_-9" * n)[:n]),
        st.integers(0, 2 * BASE64_RUN_MIN + 3).map(lambda n: "x" * n),
        st.text(alphabet=" .=\xe9\x00\xff\U0001f600", min_size=1, max_size=3),
        st.text(alphabet=BASE64_ALPHABET + " .", max_size=8),
    ),
    max_size=10,
).map("".join)


@settings(max_examples=500, derandomize=True, deadline=None, database=None)
@given(_RUNS_AND_GAPS, st.integers(0, BASE64_RUN_MIN))
def test_the_long_runs_are_those_the_regex_finds(text: str, trim: int) -> None:
    # ``long_runs`` looks at one position in BASE64_RUN_MIN; the plain definition is the
    # regex, tried everywhere. ``trim`` moves the runs against the positions looked at.
    text = text[trim:]
    regex = re.compile(f"[{re.escape(BASE64_ALPHABET)}]{{{BASE64_RUN_MIN},}}")
    assert long_runs(text) == [match.span() for match in regex.finditer(text)]
