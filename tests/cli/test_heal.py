"""``llmcassette heal``: hand-broken copies of the project's cassettes come back whole.

Every cassette in ``cassettes/`` is broken the ways the issue names (an event duplicated,
the stream terminator removed, the end line's count changed), healed, then replayed through
the real openai, anthropic and httpx clients next to the original (what each SDK assembles
must be equal, but for the fields a synthesized terminator leaves empty), and by the
project's own example tests (tests/examples) in a pytester run. An intact cassette is left
byte for byte as it was.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from llmcassette.cassette import FORMAT_VERSION
from llmcassette.cassette.events import event_name
from llmcassette.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = sorted((ROOT / "cassettes").glob("*/*.jsonl"))
EXAMPLES = ROOT / "tests" / "examples"
# What a synthesized terminator leaves empty, by cassette: the usage of the Responses API's
# response.completed, the counts and durations of Ollama's done object. They were measured
# by the provider, so heal does not write them.
LEFT_EMPTY = {
    "test_responses_stream.jsonl": ["response.usage"],
    "test_ndjson_stream_with_httpx2.jsonl": [
        "total_duration",
        "load_duration",
        "prompt_eval_count",
        "prompt_eval_duration",
        "eval_count",
        "eval_duration",
    ],
}


def records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def broken(text: str, *, remove_terminator: bool) -> str:
    """``text`` with its second event doubled, its last event removed (when asked) and its
    end line's count off by three."""
    lines = text.splitlines()
    kinds = [record.get("type") for record in records(text)]
    events = [index for index, kind in enumerate(kinds) if kind == "event"]
    if events and remove_terminator:
        del lines[events[-1]]
    if events:
        lines.insert(events[1], lines[events[1]])
    end = lines.index(next(line for line in lines if json.loads(line).get("type") == "end"))
    record = json.loads(lines[end])
    record["events"] += 3
    lines[end] = json.dumps(record)
    return "\n".join(lines) + "\n"


def without_the_unknown(name: str, event: dict[str, Any]) -> dict[str, Any]:
    """A recorded terminator event as heal can write it: what it left empty null (a field of
    the Responses API's response) or absent (Ollama's counts), its time and mark dropped."""
    event = json.loads(json.dumps(event))
    event.pop("t", None)
    event.pop("synthesized", None)
    for field in LEFT_EMPTY.get(name, []):
        if field.startswith("response."):
            event["data"]["response"][field.removeprefix("response.")] = None
        else:
            event["data"].pop(field, None)
    return event


def heal(*args: str) -> tuple[int, dict[str, Any]]:
    import contextlib
    import io

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["heal", "--json", *args])
    return code, json.loads(stdout.getvalue())


def test_intact_cassettes_are_left_byte_identical(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "cassettes", tmp_path / "cassettes")
    before = {
        path: path.read_bytes() for path in (tmp_path / "cassettes").rglob("*") if path.is_file()
    }
    code, document = heal(str(tmp_path / "cassettes"))
    assert code == 0
    assert len(document["results"]) == len(CASSETTES)
    assert all(result["repairs"] == [] for result in document["results"])
    after = {
        path: path.read_bytes() for path in (tmp_path / "cassettes").rglob("*") if path.is_file()
    }
    assert after == before  # no file changed, and no log was written


