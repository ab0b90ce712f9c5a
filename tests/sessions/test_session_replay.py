"""Sessions in the cassette: the label on the request line, replay per label, and the
record-time warning about identical concurrent requests outside any session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

import llmcassette
from llmcassette._vcr import overlap
from llmcassette.cassette import jsonl
from llmcassette.testing import LocalProvider

URL = "http://llm.test/v1/answer"
MATCH: Any = {"volatile": ["uuid"]}


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def interaction(question: str, answer: str, session: str | None = None) -> list[dict[str, Any]]:
    request: dict[str, Any] = {"type": "request", "method": "POST", "uri": URL}
    request["body"] = {"json": {"q": question}}
    if session is not None:
        request["session"] = session
    response = {"type": "response", "status": 200, "body": {"json": {"a": answer}}}
    return [request, response, {"type": "end", "events": 0}]


def write(path: Path, *interactions: list[dict[str, Any]]) -> Path:
    records = [{"format": "llmcassette", "format_version": 1}]
    records += [record for item in interactions for record in item]
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def ask(client: httpx2.Client, question: str) -> str:
    answer: str = client.post(URL, json={"q": question}).json()["a"]
    return answer


def test_each_label_replays_its_own_order_of_identical_requests(tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.jsonl",
        interaction("go", "A1", "a"),
        interaction("go", "B1", "b"),
        interaction("go", "A2", "a"),
        interaction("go", "unlabelled"),
        interaction("go", "A1 of the child", "a/child"),
    )
    with llmcassette.use_cassette(path, record_mode="none"), httpx2.Client() as client:
        with llmcassette.session("b"):
            assert ask(client, "go") == "B1"
        with llmcassette.session("a"):
            assert ask(client, "go") == "A1"
            with llmcassette.session("child"):
                assert ask(client, "go") == "A1 of the child"
            assert ask(client, "go") == "A2"
        assert ask(client, "go") == "unlabelled"


def exchange(body: dict[str, Any], answer: str) -> list[dict[str, Any]]:
    request = {"type": "request", "method": "POST", "uri": URL, "body": {"json": body}}
    response = {"type": "response", "status": 200, "body": {"json": {"a": answer}}}
    return [request, response, {"type": "end", "events": 0}]


def answer_carrying(tmp_path: Path) -> Path:
    """Two recorded conversations whose turns differ only in run ids (volatile): both first
    requests have one request key, and so do both follow-ups."""
    first_a, first_b = f"first (run {uuid.uuid4()})", f"first (run {uuid.uuid4()})"
    return write(
        tmp_path / "c.jsonl",
        exchange({"q": f"go (run {uuid.uuid4()})"}, first_a),
        exchange({"q": f"go (run {uuid.uuid4()})"}, first_b),
        exchange({"q": f"next (run {uuid.uuid4()})", "history": [first_a]}, "second of A"),
        exchange({"q": f"next (run {uuid.uuid4()})", "history": [first_b]}, "second of B"),
    )


def test_a_follow_up_goes_on_with_the_conversation_whose_answer_it_carries(
    tmp_path: Path,
) -> None:
    path = answer_carrying(tmp_path)
    with llmcassette.use_cassette(path, record_mode="none", match=MATCH), httpx2.Client() as c:
        first = c.post(URL, json={"q": f"go (run {uuid.uuid4()})"}).json()["a"]
        second = c.post(URL, json={"q": f"go (run {uuid.uuid4()})"}).json()["a"]
        # The caller given the second answer asks first: it gets the second conversation.
        follow_up = {"q": f"next (run {uuid.uuid4()})", "history": [second]}
        assert c.post(URL, json=follow_up).json()["a"] == "second of B"
        follow_up = {"q": f"next (run {uuid.uuid4()})", "history": [first]}
        assert c.post(URL, json=follow_up).json()["a"] == "second of A"


def test_identical_follow_ups_carrying_no_recorded_answer_go_in_recorded_order(
    tmp_path: Path,
) -> None:
    path = answer_carrying(tmp_path)
    replay = llmcassette.use_cassette(path, record_mode="none", match=MATCH, allow_unused=True)
    with replay, httpx2.Client() as c:
        for expected in ["second of A", "second of B"]:
            body = {"q": f"next (run {uuid.uuid4()})", "history": [f"first (run {uuid.uuid4()})"]}
            assert c.post(URL, json=body).json()["a"] == expected


@pytest.mark.parametrize(("recorded", "incoming"), [(None, "a"), ("a", None), ("a", "b")])
def test_a_request_never_replays_another_labels_interaction(
    tmp_path: Path, recorded: str | None, incoming: str | None
) -> None:
    path = write(tmp_path / "c.jsonl", interaction("go", "answer", recorded))
    labelled = llmcassette.session(incoming) if incoming else contextlib.nullcontext()
    replaying = llmcassette.use_cassette(path, record_mode="none")
    with (
        replaying,
        httpx2.Client() as client,
        labelled,
        pytest.raises(llmcassette.CassetteMismatch),
    ):
        ask(client, "go")


def test_the_label_is_recorded_on_the_request_line_and_read_back(
    tmp_path: Path, provider: LocalProvider
) -> None:
    path = tmp_path / "c.jsonl"
    url = provider.openai_base_url + "/chat/completions"

    def chat(client: httpx2.Client, text: str) -> Any:
        body = {"model": "m", "messages": [{"role": "user", "content": text}], "stream": True}
        with client.stream("POST", url, json=body) as response:
            return b"".join(response.iter_bytes())

    auth = {"authorization": "Bearer sk-test"}
    with llmcassette.use_cassette(path), httpx2.Client(headers=auth) as client:
        chat(client, "hello")
        with llmcassette.session("planner"):
            chat(client, "hello")
            with llmcassette.session("researcher"):
                chat(client, "hello")
    requests = [
        json.loads(line) for line in path.read_text().splitlines() if '"type":"request"' in line
    ]
    assert [request.get("session") for request in requests] == [
        None,
        "planner",
        "planner/researcher",
    ]
    assert list(requests[1])[-1] == "session"
    loaded = jsonl.read(path.read_bytes(), path)
    assert [item.session for item in loaded.interactions] == [None, "planner", "planner/researcher"]
    lines = [line for item in loaded.interactions for line in jsonl.interaction_lines(item)]
    assert "\n".join(lines) + "\n" == "\n".join(path.read_text().splitlines()[1:]) + "\n"


@pytest.mark.parametrize("value", ["", 3, None, ["a"]])
def test_a_session_field_that_is_not_a_non_empty_string_is_refused(
    tmp_path: Path, value: object
) -> None:
    path = write(tmp_path / "c.jsonl", interaction("go", "answer"))
    text = path.read_text().replace('"uri":', f'"session": {json.dumps(value)}, "uri":', 1)
    if value is None:  # null: as if it were absent
        assert jsonl.read(text.encode(), path).interactions[0].session is None
        return
    with pytest.raises(llmcassette.CassetteFormatError, match="field 'session' must be a non"):
        jsonl.read(text.encode(), path)


def test_a_file_without_sessions_still_loads(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", interaction("go", "answer"))
    assert [item.session for item in jsonl.read(path.read_bytes(), path).interactions] == [None]


def identical_request_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, llmcassette.ConcurrentIdenticalRequestsWarning)
    ]


async def ask_provider(client: httpx2.AsyncClient, url: str) -> str:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": f"Plan the trip {uuid.uuid4()}"}],
    }
    response = await client.post(url, json=body)
    return str(response.json()["choices"][0]["message"]["content"])


@contextlib.contextmanager
def answering_slowly(provider: LocalProvider) -> Iterator[None]:
    """Requests sent together overlap however late one of them leaves (a loaded machine)."""
    provider.behaviour.latency = 0.2
    try:
        yield
    finally:
        provider.behaviour.latency = 0.0


def record_twice(provider: LocalProvider, path: Path, *, together: bool) -> list[str]:
    url = provider.openai_base_url + "/chat/completions"

    async def run() -> None:
        async with httpx2.AsyncClient(headers={"authorization": "Bearer sk-test"}) as client:
            if together:
                await asyncio.gather(ask_provider(client, url), ask_provider(client, url))
            else:
                await ask_provider(client, url)
                await ask_provider(client, url)

    with warnings.catch_warnings(record=True) as caught, answering_slowly(provider):
        warnings.simplefilter("always")
        with llmcassette.use_cassette(path, match=MATCH):
            asyncio.run(run())
    return identical_request_warnings(caught)


def test_one_after_the_other_identical_requests_do_not_warn(
    tmp_path: Path, provider: LocalProvider
) -> None:
    assert record_twice(provider, tmp_path / "c.jsonl", together=False) == []


def test_concurrent_identical_requests_with_different_answers_warn(
    tmp_path: Path, provider: LocalProvider
) -> None:
    [message] = record_twice(provider, tmp_path / "c.jsonl", together=True)
    assert message.startswith("POST /v1/chat/completions (prompt 'Plan the trip ")
    assert "outside any session" in message
    assert "how to fix: run each caller in its own llmcassette.session(name)" in message


def test_inside_one_session_the_warning_asks_for_nested_sessions(
    tmp_path: Path, provider: LocalProvider
) -> None:
    with llmcassette.session("planner"):
        [message] = record_twice(provider, tmp_path / "c.jsonl", together=True)
    assert "all in session 'planner'" in message
    assert "nested llmcassette.session(name)" in message


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        (
            {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]},
            "hi",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "a b"}]}]}, "a b"),
        ({"input": "Tell me\n a joke"}, "Tell me a joke"),
        ({"contents": [{"parts": [{"text": "gemini"}]}]}, "gemini"),
        ({"prompt": "x" * 100}, "x" * 57 + "..."),
        ({"other": 1}, '{"other": 1}'),
    ],
)
def test_the_warning_shows_the_start_of_the_last_message(body: Any, shown: str) -> None:
    assert overlap.prompt_start(json.dumps(body).encode()) == shown


def test_show_names_the_session_of_each_interaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmcassette.cli.main import main

    path = write(
        tmp_path / "c.jsonl",
        interaction("go", "A1", "agent-a"),
        interaction("go", "plain"),
        interaction("go", "C1", "parent/child"),
    )
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    # One heading per session (tests/cli/test_sessions_grouping.py shows the layout).
    assert [line for line in out.splitlines() if "session" in line] == [
        "== session 'agent-a': 1 interaction ==",
        "== (no session): 1 interaction ==",
        "== session 'parent/child': 1 interaction ==",
    ]
    assert main(["show", "--json", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)["interactions"]
    assert [item["session"] for item in shown] == ["agent-a", None, "parent/child"]


def test_a_mismatch_names_the_session_and_ranks_its_interactions_first(tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.jsonl",
        interaction("summarize the report", "A1", "agent-a"),
        interaction("translate it", "B1", "agent-b"),
    )
    with (
        pytest.raises(llmcassette.CassetteMismatch) as caught,
        llmcassette.use_cassette(path, record_mode="none"),
        llmcassette.session("agent-b"),
        httpx2.Client() as client,
    ):
        ask(client, "summarize the report!")
    # agent-a's request is closer in content, but the request was agent-b's.
    assert [candidate.position for candidate in caught.value.candidates] == [2, 1]
    assert caught.value.session == "agent-b"
    assert "llmcassette.session 'agent-b'; its interactions are compared first" in str(caught.value)
    assert "closest recorded: interaction #2" in str(caught.value)


def test_outside_a_session_a_mismatch_ranks_by_content_alone(tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.jsonl",
        interaction("translate it", "B1", "agent-b"),
        interaction("summarize the report", "A1", "agent-a"),
    )
    with (
        pytest.raises(llmcassette.CassetteMismatch) as caught,
        llmcassette.use_cassette(path, record_mode="none"),
        httpx2.Client() as client,
    ):
        ask(client, "summarize the report!")
    assert caught.value.candidates[0].position == 2
    assert caught.value.session is None
    assert "llmcassette.session" not in str(caught.value)


@pytest.mark.parametrize(
    ("recorded_in", "asked_in", "said"),
    [
        (
            ["a", "b"],
            None,
            "the 2 recorded calls like it were made in llmcassette.sessions 'a', 'b', "
            "and this one outside any session",
        ),
        (
            ["a", "b"],
            "c",
            "the 2 recorded calls like it were made in llmcassette.sessions 'a', 'b', "
            "and this one in llmcassette.session 'c'",
        ),
        # sessions added to the code, the cassette not recorded again
        (
            [None],
            "a",
            "the 1 recorded call like it was made outside any session, "
            "and this one in llmcassette.session 'a'",
        ),
    ],
)
def test_a_request_recorded_only_in_other_sessions_says_so(
    tmp_path: Path, recorded_in: list[str | None], asked_in: str | None, said: str
) -> None:
    # Not "all played already" (none was), nor allow_playback_repeats, which cannot help.
    path = write(tmp_path / "c.jsonl", *(interaction("go", "A", label) for label in recorded_in))
    in_session = llmcassette.session(asked_in) if asked_in else contextlib.nullcontext()
    replay = llmcassette.use_cassette(
        path, record_mode="none", allow_unused=True, allow_playback_repeats=True
    )
    with (
        pytest.raises(llmcassette.CassetteMismatch) as caught,
        replay,
        in_session,
        httpx2.Client() as client,
    ):
        ask(client, "go")
    assert caught.value.reason == "other_session"
    message = str(caught.value)
    assert message.startswith(f"call #1 to POST /v1/answer, but {said}\n"), message
    assert "a request matches only interactions recorded in its own session" in message
    assert "played already" not in message
    assert caught.value.details()["how_to_fix"].startswith("make the call in the")


@pytest.fixture
def fresh_ids_server() -> Iterator[str]:
    """Like a real provider at temperature 0: the same answer to the same question, with
    an id and a time of its own each time, gzip-compressed."""
    import gzip
    import http.server
    import threading
    import time

    class Answer(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            time.sleep(0.05)  # the calls overlap
            body = json.dumps(
                {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": time.time_ns(), "a": "same"}
            )
            packed = gzip.compress(body.encode())
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(packed)))
            self.end_headers()
            self.wfile.write(packed)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/answer"
    server.shutdown()
    server.server_close()


def test_identical_answers_with_ids_of_their_own_do_not_warn(
    tmp_path: Path, fresh_ids_server: str
) -> None:
    # Every provider gives each answer its own id and time: callers that get the same
    # content get it in either order, which is nothing to warn about.
    async def run() -> list[str]:
        async with httpx2.AsyncClient() as client:
            replies = await asyncio.gather(
                *(client.post(fresh_ids_server, json={"q": "spam?"}) for _ in range(3))
            )
        return [reply.json()["id"] for reply in replies]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "c.jsonl"):
            ids = asyncio.run(run())
    assert len(set(ids)) == 3
    assert identical_request_warnings(caught) == []


def test_callers_with_clients_of_their_own_are_warned_of_first_call_order(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Replay binds clients by the order of their first calls: the callers are told apart,
    # as long as that order holds (docs/concurrency.md, separate clients).
    url = provider.openai_base_url + "/chat/completions"
    auth = {"authorization": "Bearer sk-test"}

    async def run() -> None:
        async with (
            httpx2.AsyncClient(headers=auth) as first,
            httpx2.AsyncClient(headers=auth) as second,
        ):
            await asyncio.gather(ask_provider(first, url), ask_provider(second, url))

    with warnings.catch_warnings(record=True) as caught, answering_slowly(provider):
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "c.jsonl", match=MATCH):
            asyncio.run(run())
    [message] = identical_request_warnings(caught)
    assert "replay tells their callers apart by client only while each client makes its " in message
    assert "cannot tell their callers apart" not in message
