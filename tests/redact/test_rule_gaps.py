"""Credentials the rules used to miss (a red-team's findings), each written nowhere now.

- An RS256 JWT (Entra, Google, Auth0, Cognito tokens): its 342-character signature alone is
  a "long base64 run", so the ``jwt`` and ``bearer-token`` rules saw only a match cut at the
  run and skipped it, in prompt text, in a URL inside text and in a request path.
- camelCase and PascalCase credential keys (Cognito's ``SecretKey`` / ``SessionToken``,
  Firebase's ``refreshToken``, ``accessToken``, ``clientSecret``): key names were compared
  lower-cased only, so ``SessionToken`` was ``sessiontoken``, not ``session_token``.
- AWS STS's XML answer: ``<SecretAccessKey>`` and ``<SessionToken>`` were written in clear,
  as XML bodies were searched by shape only.
- Names not covered: headers ``apikey`` (Supabase), ``x-functions-key`` (Azure Functions),
  ``x-rapidapi-key``; query parameters ``code`` (OAuth authorization code, Azure Functions
  key) and ``subscription-key`` (Azure API Management); a list of strings under a credential
  key (``{"api_key": [key]}``: only string values were redacted).
"""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from llmcassette.redact import RedactionConfig, Redactor, scan
from llmcassette.redact.rules import BASE64_RUN_MIN, Rules, long_runs, norm_key

RULES = Rules(environ={})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


HEADER = _b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "abc"}).encode())
PAYLOAD = _b64url(
    json.dumps(
        {"aud": "api://x", "iss": "https://sts.windows.net/t/", "oid": "u1", "exp": 1900000000}
    ).encode()
)
SIGNATURE = _b64url(bytes(range(256)))  # 342 characters, as an RS256 signature
RS256_JWT = f"{HEADER}.{PAYLOAD}.{SIGNATURE}"


def _kinds(text: str) -> list[str]:
    return [kind for _, _, kind in RULES.shapes(text)]


def test_an_rs256_signature_is_a_long_base64_run() -> None:
    assert len(SIGNATURE) >= BASE64_RUN_MIN
    assert long_runs(RS256_JWT) == [(len(RS256_JWT) - len(SIGNATURE), len(RS256_JWT))]


@pytest.mark.parametrize(
    "template",
    [
        "token {} end",
        "https://app.example/verify/{}/confirm",
        '{{"note": "{}"}}',
        "Authorization: Bearer {}",
        "{}",
    ],
)
def test_an_rs256_jwt_in_text_is_found_whole(template: str) -> None:
    text = template.format(RS256_JWT)
    at = text.index(RS256_JWT)
    assert RULES.shapes(text) == [(at, at + len(RS256_JWT), "jwt")]
    redacted = Redactor(environ={}).text(text)
    assert SIGNATURE not in redacted
    assert redacted == template.format("<REDACTED:jwt>")


def test_an_rs256_jwt_with_a_long_payload_is_found_whole() -> None:
    payload = _b64url(json.dumps({"groups": [f"group-{n}" for n in range(40)]}).encode())
    assert len(payload) >= BASE64_RUN_MIN  # a run of its own too
    token = f"{HEADER}.{payload}.{SIGNATURE}"
    assert RULES.shapes(f"see /{token}/x") == [(5, 5 + len(token), "jwt")]


def test_an_rs256_jwt_in_a_request_path_is_redacted_and_scanned() -> None:
    uri = f"https://app.example/magic-link/{RS256_JWT}/confirm?x=1"
    assert Redactor(environ={}).uri(uri) == (
        "https://app.example/magic-link/<REDACTED:jwt>/confirm?x=1"
    )
    record = {"type": "request", "method": "GET", "uri": uri, "headers": {}}
    found = scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl")
    assert [(f.json_path, f.rule) for f in found] == [("uri", "jwt")]


def test_the_scan_refuses_an_rs256_jwt_in_prompt_text(tmp_path: Path) -> None:
    record = {"type": "request", "body": {"json": {"note": f"token {RS256_JWT} end"}}}
    with pytest.raises(Exception, match="jwt"):
        scan.check_text(RULES, json.dumps(record) + "\n", tmp_path / "x.jsonl")


def test_a_long_token_after_its_prefix_is_found_at_token_boundaries() -> None:
    # A Google OAuth token longer than a run: ``ya29.`` then the run, cut off before.
    token = "ya29." + "a0AfB_byC" * 40
    assert _kinds(f"use {token} now") == ["google-oauth-token"]