@pytest.mark.parametrize("original", CASSETTES, ids=lambda path: path.stem)
def test_a_broken_copy_is_healed_and_logged(
    original: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / original.name
    text = original.read_text()
    streamed = any(record.get("type") == "event" for record in records(text))
    copy.write_text(broken(text, remove_terminator=streamed))
    code, document = heal(str(copy))
    assert code == 0, document
    repairs = document["results"][0]["repairs"]
    kinds = [repair["kind"] for repair in repairs]
    expected = ["end-count-fixed"]
    if streamed:
        expected[:0] = ["duplicate-event-removed", "terminator-synthesized"]
    assert kinds == expected

    healed, recorded = records(copy.read_text()), records(text)
    summary = healed[0].pop("healed")
    assert summary["repairs"] == dict.fromkeys(expected, 1)
    left_empty = LEFT_EMPTY.get(original.name, [])
    if streamed:  # the synthesized terminator is the recorded one, marked, less the unknown
        synthesized = healed[-2]
        assert synthesized["synthesized"] == "heal"
        for field in left_empty:  # left empty, not invented
            if field.startswith("response."):
                assert synthesized["data"]["response"][field.removeprefix("response.")] is None
            else:
                assert field not in synthesized["data"]
        healed[-2] = without_the_unknown(original.name, synthesized)
        recorded[-2] = without_the_unknown(original.name, recorded[-2])
        (where,) = summary["synthesized"]
        assert where["line"] == len(healed) - 1  # the line before the end line
        assert where["left_empty"] == left_empty
        (made,) = [repair for repair in repairs if repair["synthesized"]]
        assert made["synthesized"]["left_empty"] == left_empty
        assert made["kind"] == "terminator-synthesized"
    else:
        assert "synthesized" not in summary
    assert healed == recorded

    log = copy.with_name(original.stem + ".heal.log")
    (entry,) = records(log.read_text())
    assert entry["format"] == "llmcassette-heal-log"
    assert entry["file"] == str(copy)
    assert [repair["kind"] for repair in entry["repairs"]] == expected
    assert entry["repairs"] == repairs
    assert document["results"][0]["log"] == str(log)
    # A synthesized terminator is a terminator: check finds nothing wrong with the stream.
    capsys.readouterr()
    assert main(["check", "--json", str(copy)]) == 0, capsys.readouterr().out


def cut_responses_stream(keep: int, **changes: Any) -> str:
    """The Responses cassette cut after its first ``keep`` events; ``changes`` set fields of
    the data of the last event kept (``item_status`` the status of its item)."""
    original = ROOT / "cassettes" / "test_openai_sdk" / "test_responses_stream.jsonl"
    lines = original.read_text().splitlines()
    chosen = [records(line)[0] for line in lines[3 : 3 + keep]]
    last = chosen[-1]["data"]
    if "item_status" in changes:
        last["item"]["status"] = changes.pop("item_status")
    last.update(changes)
    body = [*lines[:3], *map(json.dumps, chosen), json.dumps({"type": "end", "events": keep})]
    return "\n".join(body) + "\n"


@pytest.mark.parametrize(
    ("keep", "changes", "why"),
    [
        (
            6,
            {},
            "output item 0 (msg_21f9d0e0e48065ce241970006577f274af478a963ed86d04) was "
            "started and never done",
        ),
        (2, {}, "no output item was done"),
        (12, {"item_status": "incomplete"}, "output item 0 ended 'incomplete'"),
    ],
    ids=["item-never-done", "no-output", "item-incomplete"],
)
def test_a_responses_stream_cut_inside_the_answer_is_not_made_up(
    keep: int, changes: dict[str, Any], why: str, tmp_path: Path
) -> None:
    copy = tmp_path / "cut.jsonl"
    copy.write_text(cut_responses_stream(keep, **changes))
    before = copy.read_bytes()
    code, document = heal(str(copy))
    assert code == 2
    (error,) = document["errors"]
    assert error["code"] == "LC701 cannot-heal"
    assert error["file"] == str(copy)
    assert why in error["message"]
    assert "record the cassette again" in error["how_to_fix"]
    assert copy.read_bytes() == before
    assert not copy.with_name(copy.stem + ".heal.log").exists()


def test_the_synthesized_response_holds_the_items_in_output_order(tmp_path: Path) -> None:
    """Two items (the second a function call): output is built from their done events."""
    original = ROOT / "cassettes" / "test_openai_sdk" / "test_responses_stream.jsonl"
    lines = original.read_text().splitlines()
    kept = [records(line)[0] for line in lines[3:-2]]  # response.completed removed
    call = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "arguments": '{"city": "Paris"}',
        "call_id": "call_1",
        "name": "get_weather",
    }
    for kind in ("response.output_item.added", "response.output_item.done"):
        item = {**call, "status": "in_progress", "arguments": ""} if "added" in kind else call
        data = {"type": kind, "sequence_number": len(kept), "output_index": 1, "item": item}
        kept.append({"type": "event", "t": 0.05, "event": kind, "data": data})
    body = [*lines[:3], *map(json.dumps, kept), json.dumps({"type": "end", "events": len(kept)})]
    copy = tmp_path / "two.jsonl"
    copy.write_text("\n".join(body) + "\n")
    code, document = heal(str(copy))
    assert code == 0, document
    completed = records(copy.read_text())[-2]
    assert completed["synthesized"] == "heal"
    assert completed["data"]["sequence_number"] == len(kept)
    response = completed["data"]["response"]
    message = next(e for e in kept if event_name(e) == "response.output_item.done")["data"]["item"]
    assert response["output"] == [message, call]
    assert (response["status"], response["usage"]) == ("completed", None)
    created = kept[1]["data"]["response"]  # response.in_progress: everything else from it
    assert {k: v for k, v in response.items() if k not in ("status", "output", "usage")} == {
        k: v for k, v in created.items() if k not in ("status", "output", "usage")
    }


