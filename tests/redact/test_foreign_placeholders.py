"""What another tool already wrote in place of a credential (pydantic-ai's ``scrubbed``,
``<redacted>``, ``REDACTED_API_KEY``) is left as it is (#18 item 1): it is not a secret, so
it gets no placeholder, is not searched for elsewhere as a known value, and the fail-closed
scan does not report it. In pydantic-ai's corpus ``client_secret=scrubbed`` in an OAuth
refresh made every other ``scrubbed`` (``client_id``, the response's ``access_token``) a
``<REDACTED:client_secret>``, changing a response body the test replays.
"""

from __future__ import annotations

import pytest

from llmcassette.redact import Redactor, scan
from llmcassette.redact.rules import Rules, is_scrubbed

from .test_rules import OPENAI

RULES = Rules(environ={})
FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    "value", ["scrubbed", "<redacted>", "REDACTED", "[REDACTED]", "REDACTED_API_KEY", "****"]
)
def test_a_value_another_tool_scrubbed_is_kept(value: str) -> None:
    assert is_scrubbed(value)
    redactor = Redactor(environ={})
    assert redactor.headers({"authorization": f"Bearer {value}"}) == {
        "authorization": f"Bearer {value}"
    }
    assert redactor.json({"access_token": value, "api_key": value}) == {
        "access_token": value,
        "api_key": value,
    }
    assert redactor.changes == 0
    record = {
        "type": "response",
        "headers": {"x-api-key": [value]},
        "body": {"json": {"secret": value}},
    }
    assert list(scan.find_in_value(RULES, record, response=True)) == []


def test_a_scrubbed_oauth_refresh_keeps_every_value_and_its_response() -> None:
    redactor = Redactor(environ={})
    form = (
        "grant_type=refresh_token&client_id=scrubbed&client_secret=scrubbed&refresh_token=scrubbed"
    )
    request = {"uri": "https://oauth2.example.test/token", "headers": {"content-type": [FORM]}}
    request["body"] = {"text": form}
    response = {"status": {"code": 200}, "headers": {"content-type": ["application/json"]}}
    response["body"] = {"json": {"access_token": "scrubbed", "expires_in": 3599}}
    redactor.records(request, response, None)
    assert request["body"] == {"text": form}
    assert response["body"] == {"json": {"access_token": "scrubbed", "expires_in": 3599}}
    assert redactor.counts == {}


@pytest.mark.parametrize("value", [OPENAI, "hidden-123", "redacted1234abcd", "Secret1", "xyz"])
def test_a_credential_is_not_mistaken_for_a_scrubbed_value(value: str) -> None:
    assert not is_scrubbed(value)
    assert Redactor(environ={}).json({"api_key": value})["api_key"].startswith("<REDACTED:")