def test_a_shape_running_into_a_long_run_is_still_data() -> None:
    # Only a token that ends at a token boundary past the run counts (or a JWT).
    image = base64.b64encode(bytes(range(255)) * 4).decode()  # no "=" at its end
    for text in (f"x sk-ant-api03-{image} y", f"data: ya29.{image}", f"ABSK{image}+/-x"):
        assert _kinds(text) == []
    # A JWT's shape can't occur inside encoded data: it needs its two dots.
    assert _kinds(f'"data": "{image}"') == []


# --------------------------------------------------------------------- camelCase keys

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"  # 40 base64 characters, no shape
SESSION = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD" + "Ab12Cd34Ef56" * 20
REFRESH = "AMf-vBzXq3k9PpL2mN8rT5wY1cV6bH4jK0sD7fG3aQ9eR2tY"


@pytest.mark.parametrize(
    ("key", "normalised"),
    [
        ("SessionToken", "session_token"),
        ("accessToken", "access_token"),
        ("refreshToken", "refresh_token"),
        ("clientSecret", "client_secret"),
        ("SecretAccessKey", "secret_access_key"),
        ("APIKey", "api_key"),
        ("IDToken", "id_token"),
        ("X-Api-Key", "x_api_key"),
        ("API_KEY", "api_key"),
        ("apikey", "apikey"),
    ],
)
def test_key_names_are_compared_as_snake_case(key: str, normalised: str) -> None:
    assert norm_key(key) == normalised
    assert RULES.is_secret_key(key)


@pytest.mark.parametrize("response", [False, True])
def test_camel_case_credential_keys_are_redacted(response: bool) -> None:
    cognito = {
        "Credentials": {"AccessKeyId": "x", "SecretKey": SECRET, "SessionToken": SESSION},
        "IdentityId": "us-east-1:1234",
    }
    firebase = {"kind": "identitytoolkit#VerifyPasswordResponse", "refreshToken": REFRESH}
    camel = {"accessToken": REFRESH[::-1], "clientSecret": SECRET[::-1]}
    redactor = Redactor(environ={})
    out = json.dumps(
        [redactor.json(body, response=response) for body in (cognito, firebase, camel)]
    )
    for value in (SECRET, SESSION, REFRESH, REFRESH[::-1], SECRET[::-1]):
        assert json.dumps(value)[1:-1] not in out
    assert '"SessionToken": "<REDACTED:sessiontoken>"' in out
    assert '"IdentityId": "us-east-1:1234"' in out


def test_camel_case_keys_in_tool_call_arguments_are_redacted() -> None:
    arguments = json.dumps({"user": "bob", "accessToken": REFRESH})
    assert Redactor(environ={}).json({"arguments": arguments}, response=True) == {
        "arguments": json.dumps({"user": "bob", "accessToken": "<REDACTED:accesstoken>"})
    }


def test_the_scan_reports_camel_case_credential_keys() -> None:
    record = {"type": "response", "body": {"json": {"Credentials": {"SessionToken": SESSION}}}}
    found = scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl")
    assert [(f.json_path, f.rule) for f in found] == [
        ("body.json.Credentials.SessionToken", "sessiontoken")
    ]
    held = json.dumps({"type": "request", "body": {"text": json.dumps({"apiKey": SECRET})}})
    assert [f.rule for f in scan.find_in_jsonl(RULES, held, "x.jsonl")] == ["apikey"]


def test_a_chosen_secret_in_a_response_stays_the_models_words_in_camel_case() -> None:
    body = {"toolInput": {"Password": "mellon", "userName": "bob"}}
    assert Redactor(environ={}).json(body, response=True) == body


def test_configured_key_names_match_both_spellings() -> None:
    rules = Rules(RedactionConfig(json_keys=("userId", "meta.teamName")), environ={})
    for key in ("userId", "userid", "user_id", "UserId"):
        assert rules.is_secret_key(key)
    assert rules.is_secret_key("teamName", ("meta",))
    assert rules.is_secret_key("teamname", ("meta",))
    kept = Rules(RedactionConfig(keep_json_keys=("api_key",)), environ={})
    assert not kept.is_secret_key("apiKey")


# --------------------------------------------------------------------- XML elements

STS_XML = f"""<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>x</AccessKeyId><SecretAccessKey>{SECRET}</SecretAccessKey>
<SessionToken>{SESSION}</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration></Credentials>
</AssumeRoleResult></AssumeRoleResponse>"""


