"""Unit tests of the redactor: each rule, each location, placeholders, idempotence."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.redact import RedactionConfig, Redactor
from llmcassette.redact.rules import Rules

OPENAI = "sk-proj-" + "A1b2C3d4E5" * 3 + "T3BlbkFJ" + "z9Y8x7W6v5" * 3
OPENAI_2 = "sk-proj-" + "Q1w2E3r4T5" * 3 + "T3BlbkFJ" + "m9N8b7V6c5" * 3
ANTHROPIC = "sk-ant-api03-" + "aB3_dE6-gH9" * 8 + "kLmNo" + "AA"

SHAPES = {
    "openai-api-key": [
        OPENAI,
        "sk-" + "a1B2c3D4" * 6,
        "sk-svcacct-" + "x" * 20 + "T3BlbkFJ" + "y" * 20,
    ],
    "anthropic-api-key": [ANTHROPIC, "sk-ant-admin01-" + "Z" * 40],
    "google-api-key": ["AIza" + "Sy" + "b" * 33],
    "google-oauth-token": ["ya29." + "a0AfH6SM" * 4],
    "aws-access-key-id": ["AKIA" + "IOSFODNN7EXAMPLE"],
    "aws-bedrock-api-key": ["ABSK" + "QmVkcm9ja0FQSUtleS1" * 3],
    "github-token": ["ghp_" + "a" * 36, "github_pat_" + "b" * 82],
    "huggingface-token": ["hf_" + "abcdefghij" * 3 + "abcd"],
    "groq-api-key": ["gsk_" + "c" * 52],
    "openrouter-api-key": ["sk-or-v1-" + "0123456789abcdef" * 4],
    "xai-api-key": ["xai-" + "d" * 80],
    "perplexity-api-key": ["pplx-" + "e" * 48],
    "replicate-api-token": ["r8_" + "f" * 37],
    "langsmith-api-key": ["lsv2_pt_" + "0" * 32 + "_" + "1" * 10],
    "slack-token": ["xoxb-1234567890-abcdefghij"],
    "stripe-key": ["sk_live_" + "g" * 24],
    "jwt": [
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ],
    "private-key": ["-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"],
}


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(environ={})


@pytest.mark.parametrize(
    ("kind", "secret"), [(kind, s) for kind, values in SHAPES.items() for s in values]
)
def test_each_shape_is_redacted_in_prose(redactor: Redactor, kind: str, secret: str) -> None:
    out = redactor.text(f"my key: {secret} (keep it safe)")
    assert secret not in out
    assert out == f"my key: <REDACTED:{kind}> (keep it safe)"


@pytest.mark.parametrize(
    "text",
    [
        "Hello! How can I help you today?",
        "chatcmpl-AbC123dEf456GhI789jKl012mNo345",
        "msg_01XFDUDYJgAACzvnptvVoYEL",
        "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "call_abc123DEF456ghi789JKL012",
        "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
        "def f(task_key):\n    return basic_auth(user)  # Basic information",
        "Use `Authorization: Bearer <your key>` with https://api.example.com/v1?x=1",
        "sk-test",
        "The skeleton key is ask-me-later",
        "toolu_01A09q90qw90lq917835lq9",
    ],
)
def test_ordinary_content_is_not_redacted(redactor: Redactor, text: str) -> None:
    assert redactor.text(text) == text


def test_placeholders_are_stable_typed_and_numbered(redactor: Redactor) -> None:
    out = redactor.text(f"{OPENAI} {OPENAI_2} {OPENAI}")
    assert out == "<REDACTED:openai-api-key> <REDACTED:openai-api-key:2> <REDACTED:openai-api-key>"
    assert redactor.text(out) == out  # idempotent: placeholders match no rule


def test_encoded_copies(redactor: Redactor) -> None:
    assert OPENAI not in redactor.text(quote(f"key={OPENAI}+x", safe=""))
    escaped = json.dumps(OPENAI, ensure_ascii=True).strip('"').replace("s", "\\u0073")
    assert "T3BlbkFJ" not in redactor.text(f"payload {escaped}")
    basic = base64.b64encode(b"user:hunter2pass").decode()
    assert redactor.text(f"Basic {basic}") == "Basic <REDACTED:basic-auth>"


def test_headers(redactor: Redactor) -> None:
    headers = {
        "Authorization": f"Bearer {OPENAI}",
        "x-api-key": "plain-mistral-like-key-0123456789",
        "api-key": "0123456789abcdef0123456789abcdef",
        "x-goog-api-key": "whatever-value-here",
        "x-custom-token": "tok-123456789",
        "proxy-authorization": "Basic " + base64.b64encode(b"u:p4ssword").decode(),
        "Cookie": "__cf_bm=abc123; _cfuvid=def456",
        "set-cookie": ["__cf_bm=xyz789; path=/; HttpOnly"],
        "openai-organization": "org-123abc",
        "openai-project": "proj_abc",
        "anthropic-organization-id": "1234-5678",
        "cf-ray": "8abc-CDG",
        "x-request-id": "req_123",
        "x-stainless-os": "Linux",
        "user-agent": "OpenAI/Python 3.57.0",
        "content-type": "application/json",
        "anthropic-ratelimit-tokens-limit": "1000",
    }
    out = redactor.headers(headers)
    assert out["Authorization"] == "Bearer <REDACTED:openai-api-key>"
    assert out["x-api-key"] == "<REDACTED:x-api-key>"
    assert out["api-key"] == "<REDACTED:api-key>"
    assert out["x-goog-api-key"] == "<REDACTED:x-goog-api-key>"
    assert out["x-custom-token"] == "<REDACTED:x-custom-token>"
    assert out["proxy-authorization"] == "Basic <REDACTED:basic-auth>"
    assert out["Cookie"] == "__cf_bm=<REDACTED:cookie>; _cfuvid=<REDACTED:cookie:2>"
    assert out["set-cookie"] == ["__cf_bm=<REDACTED:cookie:3>; path=/; HttpOnly"]
    assert out["openai-organization"] == "<REDACTED:openai-organization>"
    assert out["openai-project"] == "<REDACTED:openai-project>"
    assert out["anthropic-organization-id"] == "<REDACTED:anthropic-organization-id>"
    assert "cf-ray" not in out
    for kept in ("x-request-id", "x-stainless-os", "user-agent", "content-type"):
        assert out[kept] == headers[kept]
    assert out["anthropic-ratelimit-tokens-limit"] == "1000"
    assert redactor.headers(out) == out


def test_aws_sigv4(redactor: Redactor) -> None:
    value = (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/bedrock/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" + "ab12" * 16
    )
    out = redactor.headers({"Authorization": value})["Authorization"]
    assert "AKIAIOSFODNN7EXAMPLE" not in out
    assert "ab12ab12" not in out
    assert out.startswith("AWS4-HMAC-SHA256 Credential=<REDACTED:aws-access-key-id>/20260101")


def test_uri(redactor: Redactor) -> None:
    google = SHAPES["google-api-key"][0]
    uri = f"https://user:pa55@host.example/v1beta/models/x:generate?alt=sse&key={google}&token=abc123xyz"
    out = redactor.uri(uri)
    assert out == (
        "https://<REDACTED:url-userinfo>@host.example/v1beta/models/x:generate"
        "?alt=sse&key=<REDACTED:google-api-key>&token=<REDACTED:token>"
    )
    assert redactor.uri(out) == out


def test_json_keys_at_any_depth_and_layout_kept(redactor: Redactor) -> None:
    body = {
        "model": "m",
        "auth": {"api_key": "abc-123-secret-value", "nested": [{"client_secret": "cs-999"}]},
        "logprobs": [{"token": "Hello", "logprob": -0.1}],
        "password": "hunter2hunter2",
        "messages": [{"role": "user", "content": f"use {OPENAI}"}],
    }
    text = json.dumps(body, indent=2)
    out = redactor.body_text(text, "application/json")
    parsed = json.loads(out)
    assert parsed["auth"]["api_key"] == "<REDACTED:api_key>"
    assert parsed["auth"]["nested"][0]["client_secret"] == "<REDACTED:client_secret>"
    assert parsed["password"] == "<REDACTED:password>"
    assert parsed["logprobs"][0]["token"] == "Hello"
    assert parsed["messages"][0]["content"] == "use <REDACTED:openai-api-key>"
    assert out == json.dumps(parsed, indent=2)  # same layout


def test_json_no_layout_rebuilds_keeps_every_byte_outside_its_secrets(
    redactor: Redactor,
) -> None:
    # AI21 on Bedrock writes floats as Java does (``-3.6E-6``): parsed and written again,
    # they and the spacing would change. Found converting OpenLLMetry's Bedrock cassettes.
    text = (
        '{"id":1234,"prompt":{"tokens":[{"logprob":-3.6954811548639555E-6}]},'
        '"auth":{"client_secret":"cs-999"},  "note":"use ' + OPENAI + '"}'
    )
    out = redactor.body_text(text, "application/json")
    assert out == text.replace("cs-999", "<REDACTED:client_secret>").replace(
        OPENAI, "<REDACTED:openai-api-key>"
    )
    clean = text.replace(',"auth":{"client_secret":"cs-999"}', "").replace(OPENAI, "x")
    assert redactor.body_text(clean, "application/json") == clean
    assert redactor.body_text(clean, "application/json", response=True) == clean


def test_form_body(redactor: Redactor) -> None:
    out = redactor.body_text(
        "grant_type=refresh&client_secret=abc%2F123&refresh_token=rt-1",
        "application/x-www-form-urlencoded",
    )
    assert out == (
        "grant_type=refresh&client_secret=<REDACTED:client_secret>"
        "&refresh_token=<REDACTED:refresh_token>"
    )


def test_stream_events_and_a_secret_split_across_events(redactor: Redactor) -> None:
    pieces = ["Your key is sk-proj-", OPENAI[8:40], OPENAI[40:], " ok"]
    records = [{"data": {"choices": [{"delta": {"content": p}}]}} for p in pieces]
    records.append({"data": {"access_token": "ya-token-123456"}})
    records.append({"raw": f": comment {ANTHROPIC}\n\n"})
    redactor.events(records)
    contents = [r["data"]["choices"][0]["delta"]["content"] for r in records[:4]]
    assert "".join(contents) == "Your key is <REDACTED:openai-api-key> ok"
    assert records[4]["data"]["access_token"] == "<REDACTED:access_token>"
    assert records[5]["raw"] == ": comment <REDACTED:anthropic-api-key>\n\n"


def test_written_event_lines_hold_the_redacted_data_not_the_streamed_text() -> None:
    # The writer copies each event's streamed text into its line unless redaction changed
    # an event: then every line is encoded from the redacted records.
    from llmcassette.cassette import jsonl as cassette_file

    clean = {"choices": [{"delta": {"content": "Your key is "}}]}
    shaped = {"choices": [{"delta": {"content": OPENAI}}]}
    by_key = {"session": {"api_key": "plain-value-without-a-shape"}}
    headers = {"content-type": ["text/event-stream"]}
    for secret in (shaped, by_key):
        raw = "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in (clean, secret))
        item = cassette_file.Interaction(
            "GET", "http://h/", {}, None, 200, "OK", headers, raw.encode()
        )
        text = cassette_file.write(
            cassette_file.Cassette(cassette_file.new_header("tests"), [item]),
            redaction=Redactor(environ={}),
        )
        lines = text.split("\n")
        assert OPENAI not in text
        assert "plain-value-without-a-shape" not in text
        assert "<REDACTED:" in lines[4]
        assert lines[3].endswith(',"data":{"choices":[{"delta":{"content":"Your key is "}}]}}')


TOOL_CALL = {
    "role": "assistant",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "login", "arguments": '{"user": "bob", "password": "hunter2pw"}'},
        }
    ],
}


def test_secret_keys_in_json_text_held_by_a_string(redactor: Redactor) -> None:
    # Tool-call arguments are JSON text in a string: their secret keys are secret keys too,
    # and the rest of the text keeps its bytes.
    sent = {key: value for key, value in TOOL_CALL.items() if key != "role"}
    out = redactor.json({"messages": [sent, sent]})
    arguments = [m["tool_calls"][0]["function"]["arguments"] for m in out["messages"]]
    assert arguments == ['{"user": "bob", "password": "<REDACTED:password>"}'] * 2
    # ... but a turn the model said, sent back in the history, holds the model's words
    # (a password is one only when it looks like a token), as the answer that said it
    said = redactor.json({"messages": [TOOL_CALL]})
    assert said["messages"][0] == TOOL_CALL
    escaped = {"arguments": '{"note":"a \\"quote\\"","secret":"x\\"y"}'}
    assert redactor.json(escaped) == {
        "arguments": '{"note":"a \\"quote\\"","secret":"<REDACTED:secret>"}'
    }
    # Not JSON text, or the key only mentioned inside a string of it: left alone.
    prose = {
        "content": 'set "password": "x" in the form',
        "arguments": '{"text":"\\"password\\": \\"x\\""}',
    }
    assert redactor.json(prose) == prose


def test_tool_call_arguments_streamed_in_pieces_are_redacted(redactor: Redactor) -> None:
    pieces = ['{"user":"bob","api', '_key":"hun', "ter2pw", '"}']
    records = [
        {"data": {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": p}}]}}]}}
        for p in pieces
    ]
    redactor.events(records)
    joined = "".join(
        r["data"]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for r in records
    )
    assert joined == '{"user":"bob","api_key":"<REDACTED:api_key>"}'


def test_a_password_the_model_streams_is_its_words_unless_it_looks_like_a_token(
    redactor: Redactor,
) -> None:
    # Issue #25: a response's `password` is what the model wrote (the test replays it and
    # checks it); a request's is a credential. A token-shaped one is still replaced.
    def streamed(arguments: str) -> str:
        pieces = [arguments[:12], arguments[12:25], arguments[25:]]
        records = [{"data": {"arguments": piece}} for piece in pieces]
        redactor.events(records)
        return "".join(r["data"]["arguments"] for r in records)

    words = '{"user":"frodo","password":"mellon"}'
    assert streamed(words) == words
    token = '{"user":"frodo","password":"Zx81kQ2mP9vT4wR7yL3n"}'
    assert streamed(token) == '{"user":"frodo","password":"<REDACTED:password>"}'
    request_side = Redactor(environ={}).json({"arguments": words})
    assert request_side == {"arguments": '{"user":"frodo","password":"<REDACTED:password>"}'}


def test_the_fail_closed_scan_finds_a_secret_key_in_json_text_of_an_event_line(
    redactor: Redactor,
) -> None:
    # In the line the key's quotes are escaped (`\\"password\\":`): the scan still reads it.
    from llmcassette.redact import scan

    data = {"arguments": '{"user":"bob","api_key":"hunter2pw","password":"mellon"}'}
    line = json.dumps({"type": "event", "t": 0.1, "data": data})
    findings = scan.find_in_jsonl(redactor.rules, line + "\n", "c.jsonl")
    # The model's words under `password` in a response are no credential (is_secret_entry).
    assert [(f.line, f.json_path, f.rule) for f in findings] == [
        (1, "data.arguments<json>.api_key", "api_key")
    ]


def test_a_streamed_tool_call_with_a_secret_argument_is_written_redacted() -> None:
    from llmcassette.cassette import jsonl as cassette_file
    from llmcassette.redact import scan

    chunks = [
        {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": piece}}]}}]}
        for piece in ['{"user":"bob","api', '_key":"hun', 'ter2pw"}']
    ]
    raw = "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks)
    item = cassette_file.Interaction(
        "POST",
        "http://h/",
        {},
        None,
        200,
        "OK",
        {"content-type": ["text/event-stream"]},
        raw.encode(),
    )
    redactor = Redactor(environ={})
    text = cassette_file.write(
        cassette_file.Cassette(cassette_file.new_header("tests"), [item]),
        redaction=redactor,
    )
    assert "hunter2pw" not in text
    assert "<REDACTED:api_key>" in text
    scan.check_text(redactor.rules, text, "c.jsonl")  # raises if a secret is left


def test_records_says_whether_it_changed_an_event() -> None:
    redactor = Redactor(environ={})
    clean = [{"data": {"choices": [{"delta": {"content": "hi"}}]}}]
    assert redactor.records(None, {"headers": {}}, clean) is False
    assert redactor.records(None, {"headers": {}}, [{"data": {"content": OPENAI}}]) is True
    assert redactor.records(None, {"headers": {}}, [{"data": {"api_key": "abc"}}]) is True
    # Changes outside the events do not count: the request and headers are written anyway.
    response = {"headers": {"authorization": "Bearer header-token"}}
    assert redactor.records(None, response, clean) is False
    assert response["headers"]["authorization"] == "Bearer <REDACTED:bearer-token>"


def test_environment_values_are_redacted_even_without_a_shape() -> None:
    redactor = Redactor(
        environ={"MISTRAL_API_KEY": "m1stralPlainKey0123", "SHORT_TOKEN": "abc", "HOME": "/root"}
    )
    out = redactor.text("k=m1stralPlainKey0123 and " + quote("m1stralPlainKey0123") + " abc")
    assert out == "k=<REDACTED:env-MISTRAL_API_KEY> and <REDACTED:env-MISTRAL_API_KEY> abc"


def test_each_redactor_sees_the_environment_as_it_is_then(monkeypatch: pytest.MonkeyPatch) -> None:
    # Read once per change of os.environ, not once per process: a test's setenv of an API
    # key between two cassettes makes it a secret of the second.
    name, extra = "LLMC_RULES_TEST_API_KEY", "LLMC_RULES_TEST_PLAIN"
    monkeypatch.delenv(name, raising=False)
    assert Redactor().text("zQ8rPlainKeyValue0123") == "zQ8rPlainKeyValue0123"
    monkeypatch.setenv(name, "zQ8rPlainKeyValue0123")
    assert Redactor().text("zQ8rPlainKeyValue0123") == f"<REDACTED:env-{name}>"
    monkeypatch.setenv(name, "aNotherPlainValue4567")
    assert Redactor().text("zQ8rPlainKeyValue0123 aNotherPlainValue4567") == (
        f"zQ8rPlainKeyValue0123 <REDACTED:env-{name}>"
    )
    monkeypatch.delenv(name)
    assert Redactor().text("aNotherPlainValue4567") == "aNotherPlainValue4567"
    # A name that does not look like a credential counts where the config lists it.
    monkeypatch.setenv(extra, "yetAnotherPlainValue89")
    listed = Redactor(RedactionConfig(env_vars=(extra,)))
    assert listed.text("yetAnotherPlainValue89") == f"<REDACTED:env-{extra}>"
    assert Redactor().text("yetAnotherPlainValue89") == "yetAnotherPlainValue89"


def test_configuration() -> None:
    config = RedactionConfig(
        headers=("x-tenant",),
        drop_headers=("x-stainless-os",),
        keep_headers=("cf-ray", "openai-organization"),
        json_keys=("user_id", "metadata.team"),
        query_params=("session",),
        patterns=(("internal-id", r"INT-[0-9]{6}"),),
        literals=(("my-literal-secret", "mine"),),
        disable=("jwt",),
    )
    redactor = Redactor(config, environ={})
    jwt = SHAPES["jwt"][0]
    assert redactor.text(f"INT-123456 my-literal-secret {jwt}") == (
        f"<REDACTED:internal-id> <REDACTED:mine> {jwt}"
    )
    out = redactor.headers(
        {"x-tenant": "t1", "x-stainless-os": "Linux", "cf-ray": "r", "openai-organization": "o"}
    )
    assert out == {"x-tenant": "<REDACTED:x-tenant>", "cf-ray": "r", "openai-organization": "o"}
    body = redactor.json({"user_id": "u1", "metadata": {"team": "t", "other": "x"}, "team": "y"})
    assert body == {
        "user_id": "<REDACTED:user_id>",
        "metadata": {"team": "<REDACTED:team>", "other": "x"},
        "team": "y",
    }
    assert redactor.uri("http://h/?session=s1") == "http://h/?session=<REDACTED:session>"
    field = redactor.header_field()
    assert {k: field[k] for k in ("rules", "version", "custom")} == {
        "rules": "llmcassette-default",
        "version": 2,
        "custom": True,
    }
    # Two different custom rule sets are told apart (the fingerprint is a hash, not the rules).
    assert len(field["fingerprint"]) == 16
    other = Redactor(RedactionConfig(json_keys=("something_else",)))
    assert other.header_field()["fingerprint"] != field["fingerprint"]
    assert not other.already_applied({"redaction": field})
    assert redactor.already_applied({"redaction": field})
    assert Redactor(environ={}).header_field() == {"rules": "llmcassette-default", "version": 2}


def test_unknown_rule_and_bad_pattern_are_errors() -> None:
    from llmcassette.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown"):
        Redactor(RedactionConfig(disable=("nope",)), environ={})
    with pytest.raises(ConfigError, match="bad"):
        Redactor(RedactionConfig(patterns=(("bad", "("),)), environ={})


def test_pyproject_table(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from llmcassette.config import project_redaction, resolve_redaction

    (tmp_path / "pyproject.toml").write_text(
        "[tool.llmcassette.redaction]\n"
        'headers = ["x-tenant"]\n'
        'keep-headers = ["cf-ray"]\n'
        'patterns = { internal-id = "INT-[0-9]{6}" }\n'
        "env = false\n"
    )
    (tmp_path / "sub").mkdir()
    config = project_redaction(tmp_path / "sub")
    assert config.headers == ("x-tenant",)
    assert config.keep_headers == ("cf-ray",)
    assert config.patterns == (("internal-id", "INT-[0-9]{6}"),)
    assert config.env is False
    monkeypatch.chdir(tmp_path)
    merged = resolve_redaction({"headers": ["x-other"]})
    assert merged.headers == ("x-tenant", "x-other")
    assert resolve_redaction(False).enabled is False


# Strings built from the rules' triggers and secret-shaped pieces, so that several rules
# (and placeholders) meet in one string.
_PIECES = [s for secrets in SHAPES.values() for s in secrets] + [
    "sk-",
    "Bearer ",
    "Basic dXNlcjpwYXNz",
    "://",
    "user:pw@",
    "<REDACTED:jwt>",
    "eyJ",
    "%2D",
    " ",
    "x",
]


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=6).map("".join))
def test_the_trigger_search_hides_no_match_of_the_rules(text: str) -> None:
    # A string in which no rule's trigger occurs is not searched with the rules' regex, and
    # one in which ``might_match`` finds nothing is not looked at further: neither may hide
    # a match of the rules.
    from llmcassette.redact import rules

    config = RedactionConfig(literals=(("x:pw", "pw"),))
    gated = rules.Rules(config, environ={})
    ungated = rules.Rules(config, environ={})
    ungated._triggers = None  # every string searched with every rule
    assert gated.shapes(text) == ungated.shapes(text)
    if not gated.might_match(text):
        assert ungated.kinds_in(text) == []


# Secrets of every rule, and the odd ones: a JWT not opening with "eyJ", a key inside a
# placeholder, a literal, a userinfo of non-ASCII characters, a base64 run that is a key.
_SECRETS = [
    *(secret for secrets in SHAPES.values() for secret in secrets),
    "eyJ eyAbcdefghij.eyAbcdefghij.x",  # "eyJ" before a JWT that does not open with it
    "eyAbcdefghij.eyAbcdefghij.x",  # a JWT whose header starts '{ "': no "eyJ" anywhere
    "<REDACTED:sk-" + "a1B2c3D4" * 6 + ">",
    "x:pw",
    "://u:p@h",
    "://\xe9:\xff@",
    "Signature=" + "0a" * 32,
    "Basic dXNlcjpwYXNz",
    "basic dXNlcjpwYXNz",
    "Bearer " + "t0k3n" * 4,
    "BEARER " + "t0k3n" * 4,
    "ABSK" + "Q" * 300,
]
# What stands around a secret in a binary body read as Latin-1: other secrets, leads with
# no secret behind them, non-ASCII filler, base64 runs just shorter and just longer than
# BASE64_RUN_MIN, meeting each other and the secret at their edges.
_AROUND = st.lists(
    st.one_of(
        st.sampled_from(_SECRETS),
        st.sampled_from(["<REDACTED:jwt>", "<REDACTED:", "ey", "eyJ", "sk-", "sk_", "-----BEGIN"]),
        st.sampled_from(["@", "://", "Basic ", "Bearer ", "%2D", " ", "x"]),
        st.integers(0, 400).map(lambda n: ("\x80\xff@\x00\xe9" * 80)[:n]),
        st.integers(250, 262).map(lambda n: "A" * n),
        st.text(alphabet="\x80\xe9\xff\x00@:/ abAZ09+=-_.%<>", max_size=12),
    ),
    max_size=5,
).map("".join)


@pytest.mark.parametrize("secret", _SECRETS)
@pytest.mark.parametrize("spacing", [1, None], ids=["leads-always", "leads-when-rare"])
@settings(max_examples=25, derandomize=True, deadline=None, database=None)
@given(before=_AROUND, after=_AROUND)
def test_trying_the_rules_at_their_leads_only_finds_what_trying_them_everywhere_finds(
    spacing: int | None, secret: str, before: str, after: str
) -> None:
    # Where the leads of the rules in a text are rare, the rules are tried only where a
    # lead begins or ends (``rules._matches``); the plain path tries every rule everywhere.
    # ``spacing=1`` takes the leads path in every text long enough to have a region.
    from unittest import mock

    from llmcassette.redact import rules

    config = RedactionConfig(literals=(("x:pw", "pw"), ("p@h", "ph")))  # "@": a trigger too
    gated = rules.Rules(config, environ={})
    ungated = rules.Rules(config, environ={})
    ungated._triggers = None  # every string searched with every rule, at every position
    text = before + secret + after
    with mock.patch.object(rules, "LEAD_SPACING", spacing or rules.LEAD_SPACING):
        assert gated.shapes(text) == ungated.shapes(text)
        assert gated.kinds_in(text) == ungated.kinds_in(text)


def test_every_match_of_a_rule_holds_one_of_its_triggers() -> None:
    # The trigger search skips a text holding none of a rule's triggers: a rule must not be
    # able to match without one (the JWT rule once had "eyJ", which "eyAi..." lacks).
    from llmcassette.redact.rules import SHAPE_RULES

    rules = Rules(environ={})
    for rule in SHAPE_RULES:
        for secret in [*SHAPES.get(rule.name, []), *_SECRETS]:
            for match in re.finditer(rule.pattern, f"x {secret} x"):
                window = f"x {secret} x"[max(0, match.start() - 16) : match.end() + 16]
                assert any(trigger in window for trigger in rule.triggers), (rule.name, secret)
    assert rules.kinds_in("token eyAbcdefghij.eyAbcdefghij.x") == ["jwt"]


_WORDS = st.text(alphabet="skAKIeyJ:/-_ xé", min_size=1, max_size=5)


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(st.lists(_WORDS, min_size=1, max_size=6), st.text(alphabet="skAKIeyJ:/-_ xé", max_size=40))
def test_the_trigger_search_finds_exactly_the_texts_holding_a_word(
    words: list[str], text: str
) -> None:
    # A speed shortcut of the rules (each word looked for from its rarest character,
    # with a lookbehind for what comes before it) against the plain definition.
    import re

    from llmcassette.redact.rules import trigger_search

    found = re.compile(trigger_search(words)).search(text) is not None
    assert found == any(word in text for word in words)


# Texts in which the words stand far apart (long spacers of characters no word holds,
# non-ASCII ones too), so that the search has few hits and the stretches around them are
# a small part of the text.
_SPACED_TEXTS = st.lists(
    st.one_of(
        _WORDS,
        st.text(alphabet="skAKIeyJ:/-_ x\xe9\x00\xff", max_size=6),
        st.integers(0, 40).map(lambda n: "z" * n),
        st.integers(0, 40).map(lambda n: "\x80\xe0" * n),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(st.lists(_WORDS, min_size=1, max_size=6), _SPACED_TEXTS)
def test_the_words_near_the_hits_are_those_of_the_text(words: list[str], text: str) -> None:
    # Which words a text holds, tested only near the hits of the trigger search
    # (``around_hits``), against the plain definition, ``word in text``.
    import re

    from llmcassette.redact.rules import around_hits, trigger_search

    near = around_hits(text, re.compile(trigger_search(words)), max(map(len, words)))
    assert {word for word in words if word in near} == {word for word in words if word in text}


def test_a_credential_seen_again_gets_its_placeholder_again(redactor: Redactor) -> None:
    first = redactor.header_value("authorization", f"Bearer {OPENAI}")
    again = redactor.header_value("authorization", f"Bearer {OPENAI}")
    other = redactor.header_value("x-api-key", OPENAI_2)
    assert first == again == "Bearer <REDACTED:openai-api-key>"
    assert other == "<REDACTED:openai-api-key:2>"


def test_clean_strings_stay_clean_and_secrets_are_still_found(redactor: Redactor) -> None:
    url = "https://api.openai.com/v1/chat/completions"
    assert redactor.uri(url) == url
    assert redactor.uri(url) == url
    assert redactor.text("keep-alive") == "keep-alive"
    assert redactor.text("keep-alive") == "keep-alive"
    assert redactor.uri(f"{url}?key={OPENAI}") == f"{url}?key=<REDACTED:openai-api-key>"
    assert redactor.text(f"token {ANTHROPIC}") == "token <REDACTED:anthropic-api-key>"


@pytest.mark.parametrize(
    "written",
    [OPENAI.replace("-", "%2D"), "\\u0073" + OPENAI[1:]],
    ids=["url-encoded", "json-escaped"],
)
def test_the_fail_closed_scan_finds_an_encoded_secret_in_an_event_line(
    redactor: Redactor, written: str
) -> None:
    # Redaction decodes these forms before it matches; the scan must look at them too,
    # though no trigger appears in the line as written.
    from llmcassette.redact import scan

    line = json.dumps({"type": "event", "t": 0.1, "data": {"content": f"key: {written}"}})
    assert "sk-" not in line
    findings = scan.find_in_jsonl(redactor.rules, line + "\n", "c.jsonl")
    assert [(f.line, f.json_path, f.rule) for f in findings] == [
        (1, "data.content", "openai-api-key")
    ]


def test_request_headers_seen_before_are_redacted_alike_and_counted() -> None:
    from vcr.request import Request

    def request(token: str) -> Request:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        return Request("POST", "http://h/v1", b"{}", headers)

    redactor = Redactor(environ={})
    first = redactor.vcr_request(request(OPENAI)).headers["Authorization"]
    again = redactor.vcr_request(request(OPENAI)).headers["Authorization"]
    other = redactor.vcr_request(request(OPENAI_2)).headers["Authorization"]
    assert first == again == "Bearer <REDACTED:openai-api-key>"
    assert other == "Bearer <REDACTED:openai-api-key:2>"
    assert redactor.changes == 3  # one value replaced per request
    # Another redactor numbers afresh.
    other_redactor = Redactor(environ={})
    assert other_redactor.vcr_request(request(OPENAI_2)).headers["Authorization"] == first
    assert other_redactor.counts == {"openai-api-key": 1}


_QUERY_PIECES = st.sampled_from(["token", "api_key", "Key", "sig", "x", "=", "&", "?", "%", "a b"])


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(st.lists(_QUERY_PIECES, max_size=8).map("".join))
def test_the_parameter_search_finds_what_the_anchored_pattern_finds(text: str) -> None:
    # ``might_match`` searches ``"&" + text`` for ``[?&]name=``: the same texts as searching
    # ``text`` for ``(?:^|[?&])name=`` (a parameter at the start, or after ``?`` or ``&``).
    import re

    from llmcassette.redact import rules

    gated = rules.Rules(RedactionConfig(), environ={})
    assert gated._params is not None
    names = gated._params.pattern[len("[?&]") : -len("=")]
    anchored = re.compile(r"(?:^|[?&])" + names + "=")
    lowered = text.lower()
    assert (gated._params.search("&" + lowered) is not None) == (
        anchored.search(lowered) is not None
    )


# Escapes of any byte (UTF-8 sequences whole, cut and invalid), lone percent signs, hex
# digits, ASCII and non-ASCII characters (a lone surrogate too, as an escaped JSON string
# can hold), as a binary body read as Latin-1 holds them.
_URL_PIECES = st.one_of(
    st.binary(min_size=1, max_size=4).map(lambda raw: "".join(f"%{b:02X}" for b in raw)),
    st.binary(min_size=1, max_size=4).map(lambda raw: "".join(f"%{b:02x}" for b in raw)),
    st.text(alphabet="%0123456789abcdefABCDEFgG+ /\x00\x7f\x80é\xff€\ud800\U0001f600", max_size=6),
    st.text(max_size=4),
)


@settings(max_examples=500, derandomize=True, deadline=None, database=None)
@given(st.lists(_URL_PIECES, max_size=12).map("".join))
def test_url_decoding_gives_what_unquote_gives(text: str) -> None:
    from urllib.parse import unquote

    from llmcassette.redact.rules import url_decoded

    decoded = url_decoded(text)
    assert (text if decoded is None else decoded) == unquote(text)
    assert decoded is None or "%" in text
