"""``llmcassette.use_cassette`` and ``llmcassette.configure`` outside pytest-recording."""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pytest
import vcr
from vcr.errors import CannotOverwriteExistingCassetteException

import llmcassette
from llmcassette import LegacyCassetteDriftWarning
from llmcassette._vcr.persister import display_path
from llmcassette.cli.main import main
from llmcassette.testing import LocalProvider

PROMPT = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
AUTH = {"authorization": "Bearer sk-test"}


def ask(url: str) -> str:
    response = httpx2.post(f"{url}/v1/chat/completions", json=PROMPT, headers=AUTH)
    return str(response.json()["choices"][0]["message"]["content"])


def ask_and_stop(provider: LocalProvider) -> str:
    answer = ask(provider.url)
    provider.stop()
    return answer


def test_context_manager_adds_the_jsonl_suffix(tmp_path: Path, provider: LocalProvider) -> None:
    with llmcassette.use_cassette(tmp_path / "chat", record_mode="once"):
        live = ask_and_stop(provider)
    assert (tmp_path / "chat.jsonl").exists()
    with llmcassette.use_cassette(tmp_path / "chat", record_mode="none"):
        assert ask(provider.url) == live


def test_decorator_on_a_sync_function(tmp_path: Path, provider: LocalProvider) -> None:
    @llmcassette.use_cassette(str(tmp_path / "sync.jsonl"), record_mode="once")
    def call() -> str:
        return ask(provider.url)

    live = call()
    provider.stop()
    assert call() == live
    assert len((tmp_path / "sync.jsonl").read_text().splitlines()) == 4


async def test_decorator_on_an_async_function(tmp_path: Path, provider: LocalProvider) -> None:
    @llmcassette.use_cassette(str(tmp_path / "async.jsonl"), record_mode="once")
    async def call() -> str:
        async with httpx2.AsyncClient() as client:
            response = await client.post(
                f"{provider.url}/v1/chat/completions", json=PROMPT, headers=AUTH
            )
        return str(response.json()["choices"][0]["message"]["content"])

    live = await call()
    provider.stop()
    assert await call() == live