def test_a_second_heal_keeps_the_list_of_synthesized_events(tmp_path: Path) -> None:
    original = ROOT / "cassettes" / "test_raw_clients" / "test_ndjson_stream_with_httpx2.jsonl"
    copy = tmp_path / original.name
    copy.write_text(broken(original.read_text(), remove_terminator=True))
    assert heal(str(copy))[0] == 0
    first = records(copy.read_text())[0]["healed"]["synthesized"]
    lines = copy.read_text().splitlines()
    lines.insert(4, lines[4])  # another event doubled: every line after it moves down
    copy.write_text("\n".join(lines) + "\n")
    code, document = heal(str(copy))
    assert code == 0, document
    assert [r["kind"] for r in document["results"][0]["repairs"]] == ["duplicate-event-removed"]
    healed = records(copy.read_text())
    assert healed[0]["healed"]["synthesized"] == first
    assert healed[0]["healed"]["repairs"] == {
        "duplicate-event-removed": 2,
        "terminator-synthesized": 1,
        "end-count-fixed": 1,
    }
    assert healed[first[0]["line"] - 1]["synthesized"] == "heal"


def test_an_ollama_generate_stream_gets_the_generate_done_object(tmp_path: Path) -> None:
    chunk = {"model": "llama3", "created_at": "2023-11-14T22:13:20Z", "done": False}
    body = [
        {"format": "llmcassette", "format_version": FORMAT_VERSION},
        {
            "type": "request",
            "method": "POST",
            "uri": "http://localhost:11434/api/generate",
            "body": {"json": {"model": "llama3", "prompt": "Hi"}},
        },
        {
            "type": "response",
            "status": 200,
            "headers": {"content-type": "application/x-ndjson"},
            "body": {"stream": "ndjson"},
        },
        {"type": "event", "t": 0.1, "data": {**chunk, "response": "Hel"}},
        {"type": "event", "t": 0.2, "data": {**chunk, "response": "lo"}},
        {"type": "end", "events": 2},
    ]
    copy = tmp_path / "generate.jsonl"
    copy.write_text("".join(json.dumps(line) + "\n" for line in body))
    code, document = heal(str(copy))
    assert code == 0, document
    repair, count = document["results"][0]["repairs"]
    assert (repair["kind"], count["kind"]) == ("terminator-synthesized", "end-count-fixed")
    assert repair["synthesized"]["left_empty"][0] == "context"
    assert repair["synthesized"]["assumed"] == ["done_reason"]
    done = records(copy.read_text())[-2]
    assert done == {
        "type": "event",
        "t": 0.2,
        "synthesized": "heal",
        "data": {
            "model": "llama3",
            "created_at": "2023-11-14T22:13:20Z",
            "response": "",
            "done": True,
            "done_reason": "stop",
        },
    }
    assert records(copy.read_text())[-1]["events"] == 3


def writer_stream(uri: str) -> str:
    """An OpenAI-style chat stream that ends with its usage chunk, as Writer's does."""
    chunk = {"object": "chat.completion.chunk", "model": "palmyra-x4"}
    body = [
        {"format": "llmcassette", "format_version": FORMAT_VERSION},
        {"type": "request", "method": "POST", "uri": uri, "body": {"json": {"stream": True}}},
        {
            "type": "response",
            "status": 200,
            "headers": {"content-type": "text/event-stream"},
            "body": {"stream": "sse"},
        },
        {"type": "event", "data": {**chunk, "choices": [{"delta": {"content": "Hi"}}]}},
        {"type": "event", "data": {**chunk, "choices": [{"delta": {}, "finish_reason": "stop"}]}},
        {"type": "event", "data": {**chunk, "choices": [], "usage": {"total_tokens": 3}}},
        {"type": "end", "events": 3},
    ]
    return "".join(json.dumps(line) + "\n" for line in body)


