"""The "to fix" hints of a mismatch name the command of where the cassette is used."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import httpx2
import pytest

import llmcassette
from llmcassette import CassetteMismatch  # imported now: pytester forgets modules it saw imported
from llmcassette.testing import LocalProvider

TEST = """
import os
import httpx2
import pytest

@pytest.mark.vcr
def test_chat():
    prompt = os.environ.get("PROMPT", "hi")
    httpx2.post(os.environ["PROVIDER_URL"] + "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
                headers={"authorization": "Bearer sk-test"})
"""

PYTEST_HINTS = (
    "pytest test_mod.py::test_chat --record-mode=rewrite",
    "in vcr_config or the vcr marker",
)
USE_CASSETTE_HINTS = (
    "use_cassette(..., record_mode='all')",
    "record_mode='new_episodes'",
    "use_cassette(..., match={'ignore': ['$.messages[0].content']})",
)


def ask(url: str, prompt: str) -> None:
    httpx2.post(
        f"{url}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        headers={"authorization": "Bearer sk-test"},
    )


def test_pytest_and_use_cassette_hints_name_their_own_command(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=TEST)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    (cassette,) = (pytester.path / "cassettes").rglob("*.jsonl")

    # The same changed prompt against the same cassette: under pytest...
    monkeypatch.setenv("PROMPT", "bye")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "body.messages[0].content: recorded 'hi', incoming 'bye'" in output
    assert all(hint in output for hint in PYTEST_HINTS), output
    assert "use_cassette(" not in output

    # ...and in use_cassette.
    replay = llmcassette.use_cassette(cassette, record_mode="none")
    with pytest.raises(CassetteMismatch) as raised, replay:
        ask(provider.url, "bye")
    message = str(raised.value)
    assert raised.value.context == "use_cassette"
    assert "body.messages[0].content: recorded 'hi', incoming 'bye'" in message
    assert all(hint in message for hint in USE_CASSETTE_HINTS), message
    assert "--record-mode" not in message, message


NAMED_TESTS = """
import os
import httpx2
import pytest

def ask(prompt):
    httpx2.post(os.environ["PROVIDER_URL"] + "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
                headers={"authorization": "Bearer sk-test"})

@pytest.mark.vcr
@pytest.mark.parametrize("prompt", ["say hi"])
def test_changed(prompt):
    ask(prompt + os.environ.get("SUFFIX", ""))

@pytest.mark.vcr
def test_fewer_calls():
    ask("first")
    if not os.environ.get("SUFFIX"):
        ask("second")
"""


def test_the_hints_name_the_test_to_record_again_quoted_for_the_shell(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=NAMED_TESTS)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=2)
        monkeypatch.setenv("SUFFIX", "!")
        # On an xdist worker, which builds the messages: the same node ids.
        result = pytester.runpytest_subprocess("-n", "1", "-p", "no:randomly")
        result.assert_outcomes(failed=2)
        changed = "pytest 'test_mod.py::test_changed[say hi]' --record-mode=rewrite"
        fewer = "pytest test_mod.py::test_fewer_calls --record-mode=rewrite"
        output = result.stdout.str()  # not fnmatch: "[say hi]" would be a character class
        assert f"to fix: if the request changed on purpose, record again ({changed}, or " in output
        assert f"to fix: record the cassette again ({fewer}) if the code makes fewer " in output
        # The commands run as the shell would split them, and record exactly those tests.
        for command in (changed, fewer):
            program, *args = shlex.split(command)
            assert program == "pytest"
            pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    pytester.runpytest_subprocess().assert_outcomes(passed=2)


def test_a_missing_cassette_says_how_to_record_it_with_use_cassette(tmp_path: Path) -> None:
    replay = llmcassette.use_cassette(tmp_path / "missing.jsonl", record_mode="none")
    with pytest.raises(CassetteMismatch) as raised, replay:
        ask("http://127.0.0.1:9", "hi")
    assert "record it: use_cassette(..., record_mode='once')" in str(raised.value)
    assert "--record-mode" not in str(raised.value)


CONFTEST_FIXING_THE_MODE = """
import pytest

