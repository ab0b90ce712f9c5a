"""Replay compares a live body before redacting it, and redacts it only when that misses.

A live body equal to a recorded one holds no secret where matching looks (the recorded one
was redacted), so the lookup skips the body redaction (a request of megabytes of base64
costs more to redact than to compare). The URI and headers are always redacted first: a
credential sent in a header stays a known value for the bodies of later requests. A body
that does not match as it is gets redacted and looked up again, and a legacy cassette's
drift is only ever reported from the redacted body.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import httpx
import pytest

import llmcassette
from llmcassette.errors import LegacyCassetteDriftWarning
from llmcassette.redact import Redactor

# The echo server answers with the credential it was sent (here the "q" field).
from .test_secrets_corpus import echo_server  # noqa: F401 (a fixture)

UNSHAPED = "Zq7Xw2Lm9Rt4Yp6Kd3Hs8Vb1Nc5Fg0Jq"
OPENAI_KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2


@pytest.fixture
def body_redactions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every request body the redactor redacts (``Redactor.body_bytes`` calls)."""
    seen: list[object] = []
    original = Redactor.body_bytes

    def spy(self: Redactor, body: bytes, *args: object, **kwargs: object) -> bytes:
        seen.append(body)
        return original(self, body, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Redactor, "body_bytes", spy)
    return seen


def test_a_body_that_matches_as_it_is_is_not_redacted_again(
    tmp_path: Path,
    echo_server: str,  # noqa: F811
    body_redactions: list[object],
) -> None:
    path = tmp_path / "plain.jsonl"
    bodies = [{"q": "hi"}, {"q": "hi", "prompt": f"use {OPENAI_KEY}"}]
    with llmcassette.use_cassette(path), httpx.Client() as client:
        for body in bodies:
            client.post(f"{echo_server}/echo/text", json=body)
    assert OPENAI_KEY not in path.read_text()
    body_redactions.clear()
    with (
        llmcassette.use_cassette(path, record_mode="none") as cassette,
        httpx.Client() as client,
    ):
        for body in bodies:
            assert client.post(f"{echo_server}/echo/text", json=body).status_code == 200
    assert cassette.all_played
    # Neither body was redacted: the first is equal as it is, and the one holding the key
    # fills the recorded placeholder with it (matching.canonical.fills_placeholders).
    assert body_redactions == []


def test_a_key_sent_in_a_header_is_known_for_a_later_body(
    tmp_path: Path,
    echo_server: str,  # noqa: F811
) -> None:
    """The first request matches as it is (its body is not redacted), yet its header's
    unshaped key is learned: the second request, which echoes the key in its body and has
    no header, matches the recorded (redacted) one."""
    path = tmp_path / "known.jsonl"
    url = f"{echo_server}/echo/text"
    first = {"model": "m", "prompt": "hi"}
    second = {"q": "hi", "note": f"my key is {UNSHAPED}"}
    auth = {"authorization": f"Bearer {UNSHAPED}"}
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(url, json=first, headers=auth)
        client.post(url, json=second)
    assert UNSHAPED not in path.read_text()
    with (
        llmcassette.use_cassette(path, record_mode="none") as cassette,
        httpx.Client() as client,
    ):
        assert client.post(url, json=first, headers=auth).status_code == 200
        assert client.post(url, json=second).status_code == 200
    assert cassette.all_played


def _as_converted(path: Path) -> None:
    """Mark a recorded cassette as converted from vcrpy: its bodies are only checked."""
    lines = path.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["converted_from"] = {"format": "vcrpy", "file": "recorded.yaml"}
    lines[0] = json.dumps(header) + "\n"
    path.write_text("".join(lines))


def test_legacy_drift_is_reported_from_the_redacted_body(
    tmp_path: Path,
    echo_server: str,  # noqa: F811
) -> None:
    path = tmp_path / "legacy.jsonl"
    url = f"{echo_server}/echo/text"
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(url, json={"q": "hi", "prompt": "hi", "api_key": OPENAI_KEY})
    _as_converted(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with (
            llmcassette.use_cassette(path, record_mode="none") as cassette,
            httpx.Client() as client,
        ):
            sent = {"q": "hi", "prompt": "bye", "api_key": OPENAI_KEY}
            assert client.post(url, json=sent).status_code == 200
    assert cassette.all_played
    drift = [w.message for w in caught if isinstance(w.message, LegacyCassetteDriftWarning)]
    # The key differs from the recorded placeholder only before redaction: not drift.
    assert [(w.path, w.recorded, w.incoming) for w in drift] == [("body.prompt", "'hi'", "'bye'")]
    assert OPENAI_KEY not in "".join(str(w) for w in drift)


def test_an_equal_legacy_body_replays_without_drift(
    tmp_path: Path,
    echo_server: str,  # noqa: F811
    body_redactions: list[object],
) -> None:
    path = tmp_path / "legacy-equal.jsonl"
    url = f"{echo_server}/echo/text"
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(url, json={"q": "hi"})
    _as_converted(path)
    body_redactions.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", LegacyCassetteDriftWarning)
        with (
            llmcassette.use_cassette(path, record_mode="none") as cassette,
            httpx.Client() as client,
        ):
            assert client.post(url, json={"q": "hi"}).status_code == 200
    assert cassette.all_played
    assert body_redactions == []