def test_a_writer_stream_ends_at_its_usage_chunk(tmp_path: Path) -> None:
    """Writer sends no [DONE] after the usage chunk: heal leaves its streams as they are,
    and the same stream sent to OpenAI gets its [DONE]."""
    writer = tmp_path / "writer.jsonl"
    writer.write_text(writer_stream("https://api.writer.com/v1/chat"))
    before = writer.read_bytes()
    code, document = heal(str(writer))
    assert (code, document["results"][0]["repairs"]) == (0, [])
    assert writer.read_bytes() == before
    openai = tmp_path / "openai.jsonl"
    openai.write_text(writer_stream("https://api.openai.com/v1/chat/completions"))
    code, document = heal(str(openai))
    assert code == 0, document
    assert document["results"][0]["repairs"][0]["kind"] == "terminator-synthesized"


def test_dry_run_prints_the_plan_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = ROOT / "cassettes" / "test_openai_sdk" / "test_chat_stream.jsonl"
    copy = tmp_path / original.name
    copy.write_text(broken(original.read_text(), remove_terminator=True))
    before = copy.read_bytes()
    assert main(["heal", "--dry-run", str(copy)]) == 0
    printed = capsys.readouterr().out
    assert "would repair (terminator-synthesized)" in printed
    assert "would repair (end-count-fixed): the end line said 13 events" in printed
    assert copy.read_bytes() == before
    assert list(tmp_path.iterdir()) == [copy]


def test_a_json_body_stored_as_base64_is_stored_as_json(tmp_path: Path) -> None:
    original = ROOT / "cassettes" / "test_openai_sdk" / "test_chat_not_streamed.jsonl"
    lines = original.read_text().splitlines()
    response = json.loads(lines[2])
    exact = json.dumps(response["body"]["json"], indent=2).encode()  # its "indent2" layout
    response["body"] = {"base64": base64.b64encode(exact).decode()}
    lines[2] = json.dumps(response)
    copy = tmp_path / original.name
    copy.write_text("\n".join(lines) + "\n")
    log = tmp_path / "all.log"
    code, document = heal("--log", str(log), str(copy))
    assert code == 0
    (repair,) = document["results"][0]["repairs"]
    assert (repair["kind"], repair["before"], repair["after"]) == ("body-decoded", "base64", "json")
    assert records(copy.read_text())[1:] == records(original.read_text())[1:]
    assert [entry["file"] for entry in records(log.read_text())] == [str(copy)]


def test_rules_rename_an_old_event_type(tmp_path: Path) -> None:
    original = ROOT / "cassettes" / "test_anthropic_sdk" / "test_messages_stream.jsonl"
    old = original.read_text().replace('"message_delta"', '"message_update"')
    copy = tmp_path / original.name
    copy.write_text(old)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.llmcassette.heal]\nevent_aliases = { message_update = "message_delta" }\n'
    )
    code, document = heal(str(copy))
    assert code == 0
    kinds = {repair["kind"] for repair in document["results"][0]["repairs"]}
    assert kinds == {"event-renamed"}
    assert records(copy.read_text())[1:] == records(original.read_text())[1:]


OPENAI_PROMPT = "Which clients can replay this?"  # tests/examples/test_cross_client_sources
ANTHROPIC_PROMPT = "Which clients can replay this answer?"


def openai_call(**kwargs: Any) -> Any:
    import openai

    client = openai.OpenAI(base_url="http://llm.local/v1", api_key="sk-example", max_retries=0)
    if "input" in kwargs:
        return client.responses.create(model="gpt-4o-mini", **kwargs)
    return client.chat.completions.create(model="gpt-4o-mini", **kwargs)


def anthropic_client() -> Any:
    import anthropic

    return anthropic.Anthropic(base_url="http://llm.local", api_key="sk-ant-x", max_retries=0)


def chat(prompt: str, **kwargs: Any) -> Any:
    return openai_call(messages=[{"role": "user", "content": prompt}], **kwargs)


def chat_stream(prompt: str, **kwargs: Any) -> list[Any]:
    return [chunk.model_dump() for chunk in chat(prompt, stream=True, **kwargs)]


def anthropic_stream(prompt: str) -> dict[str, Any]:
    with anthropic_client().messages.stream(
        model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": prompt}]
    ) as stream:
        events = [event.model_dump() for event in stream]
        return {"events": events, "final": stream.get_final_message().model_dump()}


def ndjson_chat() -> list[Any]:
    import httpx2

    body = {"model": "llama3", "messages": [{"role": "user", "content": "Hi there"}]}
    with httpx2.Client() as http, http.stream("POST", "http://llm.local/api/chat", json=body) as r:
        return [json.loads(line) for line in r.iter_lines() if line]