@pytest.mark.parametrize("response", [False, True])
def test_xml_elements_named_as_credential_keys_are_redacted(response: bool) -> None:
    redactor = Redactor(environ={})
    redacted = redactor.body_text(STS_XML, "text/xml", response=response)
    assert SECRET not in redacted
    assert SESSION[:40] not in redacted
    assert "<SecretAccessKey>&lt;REDACTED:secretaccesskey&gt;</SecretAccessKey>" in redacted
    assert "<SessionToken>&lt;REDACTED:sessiontoken&gt;</SessionToken>" in redacted
    # Still XML, and the placeholder is what a client reads there.
    root = ET.fromstring(redacted)
    namespace = "{https://sts.amazonaws.com/doc/2011-06-15/}"
    assert root.findtext(f".//{namespace}SessionToken") == "<REDACTED:sessiontoken>"
    assert root.findtext(f".//{namespace}Expiration") == "2030-01-01T00:00:00Z"
    # Idempotent, and the value is known elsewhere.
    assert redactor.body_text(redacted, "text/xml", response=response) == redacted
    assert redactor.known(f"echo {SECRET}") == "echo <REDACTED:secretaccesskey>"


def test_a_shape_in_an_xml_body_leaves_it_xml() -> None:
    # STS's <AccessKeyId> is an AWS key id by shape: its placeholder is XML text too, or
    # boto3 could not parse the replayed AssumeRole answer.
    body = STS_XML.replace("<AccessKeyId>x<", "<AccessKeyId>ASIAZ3MHQEXAMPLE7QXY<")
    redacted = Redactor(environ={}).body_text(body, "text/xml", response=True)
    namespace = "{https://sts.amazonaws.com/doc/2011-06-15/}"
    key_id = ET.fromstring(redacted).findtext(f".//{namespace}AccessKeyId")
    assert key_id == "<REDACTED:aws-access-key-id>"


def test_xml_in_a_string_and_in_bytes_that_are_not_utf8_is_redacted() -> None:
    redactor = Redactor(environ={})
    held = redactor.json({"raw": STS_XML}, response=True)
    assert SECRET not in held["raw"]
    body = b"\xff\xfe" + STS_XML.encode()
    assert SECRET.encode() not in redactor.body_bytes(body, "application/octet-stream")


def test_the_scan_refuses_credentials_in_xml_and_passes_the_placeholders() -> None:
    record = {"type": "response", "body": {"text": STS_XML}}
    found = scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl")
    assert [(f.json_path, f.rule) for f in found] == [("body.text", "secretaccesskey")]
    redacted = Redactor(environ={}).body_text(STS_XML, "text/xml", response=True)
    record = {"type": "response", "body": {"text": redacted}}
    assert scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl") == []


def test_other_xml_elements_and_a_models_password_are_kept() -> None:
    text = "<r><Password>mellon</Password><Token>abc</Token><SessionId>s-1</SessionId></r>"
    assert Redactor(environ={}).body_text(text, "text/xml", response=True) == text
    assert RULES.markup_secrets(text, response=True) == []
    sent = Redactor(environ={}).body_text(text, "text/xml")
    assert sent == text.replace("mellon", "&lt;REDACTED:password&gt;")


def test_an_escaped_credential_in_xml_is_read_decoded() -> None:
    text = "<x><ClientSecret>a&amp;b&#x3C;cdefgh12345</ClientSecret></x>"
    start, end = text.index("a&amp;"), text.index("</ClientSecret>")
    assert RULES.markup_secrets(text) == [(start, end, "ClientSecret", "a&b<cdefgh12345")]


# --------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "action"),
    [
        ("x-auth-token", "credential"),
        ("x-oauth-scopes", "credential"),
        ("x-authorization", "credential"),
        ("x-authorisation", "credential"),
        ("author", "scan"),
        ("x-author", "scan"),
        (":authority", "scan"),
        ("authority", "scan"),
    ],
)
def test_auth_in_a_header_name_is_a_credential_but_not_the_words_author_and_authority(
    name: str, action: str
) -> None:
    assert RULES.header_action(name) == action


def test_a_book_author_in_a_headers_object_is_neither_redacted_nor_refused() -> None:
    # A "headers" object in a body is read by header name (a fetch tool's page): `author`
    # there was a credential by the `*auth*` fragment, so the save was refused, and later
    # redacted to "Jane <REDACTED:author>".
    body = {"headers": {"author": "Jane Austen", ":authority": "api.example.com"}}
    record = {"type": "response", "status": 200, "headers": {}, "body": {"json": body}}
    assert scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl") == []
    assert Redactor(environ={}).json(body, response=True) == body


KEY = "q7Rk2Lm9Xw4Tz8Vb1Nc6Hd3Jf5Gs0Pa1"  # Mistral-like: 32 alphanumerics, no shape


@pytest.mark.parametrize("name", ["apikey", "x-functions-key", "X-RapidAPI-Key"])
def test_more_credential_headers(name: str) -> None:
    assert RULES.header_action(name) == "credential"
    redacted = Redactor(environ={}).headers({name: KEY, "idempotency-key": "abc-123"})
    assert redacted == {name: f"<REDACTED:{name.lower()}>", "idempotency-key": "abc-123"}
    record = {"type": "request", "headers": {name: KEY}}
    assert [f.rule for f in scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl")] == [
        name.lower()
    ]