@pytest.fixture(scope="session")
def vcr_config():
    # As langchain's and openinference's suites do: pytest-recording lets this record_mode
    # win over --record-mode.
    return {"record_mode": "once"}
"""


def test_a_record_mode_set_in_vcr_config_is_overridden_by_the_hinted_flag(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST_FIXING_THE_MODE)
    pytester.makepyfile(test_mod=TEST)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess().assert_outcomes(passed=1)
        (cassette,) = (pytester.path / "cassettes").rglob("*.jsonl")
        monkeypatch.setenv("PROMPT", "bye")

        # The hint pytest users know does nothing here: vcr_config's "once" wins.
        pytester.runpytest_subprocess("--record-mode=rewrite").assert_outcomes(failed=1)
        assert "bye" not in cassette.read_text()
        # So the mismatch gives the flag that wins over it...
        result = pytester.runpytest_subprocess()
        result.assert_outcomes(failed=1)
        hint = (
            "record again (pytest test_mod.py::test_chat --llmcassette-record-mode=rewrite; "
            "vcr_config or the vcr marker sets record_mode, which --record-mode does not "
            "override)"
        )
        assert hint in result.stdout.str().replace("\nE         ", " ")
        # ...and following it records the test again.
        pytester.runpytest_subprocess("--llmcassette-record-mode=rewrite").assert_outcomes(passed=1)
    assert cassette.read_text().count('"type":"request"') == 1
    assert "bye" in cassette.read_text()
    # Replaying is a replay too, whatever vcr_config says: a missing cassette fails.
    cassette.unlink()
    result = pytester.runpytest_subprocess("--llmcassette-record-mode=none")
    result.assert_outcomes(failed=1)
    assert not cassette.exists()


def test_a_marker_record_mode_is_overridden_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_mod=TEST.replace("@pytest.mark.vcr", '@pytest.mark.vcr(record_mode="none")')
    )
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(failed=1)
        assert not (pytester.path / "cassettes").exists()
        pytester.runpytest_subprocess("--llmcassette-record-mode=once").assert_outcomes(passed=1)
    assert len(list((pytester.path / "cassettes").rglob("*.jsonl"))) == 1


def _tool_chain(tool_id: str, request_id: str) -> dict[str, object]:
    # A Gemini tool round trip: the id the client made for the call is copied into its
    # response; a request id the client makes anew rides in the metadata.
    return {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"name": "f", "id": tool_id}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "id": tool_id}}]},
        ],
        "metadata": {"request": f"req-{request_id}"},
    }


@pytest.mark.parametrize(
    ("changes", "advised"),
    [
        ("tool", "match={'volatile': ['tool_call_id']}"),
        ("request", "match={'volatile': ['uuid']}"),
        ("prompt", "match={'ignore': ['$.contents[0].role']}"),
    ],
)
def test_a_value_made_anew_on_every_run_is_advised_away_by_its_preset(
    tmp_path: Path, any_server: tuple[str, list[str]], changes: str, advised: str
) -> None:
    # Leaving out the one path where the difference shows first would not help: the same
    # id sits in the function response too, and in every later call of a chain.
    tool_id, request_id = "call_" + "a" * 32, "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
    url = f"{any_server[0]}/v1beta/models/gemini-2.0-flash:generateContent"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        httpx2.post(url, json=_tool_chain(tool_id, request_id))
    sent = _tool_chain(
        "call_" + "b" * 32 if changes == "tool" else tool_id,
        "9e8d7c6b-5a49-4837-a261-504f3e2d1c0b" if changes == "request" else request_id,
    )
    if changes == "prompt":
        sent["contents"][0]["role"] = "user"  # type: ignore[index]
    with (
        pytest.raises(CassetteMismatch) as raised,
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
    ):
        httpx2.post(url, json=sent)
    assert f"use_cassette(..., {advised})" in str(raised.value), str(raised.value)
    if changes != "prompt":  # following the advice makes the request match
        with llmcassette.use_cassette(
            tmp_path / "c", record_mode="none", match={"volatile": [advised.split("'")[3]]}
        ):
            assert httpx2.post(url, json=sent).status_code == 200


def test_an_answer_sent_back_is_not_advised_away(tmp_path: Path) -> None:
    # Two agents asked the same question at once and got answers A and B; replayed in the
    # other order, agent a continues from B. Ignoring the answer's path, as the hint for
    # any other field would advise, would let one agent carry on the other's conversation.
    def request(*turns: tuple[str, str]) -> dict[str, object]:
        messages = [{"role": role, "content": text} for role, text in turns]
        return {
            "type": "request",
            "method": "POST",
            "uri": "http://llm.test/v1/chat/completions",
            "body": {"json": {"model": "m", "messages": messages}},
        }

    def response(text: str) -> list[dict[str, object]]:
        answer = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        return [
            {"type": "response", "status": 200, "body": {"json": answer}},
            {"type": "end", "events": 0},
        ]

    plan = ("user", "Propose a plan")
    records: list[dict[str, object]] = [{"format": "llmcassette", "format_version": 2}]
    for agent, answer in (("a", "Plan A"), ("b", "Plan B")):
        records += [request(plan), *response(answer)]
        follow_up = (plan, ("assistant", answer), ("user", f"As {agent}, continue"))
        records += [request(*follow_up), *response(f"{agent} goes on")]
    path = tmp_path / "agents.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    messages = [
        {"role": "user", "content": "Propose a plan"},
        {"role": "assistant", "content": "Plan B"},
        {"role": "user", "content": "As a, continue"},
    ]
    with (
        pytest.raises(CassetteMismatch) as raised,
        llmcassette.use_cassette(path, record_mode="none", allow_unused=True),
    ):
        httpx2.post(
            "http://llm.test/v1/chat/completions", json={"model": "m", "messages": messages}
        )
    message = str(raised.value)
    assert message.startswith("body.messages[1].content: recorded 'Plan A', incoming 'Plan B'")
    assert "to fix: body.messages[1].content is an answer of the model, sent back" in message
    assert "llmcassette.session(name)" in message
    assert "'ignore'" not in message
    assert "'volatile'" not in message


def test_every_difference_is_advised_away_not_only_the_first(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    # agno's telemetry: two uuids made anew on every run and a field added. The first
    # difference alone made the advice, which then left the others in the way.
    tool_id, request_id = "call_" + "a" * 32, "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
    url = f"{any_server[0]}/v1beta/models/gemini-2.0-flash:generateContent"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        httpx2.post(url, json=_tool_chain(tool_id, request_id))
    sent = _tool_chain("call_" + "b" * 32, "9e8d7c6b-5a49-4837-a261-504f3e2d1c0b")
    sent["contents"][0]["role"] = "user"  # type: ignore[index]
    with (
        pytest.raises(CassetteMismatch) as raised,
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
    ):
        httpx2.post(url, json=sent)
    advised = {"volatile": ["tool_call_id", "uuid"], "ignore": ["$.contents[0].role"]}
    assert (
        "if these 4 fields change on every run, leave them out: use_cassette(..., "
        f"match={advised!r}) (docs/matching.md)"
    ) in str(raised.value), str(raised.value)
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none", match=advised):
        assert httpx2.post(url, json=sent).status_code == 200


def test_a_part_match_on_leaves_out_is_not_reported_as_the_difference(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest.md's conftest: match on the path and the body only, so the provider's port
    # may change between recording and replay. The mismatch leads with the body, not the port.
    pytester.makeconftest(
        """
def pytest_recording_configure(config, vcr):
    vcr.match_on = ("method", "path", "llm_body")
"""
    )
    pytester.makepyfile(test_mod=TEST)
    with LocalProvider() as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    with LocalProvider() as other:
        monkeypatch.setenv("PROVIDER_URL", other.url)
        assert other.port != provider.port
        pytester.runpytest_subprocess().assert_outcomes(passed=1)
        monkeypatch.setenv("PROMPT", "bye")
        result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "CassetteMismatch: body.messages[0].content: recorded 'hi', incoming 'bye'" in output
    assert "url.port" not in output
