"""The built-in redaction rules: secret shapes, and the header, key and parameter names.

Every value-shape rule is one regular expression; :func:`compile_shapes` joins them into a
single alternation with one named group per rule, so a string is searched once, whatever
the number of rules. A rule may carry a validator that rejects look-alikes (``Basic`` prose).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Name and version of the built-in rule set, written in every cassette header.

RULES_VERSION = 1

#: What a placeholder looks like; nothing inside one is ever matched by a rule.
PLACEHOLDER_PATTERN = r"<REDACTED:[A-Za-z0-9_.\-]+(?::[0-9]+)?>"
PLACEHOLDER_RE = re.compile(PLACEHOLDER_PATTERN)


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

    ``triggers``: substrings one of which every match contains; a string holding none of
    them is skipped without running the regex (``()``: always run it).
    """

    name: str
    pattern: str
    validate: Callable[[str], bool] | None = None
    triggers: tuple[str, ...] = ()


_B = r"(?<![A-Za-z0-9_\-])"  # not preceded by a token character
_E = r"(?![A-Za-z0-9_\-])"  # not followed by one

SHAPE_RULES: tuple[ShapeRule, ...] = (
    ShapeRule(
        "private-key",
        r"-----BEGIN[A-Z ]{0,30}PRIVATE KEY-----[\s\S]{0,10000}?-----END[A-Z ]{0,30}PRIVATE KEY-----",
        triggers=("PRIVATE KEY",),
    ),
    ShapeRule(
        "anthropic-api-key",
        _B + r"sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{20,}",
        triggers=("sk-ant-",),
    ),
    ShapeRule("openrouter-api-key", _B + r"sk-or-v1-[0-9a-f]{64}" + _E, triggers=("sk-or-",)),
    ShapeRule(
        "openai-api-key",
        _B
        + r"(?:sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{0,200}T3BlbkFJ[A-Za-z0-9_\-]{8,}"
        r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"
        r"|sk-[A-Za-z0-9]{48})" + _E,
        triggers=("sk-",),
    ),
    ShapeRule("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, triggers=("AIza",)),
    ShapeRule("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_\-]{20,}", triggers=("ya29.",)),
    ShapeRule(
        "aws-access-key-id",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Z0-9])",
        triggers=("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    ShapeRule(
        "aws-sigv4-signature", r"(?<=Signature=)[0-9a-f]{64}(?![0-9a-f])", triggers=("Signature=",)
    ),
    ShapeRule("aws-bedrock-api-key", _B + r"ABSK[A-Za-z0-9+/]{40,}={0,2}", triggers=("ABSK",)),
    ShapeRule(
        "github-token",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})" + _E,
        triggers=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ShapeRule("huggingface-token", _B + r"hf_[A-Za-z]{34}" + _E, triggers=("hf_",)),
    ShapeRule("groq-api-key", _B + r"gsk_[A-Za-z0-9]{52}" + _E, triggers=("gsk_",)),
    ShapeRule("xai-api-key", _B + r"xai-[A-Za-z0-9]{80}" + _E, triggers=("xai-",)),
    ShapeRule("perplexity-api-key", _B + r"pplx-[A-Za-z0-9]{48}" + _E, triggers=("pplx-",)),
    ShapeRule("replicate-api-token", _B + r"r8_[A-Za-z0-9]{37}" + _E, triggers=("r8_",)),
    ShapeRule(
        "langsmith-api-key",
        _B + r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}" + _E,
        triggers=("lsv2_",),
    ),
    ShapeRule(
        "slack-token",
        _B + r"(?:xox[abposr]-[0-9A-Za-z\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})",
        triggers=("xox", "xapp-"),
    ),
    ShapeRule(
        "stripe-key",
        _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _E,
        triggers=("_live_", "_test_"),
    ),
    ShapeRule(
        "jwt",
        _B + r"ey[A-Za-z0-9_\-]{8,}\.ey[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{0,}",
        triggers=("eyJ",),
    ),
    ShapeRule(
        "basic-auth",
        r"(?:(?<=Basic )|(?<=basic )|(?<=BASIC ))[A-Za-z0-9+/]{6,}(?:={0,2}|(?:%3[Dd]){1,2})",
        _basic_auth_ok,
        triggers=("Basic ", "basic ", "BASIC "),
    ),
    ShapeRule(
        "bearer-token",
        r"(?:(?<=Bearer )|(?<=bearer )|(?<=BEARER ))[A-Za-z0-9_\-.~+/]{16,}=*",
        triggers=("Bearer ", "bearer ", "BEARER "),
    ),
    ShapeRule(
        "url-userinfo",
        r"(?<=://)[^\s/:@<>\"'?#]{1,200}:[^\s/@<>\"'?#]{1,200}(?=@)",
        triggers=("://",),
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
    }
)
# Suffixes and fragments that make any other header a credential header.
CREDENTIAL_HEADER_SUFFIXES = ("-api-key", "-apikey", "-token", "-secret", "-key-id")
CREDENTIAL_HEADER_FRAGMENTS = ("auth",)
NOT_CREDENTIAL_HEADERS = frozenset({"www-authenticate", "authentication-info"})
# Cookie headers: each cookie value is replaced, the names and attributes are kept.
COOKIE_HEADERS = frozenset({"cookie", "set-cookie"})
# Account-bound (not secret) headers: the value is replaced by a placeholder.
IDENTIFYING_HEADERS = frozenset(
    {"openai-organization", "openai-project", "anthropic-organization-id", "x-goog-user-project"}
)
# Infrastructure trace identifiers: meaningless on replay, dropped. Provider request ids
# (x-request-id, request-id, x-amzn-requestid) are kept: SDKs expose them (error.request_id)
# and they grant no access; ``drop_headers`` removes them too.
DROPPED_HEADERS = frozenset(
    {"cf-ray", "x-amzn-trace-id", "x-amz-id-2", "x-amz-cf-id", "x-cloud-trace-context"}
)
REQUEST_ID_HEADERS = frozenset({"x-request-id", "request-id", "x-amzn-requestid"})

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
    }
)

# Environment variable names whose values are redacted wherever they appear.
ENV_NAME_RE = re.compile(
    r"(?:API_?KEY|_KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|_AUTH|PRIVATE_KEY|_PAT)$",
    re.IGNORECASE,
)
ENV_MIN_LENGTH = 8


def all_rule_names() -> list[str]:
    """Every built-in rule name, for ``disable``."""
    return [rule.name for rule in SHAPE_RULES] + ["env", "headers", "json-keys", "params"]


def group_name(index: int) -> str:
    return f"r{index}"


def compile_shapes(rules: Iterable[ShapeRule], literals: Iterable[str]) -> re.Pattern[str]:
    """One regex: placeholders first (so they are skipped), then every rule, then literals."""
    return compile_numbered(enumerate(rules), literals)


def compile_numbered(
    numbered: Iterable[tuple[int, ShapeRule]], literals: Iterable[str]
) -> re.Pattern[str]:
    """Like ``compile_shapes`` for some of the rules, each named by its index in the full set."""
    parts = [f"(?P<placeholder>{PLACEHOLDER_PATTERN})"]
    parts += [f"(?P<{group_name(i)}>{rule.pattern})" for i, rule in numbered]
    ordered = sorted(set(literals), key=len, reverse=True)
    if ordered:
        parts.append("(?P<literal>" + "|".join(re.escape(v) for v in ordered) + ")")
    return re.compile("|".join(parts))