def models_gzip() -> Any:
    import asyncio

    import httpx

    async def get() -> Any:
        async with httpx.AsyncClient() as http:
            response = await http.get(
                "http://llm.local/v1/models", headers={"authorization": "Bearer sk-example"}
            )
            return response.status_code, response.json()

    return asyncio.run(get())


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
# What the SDK (or client) assembles from each cassette: the calls of tests/examples.
ASSEMBLE = {
    "test_messages_stream": lambda: anthropic_stream("Name a colour"),
    "test_anthropic_messages": lambda: (
        anthropic_client()
        .messages.create(
            model="claude-haiku-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": ANTHROPIC_PROMPT}],
        )
        .model_dump()
    ),
    "test_anthropic_messages_stream": lambda: anthropic_stream(ANTHROPIC_PROMPT),
    "test_openai_chat": lambda: chat(OPENAI_PROMPT).model_dump(),
    "test_openai_chat_stream": lambda: chat_stream(OPENAI_PROMPT),
    "test_chat_not_streamed": lambda: chat("One word").model_dump(),
    "test_chat_stream": lambda: chat_stream(
        "Name three rivers", stream_options={"include_usage": True}
    ),
    "test_chat_tool_call_stream": lambda: chat_stream("Weather in Paris?", tools=[WEATHER]),
    "test_responses_stream": lambda: [
        event.model_dump() for event in openai_call(input="Say hello", stream=True)
    ],
    "test_gzip_json_with_async_httpx": models_gzip,
    "test_ndjson_stream_with_httpx2": ndjson_chat,
}


def replayed(path: Path) -> Any:
    import llmcassette

    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        value = ASSEMBLE[path.stem]()
    assert cassette.all_played
    return value


def take_the_unknown(name: str, value: Any) -> list[Any]:
    """Remove from what an SDK assembled the fields a synthesized terminator leaves empty
    (in its last event or object); returns them."""
    if name == "test_responses_stream.jsonl":
        return [value[-1]["response"].pop("usage")]
    if name == "test_ndjson_stream_with_httpx2.jsonl":
        return [value[-1].pop(field, None) for field in LEFT_EMPTY[name]]
    return []


def test_every_sdk_assembles_from_the_healed_copy_what_it_did_from_the_original(
    tmp_path: Path,
) -> None:
    """The issue's bar, through the real clients: openai (chat, streamed chat with usage and
    with a tool call, Responses), anthropic (plain, streamed with the final message),
    httpx2 (Ollama NDJSON), httpx (gzip JSON)."""
    assert sorted(ASSEMBLE) == sorted(path.stem for path in CASSETTES)
    for original in CASSETTES:
        copy = tmp_path / original.parent.name / original.name
        copy.parent.mkdir(exist_ok=True)
        text = original.read_text()
        copy.write_text(broken(text, remove_terminator='"type":"event"' in text))
        code, document = heal(str(copy))
        assert code == 0, document
        want, got = replayed(original), replayed(copy)
        assert take_the_unknown(original.name, got) == [None] * len(
            take_the_unknown(original.name, want)
        ), original.name
        assert got == want, original.name


def test_healed_cassettes_replay_through_the_real_sdks(pytester: pytest.Pytester) -> None:
    """The example tests pass against healed copies of broken cassettes."""
    conftest = (EXAMPLES / "conftest.py").read_text()
    pytester.makeconftest(conftest.replace("resolve().parents[2]", "resolve().parent"))
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "markers = real_provider: needs a real provider\n"
    )
    modules = sorted({path.parent.name for path in CASSETTES})
    for module in modules:
        shutil.copy(EXAMPLES / f"{module}.py", pytester.path / f"{module}.py")
    for original in CASSETTES:
        target = pytester.path / "cassettes" / original.parent.name / original.name
        target.parent.mkdir(parents=True, exist_ok=True)
        streamed = '"type":"event"' in original.read_text()
        target.write_text(broken(original.read_text(), remove_terminator=streamed))
    code, document = heal(str(pytester.path / "cassettes"))
    assert code == 0, document
    assert all(result["repairs"] for result in document["results"])
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-W", "error::llmcassette.errors.LlmCassetteWarning"
    )
    result.assert_outcomes(passed=len(CASSETTES))


