"""A suite's own ``before_record_request`` in ``vcr_config`` keeps llmcassette's steps.

vcrpy takes a cassette's own hook instead of the VCR's, and pytest-recording passes
``vcr_config`` as the cassette's options: every OpenInference conftest sets one. llmcassette's
steps (leaving out SDK housekeeping, host aliases, redaction) are wrapped around it too.
"""

from __future__ import annotations

import json

import pytest

from llmcassette.testing import LocalProvider

CONFTEST = """
import pytest

seen = []

def mine(request):  # a suite's own hook: it still runs, on every request
    seen.append(request.path)
    request.headers["x-seen-by-own-hook"] = "yes"
    return request

@pytest.fixture
def vcr_config():
    return {
        "before_record_request": mine,
        "match": {"hosts": {"http://127.0.0.1:__PORT__": "https://api.openai.com"}},
    }
"""

TEST = """
import httpx2
import pytest

@pytest.mark.vcr
def test_chat():
    base = "http://127.0.0.1:__PORT__"
    try:  # an exporter's batch leaving now; exporters drop what they cannot send
        httpx2.post(base + "/v1/traces", content=b"spans")
    except Exception:
        pass
    response = httpx2.post(
        base + "/v1/chat/completions",
        headers={"authorization": "Bearer sk-proj-OwnHook0123456789abcdef0123456789"},
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert response.status_code == 200
"""


def test_a_vcr_config_hook_keeps_housekeeping_aliases_and_redaction(
    pytester: pytest.Pytester,
) -> None:
    with LocalProvider() as provider:
        port = str(provider.port)
        pytester.makeconftest(CONFTEST.replace("__PORT__", port))
        pytester.makepyfile(test_mod=TEST.replace("__PORT__", port))
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
        # Replayed strictly, the provider still up: the export is tried again, as with no
        # cassette (--block-network stops it), and the cassette answers the chat.
        sent = [r.path for r in provider.requests]
        result = pytester.runpytest_subprocess("--llmcassette-drift=strict", "--block-network")
        result.assert_outcomes(passed=1)
        assert sent == ["/v1/traces", "/v1/chat/completions"]
        assert [r.path for r in provider.requests] == sent
    (cassette,) = (pytester.path / "cassettes").rglob("*.jsonl")
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    requests = [line for line in lines if line.get("type") == "request"]
    assert [r["uri"] for r in requests] == ["https://api.openai.com/v1/chat/completions"]
    assert requests[0]["headers"]["x-seen-by-own-hook"] == "yes"
    assert requests[0]["headers"]["authorization"].startswith("Bearer <REDACTED:")
