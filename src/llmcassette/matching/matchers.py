"""vcrpy matchers that compare requests by meaning and say where they differ.

vcrpy calls a matcher as ``matcher(incoming, recorded)``; raising ``AssertionError`` with a
message puts that message in vcrpy's "no match" error.
"""

from __future__ import annotations

from typing import Any

from llmcassette.cassette.compression import decode_content
from llmcassette.matching.canonical import body_value
from llmcassette.matching.normalize import MatchConfig

MAX_SHOWN = 5


def content_type(request: Any) -> str | None:
    """The request's ``content-type`` header, if any."""
    return _header(request, "content-type")


def _header(request: Any, wanted: str) -> str | None:
    """The value of header ``wanted`` (lowercase), whatever the case it was sent in."""
    headers = getattr(request, "headers", None) or {}
    if type(headers) is dict:
        value = next((v for name, v in headers.items() if name.lower() == wanted), None)
    else:
        # vcrpy's HeadersDict (every vcrpy request's) ignores case in one lookup; going
        # through its items costs more than the rest of a request's key.
        value = headers.get(wanted)
    if isinstance(value, list):
        value = value[0] if value else None
    return None if value is None else str(value)


def sent_body(request: Any) -> Any:
    """The request's body with its ``content-encoding`` undone: a client that compresses
    what it sends (gzip stamps the time in its header) sends other bytes on every run for
    the same JSON, which is what matching compares. Left as sent when it does not decode."""
    body = getattr(request, "body_bytes", request.body)
    coding = _header(request, "content-encoding") if body else None
    if coding is None or not isinstance(body, bytes):
        return body
    return decode_content(body, {"content-encoding": [coding]})[0]


# Headers that choose what the API does with the same body: a beta feature turned on (a
# longer context, another version of a tool, another API generation), or the guardrail
# Bedrock's InvokeModel applies (boto3 sends guardrailIdentifier and guardrailVersion as
# headers), changes the answer. Other headers (keys, SDK telemetry, the API version every
# call of an SDK sends) are not compared.
ANSWER_HEADERS = (
    "anthropic-beta",
    "openai-beta",
    "x-amzn-bedrock-guardrailidentifier",
    "x-amzn-bedrock-guardrailversion",
)


def answer_headers(request: Any) -> dict[str, str]:
    """The request's ``ANSWER_HEADERS`` as matching compares them: each the sorted set of
    its comma-separated values (``"b, a"`` and ``"a,b"`` name the same features), left out
    when empty."""
    found: dict[str, str] = {}
    for name in ANSWER_HEADERS:
        value = _header(request, name)
        if value:
            features = {part.strip() for part in value.split(",")}
            features.discard("")
            if features:
                found[name] = ", ".join(sorted(features))
    return found


def comparable_body(request: Any, config: MatchConfig) -> Any:
    """A request's body as matching compares it: parsed, then normalized by ``config``."""
    return config.body(body_value(sent_body(request), content_type(request)))


def comparable_method(request: Any) -> str:
    """A request's method as matching compares it: case ignored.

    http.client and aiohttp's request objects keep the method as the caller spells it
    (google-genai's async client sends ``post``), and so do the vcrpy cassettes recorded
    through them; other clients send ``POST``, and ``convert`` writes ``POST``.
    """
    return str(request.method).upper()


def method(incoming: Any, recorded: Any) -> None:
    """vcrpy's ``method`` matcher, case ignored (``comparable_method``)."""
    if comparable_method(incoming) != comparable_method(recorded):
        raise AssertionError(f"{incoming.method} != {recorded.method}")


class LlmBody:
    """The ``llm_body`` matcher: bodies compared semantically, after ``MatchConfig`` rules.

    JSON key order and number spelling do not count; ignored paths and volatile values
    neither. Differences are raised as ``AssertionError`` lines vcrpy shows in its report.
    """

    __name__ = "llm_body"  # vcrpy names a failed matcher after its __name__

    def __init__(self, config: MatchConfig | None = None) -> None:
        self.config = config or MatchConfig()

    def __call__(self, incoming: Any, recorded: Any) -> None:
        _raise(self.differences(incoming, recorded))

    def differences(self, incoming: Any, recorded: Any) -> list[Any]:
        """Where the requests differ in their ``ANSWER_HEADERS`` and their bodies."""
        found = _header_differences(answer_headers(recorded), answer_headers(incoming))
        return found + self.body_differences(incoming, recorded)

    def body_differences(self, incoming: Any, recorded: Any) -> list[Any]:
        """Where the bodies differ; none where a recorded placeholder is filled (a secret
        the cassette learnt from another call, which the live request sends itself)."""
        if getattr(incoming, "body_bytes", incoming.body) == getattr(
            recorded, "body_bytes", recorded.body
        ):
            return []
        from llmcassette.matching.jsondiff import differences  # only a body that differs needs it

        return differences(
            comparable_body(recorded, self.config),
            comparable_body(incoming, self.config),
            "body",
            placeholders=True,
        )


class FillingPlaceholders:
    """vcrpy's ``body`` matcher, except that a recorded redaction placeholder also matches
    the value a live request sends where it stands.

    A cassette takes a credential out everywhere once a call names it (a password a later
    tool call sends), so an earlier recorded prompt holds a placeholder where the live
    request, redacted on its own, still has the value: vcrpy's comparison of the two
    bodies would never match it. Registered under vcrpy's name, for suites that match on
    ``body``.
    """

    __name__ = "body"

    def __init__(self, vcrpy_body: Any) -> None:
        self.vcrpy_body = vcrpy_body
        # llm_body's comparison of the bodies as sent (no normalizing), placeholders filled.
        self._as_sent = LlmBody(MatchConfig(sdk_defaults=False))

    def __call__(self, incoming: Any, recorded: Any) -> None:
        try:
            self.vcrpy_body(incoming, recorded)
        except AssertionError:
            theirs = getattr(recorded, "body_bytes", recorded.body)
            held = theirs.encode("utf-8") if isinstance(theirs, str) else theirs
            if not isinstance(held, bytes) or b"<REDACTED:" not in held:
                raise
            if self._as_sent.body_differences(incoming, recorded):
                raise


def _header_differences(recorded: dict[str, str], incoming: dict[str, str]) -> list[Any]:
    if recorded == incoming:
        return []
    from llmcassette.matching.jsondiff import differences

    return differences(recorded, incoming, "headers")


def _raise(found: list[Any]) -> None:
    if not found:
        return
    lines = [d.describe() for d in found[:MAX_SHOWN]]
    if len(found) > MAX_SHOWN:
        more = len(found) - MAX_SHOWN
        lines.append(f"… and {more} more difference{'s' if more > 1 else ''}")
    raise AssertionError("\n".join(lines))


# The matcher with the default rules (what match_on "llm_body" means without options).
llm_body = LlmBody()