def test_bare_decorator_names_the_cassette_after_the_function(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # The cassette goes next to the module that defines the function: a module in tmp_path,
    # so the test writes nothing into the repository.
    (tmp_path / "decorated.py").write_text(
        "import httpx2\n"
        "import llmcassette\n\n\n"
        "@llmcassette.use_cassette\n"
        "def named_after_me(url, headers):\n"
        "    return httpx2.get(f'{url}/v1/models', headers=headers).status_code\n"
    )
    spec = importlib.util.spec_from_file_location("decorated", tmp_path / "decorated.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.named_after_me(provider.url, AUTH) == 200
    assert (tmp_path / "named_after_me.jsonl").exists()


def test_configure_installs_llmcassette_on_a_users_vcr(
    tmp_path: Path, provider: LocalProvider
) -> None:
    my_vcr = llmcassette.configure(vcr.VCR(cassette_library_dir=str(tmp_path)))
    with my_vcr.use_cassette("mine.jsonl"):
        live = ask_and_stop(provider)
    header = json.loads((tmp_path / "mine.jsonl").read_text().splitlines()[0])
    assert header["format"] == "llmcassette"
    with my_vcr.use_cassette("mine.jsonl", record_mode="none"):
        assert ask(provider.url) == live


def test_configure_keeps_other_serializers_working(tmp_path: Path, provider: LocalProvider) -> None:
    my_vcr = llmcassette.configure(vcr.VCR(cassette_library_dir=str(tmp_path)))
    with my_vcr.use_cassette("plain.yaml", serializer="yaml"):
        ask_and_stop(provider)
    assert "interactions:" in (tmp_path / "plain.yaml").read_text()
    with my_vcr.use_cassette("plain.yaml", serializer="yaml", record_mode="none"):
        ask(provider.url)


def test_a_changed_body_is_not_replayed(tmp_path: Path, provider: LocalProvider) -> None:
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        ask_and_stop(provider)
    changed = {**PROMPT, "temperature": 0.5}
    with (
        pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException) as caught,
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
    ):
        httpx2.post(f"{provider.url}/v1/chat/completions", json=changed, headers=AUTH)
    assert "body.temperature: recorded (absent), incoming 0.5" in str(caught.value)


def test_a_mismatchs_to_dict_gives_the_values_at_its_path_and_the_fix_of_its_context(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """``expected``/``received`` are the recorded and incoming values at ``path`` (the error
    model's meaning), and ``how_to_fix`` names use_cassette's options, as the message does."""
    url = f"{provider.url}/v1/chat/completions"
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        httpx2.post(url, json={**PROMPT, "temperature": 0.5}, headers=AUTH)
    with (
        pytest.raises(llmcassette.CassetteMismatch) as caught,
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
    ):
        httpx2.post(url, json={**PROMPT, "temperature": 0.7}, headers=AUTH)
    found = caught.value.to_dict()
    assert (found["path"], found["expected"], found["received"]) == ("body.temperature", 0.5, 0.7)
    assert "use_cassette(..., record_mode='all')" in found["how_to_fix"]
    assert "pytest" not in found["how_to_fix"]
    assert "use_cassette(..., record_mode='all')" in found["message"]

    with (
        pytest.raises(llmcassette.CassetteMismatch) as absent,
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
    ):
        httpx2.post(url, json=PROMPT, headers=AUTH)
    assert (absent.value.to_dict()["expected"], absent.value.to_dict()["received"]) == (0.5, None)

    with (
        pytest.raises(llmcassette.CassetteMismatch) as missing,
        llmcassette.use_cassette(tmp_path / "none", record_mode="none"),
    ):
        httpx2.post(url, json=PROMPT, headers=AUTH)
    assert missing.value.to_dict()["how_to_fix"] == (
        "record the cassette (use_cassette(..., record_mode='once'))"
    )


def test_json_key_order_and_number_spelling_do_not_matter(
    tmp_path: Path, provider: LocalProvider
) -> None:
    body = b'{"model": "m", "temperature": 1, "messages": [{"role": "user", "content": "ping"}]}'
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        url = f"{provider.url}/v1/chat/completions"
        live = httpx2.post(url, content=body, headers={**AUTH, "content-type": "application/json"})
        provider.stop()
    reordered = b'{"messages":[{"content":"ping","role":"user"}],"temperature":1.0,"model":"m"}'
    with llmcassette.use_cassette(tmp_path / "c", record_mode="none"):
        replay = httpx2.post(
            url, content=reordered, headers={**AUTH, "content-type": "application/json"}
        )
    assert replay.json() == live.json()


def test_placeholder_numbers_do_not_count_in_matching(tmp_path: Path) -> None:
    from llmcassette.matching.canonical import body_value

    recorded = b'{"q": "use <REDACTED:openai-api-key:2> here"}'
    incoming = b'{"q": "use <REDACTED:openai-api-key> here"}'
    assert body_value(recorded, "application/json") == body_value(incoming, "application/json")
    assert body_value(b'{"q": "<REDACTED:a:2>"}') != body_value(b'{"q": "<REDACTED:b>"}')


def ask_about(url: str, question: str) -> str:
    prompt = {"model": "m", "messages": [{"role": "user", "content": question}]}
    response = httpx2.post(f"{url}/v1/chat/completions", json=prompt, headers=AUTH)
    return str(response.json()["choices"][0]["message"]["content"])


def record_with_vcrpy(path: Path, provider: LocalProvider, *questions: str) -> list[str]:
    """Record ``questions`` with plain vcrpy, as a suite did before llmcassette; the
    provider is stopped after, so that only the cassette can answer."""
    with vcr.VCR(record_mode="once").use_cassette(str(path)):
        answers = [ask_about(provider.url, question) for question in questions]
    provider.stop()
    return answers


def record_three(path: Path, provider: LocalProvider, labels: tuple[str | None, ...]) -> None:
    with llmcassette.use_cassette(path, record_mode="once"):
        for number, label in enumerate(labels, start=1):
            if label is None:
                ask_about(provider.url, f"question {number}")
            else:
                with llmcassette.session(label):
                    ask_about(provider.url, f"question {number}")
    provider.stop()


def test_replaying_one_of_three_fails_at_exit_listing_the_unplayed(
    tmp_path: Path, provider: LocalProvider
) -> None:
    record_three(tmp_path / "three", provider, (None, None, None))
    with (
        pytest.raises(llmcassette.UnusedInteractionsError) as caught,
        llmcassette.use_cassette(tmp_path / "three", record_mode="none"),
    ):
        ask_about(provider.url, "question 1")
    message = str(caught.value)
    assert "2 of the 3 interactions recorded in" in message
    assert "#2: POST /v1/chat/completions model=m 'question 2'" in message
    assert "#3: POST /v1/chat/completions model=m 'question 3'" in message
    assert "#1:" not in message
    assert [position for position, _, _ in caught.value.unused] == [2, 3]
    assert "by session" not in message  # no sessions recorded: no per-session line
    # the hint names use_cassette's options, not pytest's
    assert "use_cassette(..., allow_unused=True)" in message
    assert "use_cassette(..., record_mode='all')" in message
    assert "--record-mode" not in message
    assert "pytest.mark" not in message
    assert caught.value.details()["how_to_fix"] == caught.value.hint


def test_allow_unused_lets_a_replay_play_fewer(tmp_path: Path, provider: LocalProvider) -> None:
    record_three(tmp_path / "three", provider, (None, None, None))
    with llmcassette.use_cassette(tmp_path / "three", record_mode="none", allow_unused=True):
        ask_about(provider.url, "question 1")

    @llmcassette.use_cassette(str(tmp_path / "three.jsonl"), record_mode="none")
    def plays_two() -> None:
        ask_about(provider.url, "question 1")
        ask_about(provider.url, "question 2")

    with pytest.raises(llmcassette.UnusedInteractionsError, match="1 of the 3 interactions"):
        plays_two()


def test_one_use_cassette_entered_twice_checks_each_block(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # A block merges the options once, for its enter and its exit; the next one again.
    record_three(tmp_path / "three", provider, (None, None, None))
    reused = llmcassette.use_cassette(tmp_path / "three", record_mode="none")
    with pytest.raises(llmcassette.UnusedInteractionsError, match="2 of the 3"), reused:
        ask_about(provider.url, "question 1")
    with reused:
        for number in (1, 2, 3):
            ask_about(provider.url, f"question {number}")
    lenient = llmcassette.use_cassette(tmp_path / "three", record_mode="none", allow_unused=True)
    for _ in range(2):
        with lenient:
            ask_about(provider.url, "question 2")


def test_playing_everything_and_recording_do_not_fail(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Recording a new cassette plays nothing recorded: it is not a replay.
    with llmcassette.use_cassette(tmp_path / "all", record_mode="once"):
        live = [ask_about(provider.url, f"question {n}") for n in (1, 2, 3)]
    provider.stop()
    with llmcassette.use_cassette(tmp_path / "all", record_mode="none"):
        assert [ask_about(provider.url, f"question {n}") for n in (3, 1, 2)] == [
            live[2],
            live[0],
            live[1],
        ]


def test_an_error_in_the_block_is_not_replaced(tmp_path: Path, provider: LocalProvider) -> None:
    record_three(tmp_path / "three", provider, (None, None, None))

    def plays_one_then_fails() -> None:
        with llmcassette.use_cassette(tmp_path / "three", record_mode="none"):
            ask_about(provider.url, "question 1")
            raise KeyError("the block's own")

    with pytest.raises(KeyError, match="the block's own"):
        plays_one_then_fails()


def test_unplayed_interactions_are_counted_per_session(
    tmp_path: Path, provider: LocalProvider
) -> None:
    record_three(tmp_path / "three", provider, ("agent-a", "agent-b", None))
    with (
        pytest.raises(llmcassette.UnusedInteractionsError) as caught,
        llmcassette.use_cassette(tmp_path / "three", record_mode="none"),
        llmcassette.session("agent-a"),
    ):
        ask_about(provider.url, "question 1")
    assert caught.value.sessions == [("agent-a", 0, 1), ("agent-b", 1, 1), ("(no session)", 1, 1)]
    assert (
        "by session: agent-a: 0 of 1 not played; agent-b: 1 of 1 not played; "
        "(no session): 1 of 1 not played" in str(caught.value)
    )


def test_what_a_vcrpy_cassette_leaves_unplayed_is_drift_unless_strict(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # vcrpy never failed a block for what it left unplayed: use_cassette follows the
    # pytest plugin's rule (an LC304 warning; ``drift="strict"`` fails, naming the YAML).
    path, chat = tmp_path / "three.yaml", "/v1/chat/completions"
    with vcr.VCR(record_mode="once").use_cassette(str(path)):
        for number in (1, 2, 3):
            ask_about(provider.url, f"question {number}")
    provider.stop()
    with (
        pytest.warns(llmcassette.LegacyCassetteDriftWarning) as warned,
        llmcassette.use_cassette(path, record_mode="none"),
    ):
        ask_about(provider.url, "question 1")
    drifts = [w.message for w in warned if isinstance(w.message, LegacyCassetteDriftWarning)]
    assert [(d.file, d.path, d.recorded, d.incoming) for d in drifts] == [
        (str(path), f"interaction #{n}", f"POST {chat} model=m 'question {n}'", "(not requested)")
        for n in (2, 3)
    ]
    with (
        pytest.raises(llmcassette.UnusedInteractionsError) as caught,
        llmcassette.use_cassette(path, record_mode="none", drift="strict"),
    ):
        ask_about(provider.url, "question 1")
    assert f"2 of the 3 interactions recorded in {path}" in str(caught.value)


def test_a_vcrpy_cassette_plays_in_vcrpys_order_even_when_a_later_copy_has_the_body(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Found in traceloop's openai suite: a later recorded copy equal in body (there a
    # recorded 400) went before the first copy matching on vcrpy's match_on, which vcrpy
    # plays. The body is only checked (drift); strict matches it as llmcassette does.
    path = tmp_path / "two.yaml"
    with vcr.VCR(record_mode="once").use_cassette(str(path)):
        recorded = [ask_about(provider.url, f"question {n}") for n in (1, 2)]
    provider.stop()
    assert recorded[0] != recorded[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(path, record_mode="none"):
            answers = [ask_about(provider.url, "question 2") for _ in range(2)]
    assert answers == recorded
    drifts = [w.message for w in caught if isinstance(w.message, LegacyCassetteDriftWarning)]
    assert [(d.path, d.recorded, d.incoming) for d in drifts] == [
        ("body.messages[0].content", "'question 1'", "'question 2'")
    ]
    with llmcassette.use_cassette(path, record_mode="none", drift="strict", allow_unused=True):
        assert ask_about(provider.url, "question 2") == recorded[1]


def test_a_vcrpy_cassette_plays_the_first_unplayed_match_in_any_order_and_again_after_rewind(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Replay remembers where the unplayed interactions begin (a cassette replayed in order
    # looks at each one once); a request out of order, and vcrpy's rewind, still find
    # the first unplayed match.
    path = tmp_path / "mixed.yaml"

    def models() -> str:
        return httpx2.get(f"{provider.url}/v1/models", headers=AUTH).text

    with vcr.VCR(record_mode="once").use_cassette(str(path)):
        recorded = [ask_about(provider.url, "question 1"), models()]
        recorded.append(ask_about(provider.url, "question 1"))
    provider.stop()
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        assert models() == recorded[1]  # the second interaction, while the first is unplayed
        assert dict(cassette.play_counts) == {1: 1}
        assert ask_about(provider.url, "question 1") == recorded[0]
        assert dict(cassette.play_counts) == {0: 1, 1: 1}
        assert ask_about(provider.url, "question 1") == recorded[2]
        assert dict(cassette.play_counts) == {0: 1, 1: 1, 2: 1}
        cassette.rewind()
        assert ask_about(provider.url, "question 1") == recorded[0]
        assert dict(cassette.play_counts) == {0: 1}
        assert ask_about(provider.url, "question 1") == recorded[2]
        assert models() == recorded[1]
        assert dict(cassette.play_counts) == {0: 1, 1: 1, 2: 1}


def test_a_vcrpy_cassette_recorded_with_a_lower_case_method_replays(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # pydantic-ai's Voyage cassettes hold `method: post`; httpx sends POST, and vcrpy
    # compares methods as they are. llmcassette matches methods whatever their case.
    path = tmp_path / "lower.yaml"
    (recorded,) = record_with_vcrpy(path, provider, "question 1")
    text = path.read_text()
    assert "method: POST" in text
    path.write_text(text.replace("method: POST", "method: post"))
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        assert ask_about(provider.url, "question 1") == recorded
        assert dict(cassette.play_counts) == {0: 1}


def send(base_url: str, prompt: str, method: str = "post") -> str:
    """What ``ask_about`` asks, sent as ``post`` by default: http.client sends the method
    as it is spelt, as aiohttp's request objects keep it (google-genai's async client)."""
    url = httpx2.URL(base_url)
    connection = http.client.HTTPConnection(url.host, url.port, timeout=10)
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
    headers = {"content-type": "application/json", **AUTH}
    connection.request(method, "/v1/chat/completions", json.dumps(body), headers)
    return str(json.loads(connection.getresponse().read())["choices"][0]["message"]["content"])


def test_methods_match_whatever_their_case(tmp_path: Path, provider: LocalProvider) -> None:
    # chatlas's google-genai cassettes hold `method: post`, recorded through aiohttp, and
    # the same client sends `post` again: vcrpy matched that, llmcassette did not. (The
    # local provider answers `POST` only: the cassette is recorded so, then spelt `post`.)
    path = tmp_path / "lower.yaml"
    with vcr.VCR(record_mode="once").use_cassette(str(path)):
        recorded = send(provider.url, "question 1", "POST")
    provider.stop()  # only the cassette can answer now
    path.write_text(path.read_text().replace("method: POST", "method: post"))
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        assert send(provider.url, "question 1") == recorded
        assert dict(cassette.play_counts) == {0: 1}
    assert main(["convert", "--out", str(tmp_path / "out"), str(path)]) == 0
    converted = tmp_path / "out" / "lower.jsonl"
    assert '"method":"POST"' in converted.read_text()
    with llmcassette.use_cassette(converted, record_mode="none") as cassette:
        assert send(provider.url, "question 1") == recorded
        assert dict(cassette.play_counts) == {0: 1}


def test_a_converted_cassette_is_found_by_its_old_yaml_name(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # docs/migrating.md: convert, then delete the YAML; code that names the .yaml file
    # (use_cassette("x.yaml")) reads and writes the .jsonl beside it.
    path = tmp_path / "old.yaml"
    (recorded,) = record_with_vcrpy(path, provider, "question 1")
    assert main(["convert", str(path)]) == 0
    path.unlink()
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        assert ask_about(provider.url, "question 1") == recorded
        assert dict(cassette.play_counts) == {0: 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"]


def test_a_vcrpy_cassette_drifts_as_vcrpy_would_replay_under_a_suites_own_matchers(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # pydantic-ai registers its own `method`, `host` and `path` matchers (a region in a
    # Bedrock host, a project in a Vertex path): a vcrpy cassette still replays in vcrpy's
    # order on them, its body only checked, and strict still fails the drifted body.
    path = tmp_path / "own.yaml"
    (recorded,) = record_with_vcrpy(path, provider, "question 1")
    seen: list[str] = []

    def own_path(r1: Any, r2: Any) -> None:
        seen.append(r1.path)
        if r1.path.rstrip("/") != r2.path.rstrip("/"):
            raise AssertionError(f"{r1.path} != {r2.path}")

    def replay(drift: Any) -> tuple[str, dict[int, int]]:
        my_vcr = vcr.VCR(record_mode="none")
        llmcassette.configure(my_vcr, drift=drift)
        my_vcr.register_matcher("path", own_path)
        with my_vcr.use_cassette(str(path)) as cassette:
            return ask_about(provider.url, "question 2"), dict(cassette.play_counts)

    with pytest.warns(LegacyCassetteDriftWarning) as warned:
        answer, counts = replay("warn")
    assert (answer, counts) == (recorded, {0: 1})
    assert seen  # the suite's own matcher decided
    drifts = [w.message for w in warned if isinstance(w.message, LegacyCassetteDriftWarning)]
    assert [(d.path, d.recorded, d.incoming) for d in drifts] == [
        ("body.messages[0].content", "'question 1'", "'question 2'")
    ]
    with pytest.raises(llmcassette.CassetteMismatch):
        replay("strict")


def test_a_warning_made_an_error_inside_a_request_is_raised_when_the_cassette_exits(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Under `filterwarnings = error` (pydantic-ai's suite) a drift warning raised inside the
    # HTTP call would reach the SDK as a connection error, which it retries, and the test
    # would fail later on an exhausted cassette. The call gets its answer; the exit raises.
    path = tmp_path / "drifted.yaml"
    (recorded,) = record_with_vcrpy(path, provider, "question 1")
    played: list[object] = []

    def replay(*, fail: bool) -> None:
        with llmcassette.use_cassette(path, record_mode="none", allow_unused=fail) as cassette:
            played.extend([ask_about(provider.url, "question 2"), dict(cassette.play_counts)])
            if fail:
                raise KeyError("the block's own error")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(LegacyCassetteDriftWarning, match=r"body\.messages\[0\]"):
            replay(fail=False)
        assert played == [recorded, {0: 1}]
        # A block that fails on its own says so with its own error, not the warning.
        with pytest.raises(KeyError):
            replay(fail=True)


def test_a_mismatch_names_the_vcrpy_cassette_read_without_asking_the_filesystem(
    tmp_path: Path, provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `x.jsonl` does not exist, so `x.yaml` beside it is read: the mismatch names it. It
    # is named inside the request, where some suites fail any blocking call made on an
    # event loop (pydantic-ai's BlockBuster): no stat.
    with vcr.VCR(record_mode="once").use_cassette(str(tmp_path / "x.yaml")):
        ask_about(provider.url, "question 1")
    client = httpx2.Client()

    def blocking(*args: object, **kwargs: object) -> None:
        raise AssertionError("a blocking call inside the request")

    with llmcassette.use_cassette(tmp_path / "x", record_mode="none"):
        ask_about(provider.url, "question 1")  # the first request has looked for a sidecar
        with monkeypatch.context() as patched:
            patched.setattr(os, "stat", blocking)
            with pytest.raises(llmcassette.CassetteMismatch) as caught:
                client.get(f"{provider.url}/v1/models", headers=AUTH)
        assert f"cassette: {tmp_path / 'x.yaml'} (1 interaction" in str(caught.value)
    # Once a recording has written x.jsonl, that is the cassette's file.
    with llmcassette.use_cassette(tmp_path / "x", record_mode="new_episodes") as cassette:
        ask_about(provider.url, "question 1")
        client.get(f"{provider.url}/v1/models", headers=AUTH)
    assert (tmp_path / "x.jsonl").is_file()
    assert display_path(cassette) == str(tmp_path / "x.jsonl")
    with (
        llmcassette.use_cassette(tmp_path / "x", record_mode="none", allow_unused=True),
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        client.get(f"{provider.url}/v1/other")
    assert f"cassette: {tmp_path / 'x.jsonl'} (2 interactions" in str(caught.value)


def test_a_vcrpy_cassette_recorded_on_is_as_old_as_its_traffic(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """New episodes on a vcrpy cassette write x.jsonl dated by the old responses' Date
    header (the local provider's is fixed), not by the save, as ``convert`` dates it."""
    with vcr.VCR(record_mode="once").use_cassette(str(tmp_path / "x.yaml")):
        ask_about(provider.url, "question 1")
    with llmcassette.use_cassette(tmp_path / "x", record_mode="new_episodes"):
        ask_about(provider.url, "question 1")
        ask_about(provider.url, "question 2")
    header = json.loads((tmp_path / "x.jsonl").read_text().splitlines()[0])
    assert header["created_at"] == "2023-11-14T22:13:20Z"  # HTTP_DATE, the provider's Date


def test_a_vcrpy_cassette_drifts_through_vcrpys_own_stubs_as_through_httpx(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # requests (urllib3, http.client), like boto3 for Bedrock, goes through vcrpy's own
    # stubs: their lookups are llmcassette's too, so a drifted body replays with its drift
    # reported instead of failing, and strict fails it.
    import requests

    def ask_with_requests(question: str) -> str:
        prompt = {"model": "m", "messages": [{"role": "user", "content": question}]}
        url = f"{provider.url}/v1/chat/completions"
        response = requests.post(url, json=prompt, headers=AUTH, timeout=5)
        return str(response.json()["choices"][0]["message"]["content"])

    path = tmp_path / "requests.yaml"
    with vcr.VCR(record_mode="once").use_cassette(str(path)):
        recorded = [ask_with_requests("question 1"), ask_with_requests("question 2")]
    provider.stop()

    def replay() -> tuple[list[str], dict[int, int]]:
        with llmcassette.use_cassette(path, record_mode="none") as cassette:
            answers = [ask_with_requests("question 3"), ask_with_requests("question 2")]
            return answers, dict(cassette.play_counts)

    with pytest.warns(LegacyCassetteDriftWarning) as warned:
        answers, counts = replay()
    assert (answers, counts) == (recorded, {0: 1, 1: 1})  # in vcrpy's order
    drifts = [w.message for w in warned if isinstance(w.message, LegacyCassetteDriftWarning)]
    assert [(d.path, d.recorded, d.incoming) for d in drifts] == [
        ("body.messages[0].content", "'question 1'", "'question 3'")
    ]
    with (
        llmcassette.use_cassette(path, record_mode="none", drift="strict", allow_unused=True),
        pytest.raises(CannotOverwriteExistingCassetteException),
    ):
        ask_with_requests("question 3")


def test_requests_sdks_make_for_themselves_are_neither_recorded_nor_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, any_server: tuple[str, list[str]]
) -> None:
    # litellm's price list, which DSPy and litellm fetch on first use; tracing uploads from
    # exporters' background threads.
    origin, hits = any_server
    monkeypatch.setenv("LITELLM_MODEL_COST_MAP_URL", f"{origin}/mirror/prices.json")
    monkeypatch.setenv("LANGSMITH_ENDPOINT", f"{origin}/langsmith")
    housekeeping = [
        ("GET", "/BerriAI/litellm/main/model_prices_and_context_window.json"),
        ("GET", "/mirror/prices.json"),
        ("POST", "/v1/traces"),
        ("POST", "/api/public/otel/v1/traces"),
        ("POST", "/api/public/ingestion"),
        ("POST", "/langsmith/runs/multipart"),
        ("PATCH", "/langsmith/runs/0f3c"),
    ]
    cassette = tmp_path / "c.jsonl"

    def send_all(provider: LocalProvider) -> None:
        for method, path in housekeeping:
            assert httpx2.request(method, origin + path, json={}).json() == {}
        httpx2.get(provider.openai_base_url + "/models", headers=AUTH)

    with LocalProvider() as provider:
        with llmcassette.use_cassette(cassette, record_mode="once"):
            send_all(provider)
        with llmcassette.use_cassette(cassette, record_mode="none"):
            send_all(provider)  # live, as with no cassette
    assert hits == [f"{method} {path}" for method, path in housekeeping] * 2
    stored = [json.loads(line).get("uri") for line in cassette.read_text().splitlines()]
    assert [uri for uri in stored if uri] == [provider.openai_base_url + "/models"]


@pytest.mark.parametrize(
    ("method", "uri", "skipped"),
    [
        ("POST", "https://api.smith.langchain.com/runs/multipart", True),
        ("POST", "https://eu.api.smith.langchain.com/runs/batch", True),
        ("GET", "https://api.smith.langchain.com/datasets", False),  # a test's own data
        ("POST", "https://us.i.posthog.com/batch/", True),
        ("POST", "https://o1.ingest.us.sentry.io/api/7/envelope/", True),
        ("POST", "https://os-api.agno.com/telemetry/runs", True),
        ("POST", "https://os-api.agno.com/v1/agents", False),
        ("POST", "https://logfire-us.pydantic.dev/v1/traces", True),
        ("GET", "https://collector.example/v1/traces", False),  # exporters only send
        ("POST", "https://api.openai.com/v1/chat/completions", False),
        ("POST", "https://api.openai.com/v1/responses", False),
    ],
)
def test_what_counts_as_housekeeping(method: str, uri: str, skipped: bool) -> None:
    from llmcassette._vcr.housekeeping import is_housekeeping

    assert is_housekeeping(method, uri) is skipped


NULL_BODY = """\
interactions:
- request:
    body: null
    headers:
      Content-Type: [application/json]
    method: POST
    uri: http://127.0.0.1:9/v1/chat/completions
  response:
    body: {string: '{"answer": "hi"}'}
    headers:
      Content-Type: [application/json]
    status: {code: 200, message: OK}
version: 1
"""


def test_a_body_vcrpy_never_recorded_is_no_drift(tmp_path: Path) -> None:
    # vcrpy's aiohttp stub before 7.0.0 stored every json= POST as body null (found on
    # ecologits' huggingface_hub tests, helper round 6): what was sent cannot be compared.
    path = tmp_path / "test_x.yaml"
    path.write_text(NULL_BODY)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(str(path), record_mode="none"):
            answer = httpx2.post("http://127.0.0.1:9/v1/chat/completions", json={"q": "hi"})
    assert answer.json() == {"answer": "hi"}
    assert not [w for w in caught if "drift" in str(w.message)]