@pytest.mark.parametrize("name", ["code", "subscription-key"])
def test_more_credential_query_parameters(name: str) -> None:
    uri = f"https://x.example/api/f?{name}={KEY}&state=ok"
    redacted = Redactor(environ={}).uri(uri)
    assert redacted == f"https://x.example/api/f?{name}=<REDACTED:{name}>&state=ok"
    record = {"type": "request", "uri": uri, "headers": {}}
    assert [f.rule for f in scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl")] == [name]
    form = f"grant_type=authorization_code&{name}={KEY}"
    assert KEY not in Redactor(environ={}).body_text(form, "application/x-www-form-urlencoded")


@pytest.mark.parametrize("value", ["US", "200", "python", "en-GB"])
def test_a_code_that_is_no_token_is_kept(value: str) -> None:
    uri = f"https://x.example/countries?code={value}"
    assert Redactor(environ={}).uri(uri) == uri
    record = {"type": "request", "uri": uri, "headers": {}}
    assert scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl") == []


def test_a_list_of_strings_under_a_credential_key_is_redacted() -> None:
    body = {"api_key": [KEY, SECRET], "auth": {"accessToken": [[REFRESH]]}, "tags": ["a"]}
    redactor = Redactor(environ={})
    assert redactor.json(body) == {
        "api_key": ["<REDACTED:api_key>", "<REDACTED:api_key:2>"],
        "auth": {"accessToken": [["<REDACTED:accesstoken>"]]},
        "tags": ["a"],
    }
    record = {"type": "request", "body": {"json": body}}
    found = scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl")
    assert [(f.json_path, f.rule) for f in found] == [
        ("body.json.api_key[0]", "api_key"),
        ("body.json.api_key[1]", "api_key"),
        ("body.json.auth.accessToken[0][0]", "accesstoken"),
    ]


def test_a_list_under_a_credential_key_in_tool_call_arguments_is_redacted() -> None:
    arguments = json.dumps({"api_key": [KEY, "x"], "q": ["hello"]})
    redacted = Redactor(environ={}).json({"arguments": arguments}, response=True)
    assert json.loads(redacted["arguments"]) == {
        "api_key": ["<REDACTED:api_key>", "<REDACTED:api_key:2>"],
        "q": ["hello"],
    }
    record = {"type": "response", "body": {"json": {"arguments": arguments}}}
    found = scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl")
    assert [f.rule for f in found] == ["api_key", "api_key"]
    record = {"type": "response", "body": {"json": redacted}}
    assert scan.find_in_jsonl(RULES, json.dumps(record), "x.jsonl") == []


def test_a_list_under_a_credential_key_in_stream_events_is_redacted() -> None:
    events = [{"data": {"api_key": [KEY]}}, {"data": {"password": ["mellon"]}}]
    Redactor(environ={}).events(events)
    assert events == [
        {"data": {"api_key": ["<REDACTED:api_key>"]}},
        {"data": {"password": ["mellon"]}},
    ]


def test_a_cassette_redacted_by_the_previous_rules_is_redacted_again() -> None:
    # Version 1 left the keys above in clear: a cassette it redacted is not taken as
    # redacted by these rules (its requests are redacted again at load and on save, so the
    # fail-closed scan does not refuse to save it and a live request matches it).
    redactor = Redactor(environ={})
    assert redactor.header_field() == {"rules": "llmcassette-default", "version": 2}
    assert not redactor.already_applied(
        {"redaction": {"rules": "llmcassette-default", "version": 1}}
    )
    assert redactor.already_applied({"redaction": redactor.header_field()})


# --------------------------------------------------------------------- numbers in headers


def test_a_number_in_a_header_named_a_credential_by_a_part_of_its_name_is_kept() -> None:
    # Hugging Face TGI answers with x-time-per-token: 21 (helper round 6): a timing, not a
    # token, though its name ends in -token. A header named a credential whole keeps the rule.
    redactor = Redactor(environ={})
    assert redactor.header_value("x-time-per-token", "21") == "21"
    assert redactor.header_value("x-auth-retries", "3.5") == "3.5"
    assert (
        redactor.header_value("x-session-token", "tok_9fK2mQ7xLp4Rv8Zs") != "tok_9fK2mQ7xLp4Rv8Zs"
    )
    assert redactor.header_value("x-api-key", "1234567890123456").startswith("<REDACTED:")
    headers = {"headers": {"x-time-per-token": "21", "x-api-key": "1234567890123456"}}
    found = list(scan.find_in_value(RULES, headers))
    assert [path for path, _ in found] == ["headers.x-api-key"]
