"""``llmcassette heal``: hand-broken copies of the project's cassettes come back whole.

Every cassette in ``cassettes/`` is broken the ways the issue names (an event duplicated,
the stream terminator removed, the end line's count changed), healed, and then replayed by
the project's own example tests (tests/examples, the real openai, anthropic and httpx
clients) in a pytester run. An intact cassette is left byte for byte as it was.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from llmcassette.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = sorted((ROOT / "cassettes").glob("*/*.jsonl"))
EXAMPLES = ROOT / "tests" / "examples"
# Streams whose terminator carries what was recorded (the whole response; the last NDJSON
# object with its counts): heal must refuse to make it up.
NO_HONEST_TERMINATOR = {"test_responses_stream.jsonl", "test_ndjson_stream_with_httpx2.jsonl"}


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
def test_a_broken_copy_is_healed_and_logged(original: Path, tmp_path: Path) -> None:
    copy = tmp_path / original.name
    text = original.read_text()
    streamed = any(record.get("type") == "event" for record in records(text))
    honest = original.name not in NO_HONEST_TERMINATOR
    copy.write_text(broken(text, remove_terminator=streamed and honest))
    code, document = heal(str(copy))
    assert code == 0, document
    kinds = [repair["kind"] for repair in document["results"][0]["repairs"]]
    expected = ["end-count-fixed"]
    if streamed:
        expected.insert(0, "duplicate-event-removed")
        if honest:
            expected.insert(1, "terminator-synthesized")
    assert kinds == expected

    healed, recorded = records(copy.read_text()), records(text)
    assert healed[0].pop("healed")["repairs"] == dict.fromkeys(expected, 1)
    if streamed and honest:  # the synthesized terminator is the recorded one, marked
        synthesized = healed[-2]
        assert synthesized.pop("synthesized") == "heal"
        synthesized.pop("t"), recorded[-2].pop("t")
    assert healed == recorded

    log = copy.with_name(original.stem + ".heal.log")
    (entry,) = records(log.read_text())
    assert entry["format"] == "llmcassette-heal-log"
    assert entry["file"] == str(copy)
    assert [repair["kind"] for repair in entry["repairs"]] == expected
    assert document["results"][0]["log"] == str(log)


@pytest.mark.parametrize(
    "name", sorted(NO_HONEST_TERMINATOR), ids=lambda name: name.removesuffix(".jsonl")
)
def test_a_terminator_that_holds_data_is_not_made_up(name: str, tmp_path: Path) -> None:
    (original,) = [path for path in CASSETTES if path.name == name]
    copy = tmp_path / name
    copy.write_text(broken(original.read_text(), remove_terminator=True))
    before = copy.read_bytes()
    code, document = heal(str(copy))
    assert code == 2
    (error,) = document["errors"]
    assert error["code"] == "LC701 cannot-heal"
    assert error["file"] == str(copy)
    assert "record the cassette again" in error["how_to_fix"]
    assert copy.read_bytes() == before
    assert not copy.with_name(copy.stem + ".heal.log").exists()


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
        streamed = '"type": "event"' in original.read_text()
        honest = original.name not in NO_HONEST_TERMINATOR
        target.write_text(broken(original.read_text(), remove_terminator=streamed and honest))
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
    responses = ROOT / "cassettes" / "test_openai_sdk" / "test_responses_stream.jsonl"
    fixable, unfixable = tmp_path / "chat.jsonl", tmp_path / "responses.jsonl"
    fixable.write_text(broken(chat.read_text(), remove_terminator=True))
    unfixable.write_text(broken(responses.read_text(), remove_terminator=True))
    assert main(["check", "--json", str(tmp_path)]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    marks = {Path(found["file"]).name: found["fixable_by"] for found in findings}
    assert marks == {"chat.jsonl": "heal", "responses.jsonl": None}
    assert main(["check", str(fixable)]) == 1
    assert f"fixable by heal: llmcassette heal {fixable}" in capsys.readouterr().out