def test_check_says_which_findings_heal_can_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = ROOT / "cassettes" / "test_openai_sdk" / "test_chat_stream.jsonl"
    fixable, unfixable = tmp_path / "chat.jsonl", tmp_path / "responses.jsonl"
    fixable.write_text(broken(chat.read_text(), remove_terminator=True))
    unfixable.write_text(cut_responses_stream(6))  # cut inside its answer
    assert main(["check", "--json", str(tmp_path)]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    marks = {Path(found["file"]).name: found["fixable_by"] for found in findings}
    assert marks == {"chat.jsonl": "heal", "responses.jsonl": None}
    assert main(["check", str(fixable)]) == 1
    assert f"fixable by heal: llmcassette heal {fixable}" in capsys.readouterr().out


def test_a_gemini_json_array_stored_whole_becomes_its_events(tmp_path: Path) -> None:
    # Earlier releases stored Gemini's streamed JSON array (no alt=sse) as one text body.
    import httpx

    import llmcassette
    from llmcassette.testing import LocalProvider

    ask = {"contents": [{"role": "user", "parts": [{"text": "heal me"}]}]}
    with LocalProvider() as provider:
        provider.behaviour.events = 3
        url = f"{provider.gemini_base_url}/v1beta/models/m:streamGenerateContent"
        with (
            llmcassette.use_cassette(tmp_path / "new.jsonl", record_mode="once"),
            httpx.stream("POST", url, json=ask, headers={"x-goog-api-key": "k"}) as reply,
        ):
            body = reply.read()
    recorded = records((tmp_path / "new.jsonl").read_text())
    old = [*recorded[:2], {**recorded[2], "body": {"text": body.decode()}}, recorded[-1]]
    old[-1] = {**old[-1], "events": 0}
    copy = tmp_path / "old.jsonl"
    copy.write_text("".join(json.dumps(line) + "\n" for line in old))
    code, document = heal(str(copy))
    assert code == 0
    kinds = [repair["kind"] for repair in document["results"][0]["repairs"]]
    assert kinds == ["body-decoded", "end-count-fixed"]
    healed = records(copy.read_text())
    assert healed[2]["body"] == {"stream": "json-array"}

    def untimed(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "t"} for e in lines if e.get("type") == "event"]

    assert untimed(healed) == untimed(recorded)
    with (
        llmcassette.use_cassette(copy, record_mode="none"),
        httpx.stream("POST", url, json=ask, headers={"x-goog-api-key": "k"}) as reply,
    ):
        assert len(list(reply.iter_raw())) == 3


def test_a_cassette_heal_cannot_read_keeps_its_lc101_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A defect heal has no repair for (a status stored as a string) is not "0 healed"."""
    original = ROOT / "cassettes" / "test_openai_sdk" / "test_chat_stream.jsonl"
    copy = tmp_path / "wrong_type.jsonl"
    copy.write_text(original.read_text().replace('"status":200', '"status":"200"', 1))
    before = copy.read_bytes()
    code, document = heal(str(copy))
    assert code == 2
    (error,) = document["errors"]
    assert (error["code"], error["file"], error["line"]) == ("LC101 cassette-format", str(copy), 3)
    assert "'status' must be int" in error["message"]
    assert main(["heal", str(copy)]) == 2
    assert "wrong_type.jsonl:3: response line: field 'status' must be int" in (
        capsys.readouterr().err
    )
    assert copy.read_bytes() == before
    assert not copy.with_name(copy.stem + ".heal.log").exists()


def test_a_folder_without_cassettes_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["heal", str(tmp_path)]) == 0
    assert f"llmcassette heal: no cassettes found in {tmp_path}" in capsys.readouterr().err


def test_a_log_that_cannot_be_written_leaves_the_cassette_as_it_was(tmp_path: Path) -> None:
    # The cassette was healed, then the log failed: "not changed", yet it had changed, and
    # its repairs were in no log.
    original = ROOT / "cassettes" / "test_openai_sdk" / "test_chat_stream.jsonl"
    copy = tmp_path / original.name
    copy.write_text(broken(original.read_text(), remove_terminator=True))
    before = copy.read_bytes()
    folder = tmp_path / "logs"
    folder.mkdir()
    code, document = heal("--log", str(folder), str(copy))
    assert code == 2
    (error,) = document["errors"]
    assert error["code"] == "LC002 cannot-write"
    assert error["file"] == str(copy)
    assert f"cannot write the heal log {folder}" in error["message"]
    assert error["message"].endswith("; not changed")
    assert document["results"] == []
    assert copy.read_bytes() == before
    assert list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", original.name]
