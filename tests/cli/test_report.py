"""`llmcassette report`: per-cassette tokens equal the recorded usage fields; --json follows
the shipped schema; the terminal table fits 100 columns; --markdown for CI summaries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from _cli_support import Record, cli

from llmcassette.cli.main import main
from llmcassette.cli.tree_report import schema
from llmcassette.redact.rules import RULES_VERSION

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"
CORPUS = ROOT / ".." / "shared" / "corpus" / "pydantic-ai"

# Each provider's names of the input and output token counts in its usage object.
TOKEN_FIELDS = [
    ("prompt_tokens", "completion_tokens"),  # OpenAI Chat Completions
    ("input_tokens", "output_tokens"),  # OpenAI Responses, Anthropic Messages
    ("promptTokenCount", "candidatesTokenCount"),  # Gemini usageMetadata
    ("inputTokens", "outputTokens"),  # Bedrock Converse
    ("prompt_eval_count", "eval_count"),  # Ollama's final NDJSON object
]


def _usages(payload: Any) -> Iterator[dict[str, Any]]:
    """The usage objects of one body or event: its own ``usage``/``usageMetadata``, or the
    one of the message (Anthropic's message_start), response (Responses' events) or
    metadata (Bedrock) it carries; an Ollama object is its own. Usage nested deeper (Groq's
    per-model ``usage_breakdown``) is part of the top-level count, not added again."""
    if isinstance(payload, list):  # a Gemini stream kept as one JSON array
        for item in payload:
            yield from _usages(item)
        return
    if not isinstance(payload, dict):
        return
    if "eval_count" in payload:
        yield payload
    for holder in (
        payload,
        payload.get("message"),
        payload.get("response"),
        payload.get("metadata"),
    ):
        if isinstance(holder, dict):
            for key in ("usage", "usageMetadata"):
                if isinstance(holder.get(key), dict):
                    yield holder[key]


def _parsed(line: dict[str, Any]) -> Any:
    """The JSON a body or event line holds: ``json``/``data``, or text that is JSON."""
    for key in ("json", "data"):
        if key in line:
            value = line[key]
            return json.loads(value) if isinstance(value, str) else value
    try:
        return json.loads(line.get("text") or "null")
    except ValueError:  # an SSE comment, a plain-text body
        return None


def recorded_tokens(path: Path) -> tuple[int, int]:
    """Tokens in and out of a cassette, read from its lines without llmcassette: per
    interaction, the last count recorded for each usage field (a stream's later usage
    replaces the earlier: Anthropic's message_delta updates message_start's, Gemini's last
    chunk holds the final counts)."""
    total_in = total_out = 0
    interactions: list[list[Any]] = []
    for line in path.read_text().splitlines()[1:]:
        record = json.loads(line)
        if record["type"] == "request":
            interactions.append([])
        elif record["type"] == "response":
            interactions[-1].append(_parsed(record.get("body") or {}))
        elif record["type"] == "event":
            interactions[-1].append(_parsed(record))
    for payloads in interactions:
        usages = [usage for payload in payloads for usage in _usages(payload)]
        for input_key, output_key in TOKEN_FIELDS:
            inputs = [u[input_key] for u in usages if isinstance(u.get(input_key), int)]
            outputs = [u[output_key] for u in usages if isinstance(u.get(output_key), int)]
            if inputs or outputs:
                total_in += inputs[-1] if inputs else 0
                total_out += outputs[-1] if outputs else 0
                break
    return total_in, total_out


def _report(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["report", "--json", *map(str, paths)])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == document["exit_code"]
    jsonschema.validate(document, schema())
    return document


def _assert_tokens_match(document: dict[str, Any]) -> int:
    """Each cassette's tokens equal the independent sum; the number that hold any."""
    with_tokens = 0
    for entry in document["cassettes"]:
        expected = recorded_tokens(Path(entry["file"]))
        assert (entry["tokens_in"], entry["tokens_out"]) == expected, entry["file"]
        with_tokens += expected != (0, 0)
    totals = document["totals"]
    assert totals["tokens_in"] == sum(e["tokens_in"] for e in document["cassettes"])
    assert totals["tokens_out"] == sum(e["tokens_out"] for e in document["cassettes"])
    return with_tokens


def test_the_committed_cassettes_tokens_equal_their_usage_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = _report([CASSETTES], capsys)
    assert document["exit_code"] == 0
    assert document["totals"]["cassettes"] == len(list(CASSETTES.rglob("*.jsonl")))
    assert _assert_tokens_match(document) >= 5
    streamed = {Path(e["file"]).name: e for e in document["cassettes"]}
    anthropic = streamed["test_messages_stream.jsonl"]
    assert anthropic["streamed"] is True
    assert anthropic["models"] == ["claude-haiku-4-5"]
    assert anthropic["test"] == "test_messages_stream"
    assert anthropic["redaction_version"] == RULES_VERSION  # recorded by the current rules


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared pydantic-ai corpus is not here")
def test_the_converted_shared_corpus_tokens_equal_their_usage_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = [p for p in sorted(CORPUS.rglob("*.yaml")) if "- request:" in p.read_text()]
    assert main(["convert", "--out", str(tmp_path), *map(str, sources)]) == 0
    capsys.readouterr()
    document = _report([tmp_path], capsys)
    assert document["totals"]["cassettes"] > 50
    assert _assert_tokens_match(document) >= 40  # 48 of the corpus record usage
    assert document["totals"]["tokens_in"] > 0
    assert len({m for e in document["cassettes"] for m in e["models"]}) > 3


def test_orphans_tests_and_problems_are_reported(tmp_path: Path, record: Record) -> None:
    (tmp_path / "test_mod.py").write_text("def test_kept():\n    pass\n")
    folder = tmp_path / "cassettes" / "test_mod"
    record(folder / "test_kept.jsonl", ("Hi",))
    record(folder / "test_gone.jsonl", ("Hi", "Yo"))
    result = cli("report", "--json", tmp_path / "cassettes")
    assert result.returncode == 1, result.stderr  # the orphan is a problem it reports
    document = json.loads(result.stdout)
    jsonschema.validate(document, schema())
    ((code, kind, file),) = [(f["code"], f["kind"], f["file"]) for f in document["findings"]]
    assert (code, kind, file) == ("LC605 orphan", "orphan", str(folder / "test_gone.jsonl"))
    assert document["exit_code"] == 1
    by_name = {Path(e["file"]).name: e for e in document["cassettes"]}
    assert by_name["test_gone.jsonl"]["orphan"] is True
    assert by_name["test_gone.jsonl"]["problems"] == 1
    assert by_name["test_gone.jsonl"]["interactions"] == 2
    assert by_name["test_kept.jsonl"]["orphan"] is False
    assert document["orphans"] == [str(folder / "test_gone.jsonl")]
    assert document["totals"]["interactions"] == 3

    text = cli("report", tmp_path / "cassettes", env={"COLUMNS": "100"})
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert all(len(line) <= 100 for line in lines), lines
    assert "\x1b[" not in text.stdout  # no colour when not a terminal
    assert lines[0].split()[:3] == ["cassette", "int", "model"]
    assert "2 cassette(s), 3 interaction(s)" in text.stdout
    assert "orphans:" in lines

    markdown = cli("report", "--markdown", tmp_path / "cassettes")
    assert markdown.returncode == 1
    assert markdown.stdout.startswith("| cassette | interactions |")
    assert "| test_kept |" in markdown.stdout
    assert "Orphans: `" in markdown.stdout

    (folder / "test_gone.jsonl").unlink()
    assert cli("report", tmp_path / "cassettes").returncode == 0  # nothing wrong: exit 0


def test_an_unreadable_cassette_is_an_error_and_the_rest_is_reported(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    record(tmp_path / "good.jsonl", ("Hi",))
    (tmp_path / "broken.jsonl").write_text('{"format": "llmcassette"\n')
    document = _report([tmp_path], capsys)
    assert document["exit_code"] == 2
    assert [Path(e["file"]).name for e in document["cassettes"]] == ["good.jsonl"]
    assert document["errors"][0]["file"] == str(tmp_path / "broken.jsonl")
    assert document["totals"]["problems"] == 1  # its format problem, as check counts it


def test_report_counts_a_secret_as_check_does(tmp_path: Path) -> None:
    """``report`` counts every problem ``check`` reports, secrets included (exit 1)."""
    key = "sk-proj-" + "Ab3" * 16  # in pieces, so secret scanners leave this file alone
    path = tmp_path / "leak.jsonl"
    path.write_text(
        '{"format":"llmcassette","format_version":2}\n'
        '{"type":"request","method":"GET","uri":"https://example.com/",'
        f'"headers":{{"x-note":"{key}"}}}}\n'
        '{"type":"response","status":200,"body":{"json":{"ok":true}}}\n'
        '{"type":"end","events":0}\n'
    )
    result = cli("report", "--json", tmp_path)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert [f["code"] for f in document["findings"]] == ["LC602 secret"]
    assert document["cassettes"][0]["problems"] == 1
    assert key not in result.stdout


def _vcrpy_interaction(body: str, headers: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "request": {
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
            "body": '{"model": "gpt-4o-mini", "stream": true}',
            "headers": {"authorization": ["Bearer " + "sk-proj-" + "Ab3" * 16]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": headers,
            "body": {"string": body},
        },
    }


def test_vcrpy_cassettes_are_reported_with_their_problems_and_named_to_convert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder of vcrpy cassettes is no empty report: each is an entry, read as convert
    would write it, with the secrets check finds in it, and is listed to be converted."""
    key = "sk-proj-" + "Ab3" * 16  # in pieces, so secret scanners leave this file alone
    chunks = [
        {"model": "gpt-4o-mini", "choices": [{"delta": {"content": "Hi"}}]},
        {
            "model": "gpt-4o-mini",
            "choices": [],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2},
        },
    ]
    stream = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    headers = {
        "content-type": ["text/event-stream"],
        "date": ["Mon, 05 Jan 2026 10:00:00 GMT"],
    }
    good = tmp_path / "test_a.yaml"
    good.write_text(yaml.safe_dump({"interactions": [_vcrpy_interaction(stream, headers)]}))
    cut = tmp_path / "test_b.yaml"  # cut off after its request: convert refuses it
    cut.write_text(
        yaml.safe_dump({"interactions": [{"request": _vcrpy_interaction("", {})["request"]}]})
    )

    document = _report([tmp_path], capsys)
    assert document["exit_code"] == 1
    entries = {Path(e["file"]).name: e for e in document["cassettes"]}
    assert set(entries) == {"test_a.yaml", "test_b.yaml"}
    a, b = entries["test_a.yaml"], entries["test_b.yaml"]
    assert (a["format"], a["format_version"], a["redaction_version"]) == ("vcrpy", None, None)
    assert (a["interactions"], a["models"], a["streamed"]) == (1, ["gpt-4o-mini"], True)
    assert (a["tokens_in"], a["tokens_out"]) == (7, 2)
    assert a["created_at"] == "2026-01-05T10:00:00Z"  # when it was recorded, not converted
    assert a["problems"] == 1  # the key in its request
    assert (b["format"], b["interactions"], b["problems"]) == ("vcrpy", 1, 2)
    kinds = sorted((Path(f["file"]).name, f["kind"]) for f in document["findings"])
    assert kinds == [
        ("test_a.yaml", "secret"),
        ("test_b.yaml", "format"),
        ("test_b.yaml", "secret"),
    ]
    assert document["totals"]["problems"] == 3
    assert document["vcrpy"] == [str(good), str(cut)]

    assert main(["report", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "2 cassette(s), 2 interaction(s), 7 tokens in, 2 tokens out" in text
    note = "vcrpy cassettes, read as convert would write them (llmcassette convert PATH):"
    assert text.splitlines()[-3:] == [note, f"  {good}", f"  {cut}"]
    assert main(["report", "--markdown", str(tmp_path)]) == 1
    assert f"{note[:-1]}: `{good}`, `{cut}`" in capsys.readouterr().out

    page = tmp_path / "page.html"
    assert main(["report", "--html", str(page), str(tmp_path)]) == 1
    html = page.read_text(encoding="utf-8")
    assert key not in html  # shown as convert would write it: redacted
    assert f"a vcrpy cassette, to convert: llmcassette convert {good}" in html
    assert "<REDACTED:" in html or "&lt;REDACTED:" in html


def test_problems_of_files_that_are_no_cassette_count_as_check_counts_them(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    """An overrides sidecar that does not validate and a killed save's temporary file are
    no rows, but their problems count: report said "0 problem(s)", exit 0, where check
    exited 1."""
    import subprocess
    import sys

    from llmcassette._vcr import tempfiles

    cassette = record(tmp_path / "c.jsonl", ("Hi",))
    sidecar = tmp_path / "c.overrides.json"
    sidecar.write_text('{"bogus": 1}\n')
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    temp = tmp_path / f".c.jsonl{tempfiles.MARKER}{dead.pid}-abc123"
    temp.write_bytes(b"half a cassette")

    assert main(["check", "--json", str(tmp_path)]) == 1
    checked = sorted(
        (f["file"], f["kind"]) for f in json.loads(capsys.readouterr().out)["findings"]
    )
    assert checked == [(str(temp), "stale-temp"), (str(sidecar), "overrides")]

    document = _report([tmp_path], capsys)
    assert document["exit_code"] == 1
    assert sorted((f["file"], f["kind"]) for f in document["findings"]) == checked
    assert [e["file"] for e in document["cassettes"]] == [str(cassette)]
    assert document["cassettes"][0]["problems"] == 0
    assert sorted(document["others"], key=lambda o: o["file"]) == [
        {"file": str(temp), "problems": 1},
        {"file": str(sidecar), "problems": 1},
    ]
    assert document["totals"]["problems"] == 2

    assert main(["report", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "1 cassette(s), 1 interaction(s)" in text
    assert ", 2 problem(s)" in text
    others = text.split("other files with problems (llmcassette check PATH says what is wrong):")
    # A long folder is cut to fit 100 columns.
    assert f"{sidecar.name}: 1 problem(s)" in others[1]
    assert f"{temp.name}: 1 problem(s)" in others[1]
    assert main(["report", "--markdown", str(tmp_path)]) == 1
    assert f"`{sidecar}` (1)" in capsys.readouterr().out

    page = tmp_path / "page.html"
    assert main(["report", "--html", str(page), str(tmp_path)]) == 1
    html = page.read_text(encoding="utf-8")
    assert '<section class="cassette other" id="o' in html
    assert "<b>LC501 overrides</b>" in html
    assert "<b>LC606 stale-temp</b>" in html


VCRPY_WITH_URI = """\
interactions:
- request:
    body: '{{"model": "gpt-4o"}}'
    headers:
      x-api-key:
      - {header}
    method: POST
    uri: {uri}
  response:
    body:
      string: '{{"id": "c1"}}'
    headers:
      Content-Type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""


def test_a_url_whose_password_has_brackets_is_reported_not_a_traceback(tmp_path: Path) -> None:
    """``urlsplit`` refuses "[...]" that is no IPv6 address, quoting what is inside: report
    and convert of such a vcrpy cassette went down with a traceback that printed the
    password of ``https://bob:x[password]@host``. The URL is read, its userinfo redacted."""
    password = "Zq8Secr3tPassw0rd"
    cassette = tmp_path / "c.yaml"
    uri = f'"https://bob:x[{password}]@api.openai.com/v1/chat/completions"'
    cassette.write_text(VCRPY_WITH_URI.format(header="plain", uri=uri))
    page = tmp_path / "page.html"
    for command in (
        ("report", tmp_path),
        ("report", "--json", tmp_path),
        ("report", "--html", page, tmp_path),
        ("convert", "--out", tmp_path / "out", cassette),
    ):
        result = cli(*command)
        said = result.stdout + result.stderr
        assert "Traceback" not in said, said
        assert password not in said, command
    assert password not in page.read_text()
    assert password not in (tmp_path / "out" / "c.jsonl").read_text()


def test_a_yaml_tag_is_not_quoted_in_an_error(tmp_path: Path) -> None:
    """An unquoted value that begins with ``!`` is a YAML tag, which PyYAML cannot
    construct and names in its error: check, report and scan say the file is not valid
    YAML, on its line, without the tag (a credential written unquoted)."""
    key = "Hk82jfK2nsPq9xWm4tLz"
    cassette = tmp_path / "c.yaml"
    cassette.write_text(VCRPY_WITH_URI.format(header="!" + key, uri="https://x.example/y"))
    page = tmp_path / "page.html"
    for command in (
        ("check", cassette),
        ("check", "--json", tmp_path),
        ("scan", cassette),
        ("report", "--json", tmp_path),
        ("report", "--html", page, tmp_path),
    ):
        result = cli(*command)
        said = result.stdout + result.stderr
        assert "not valid YAML" in said
        assert "c.yaml:6" in said.replace('"line": 6', "c.yaml:6")
        assert key not in said, command
    assert not page.exists() or key not in page.read_text()


def test_a_url_whose_password_has_brackets_loads_and_diffs_without_a_traceback(
    tmp_path: Path,
) -> None:
    """The same URL loaded for replay (every loaded interaction is asked whether it is an
    SDK's housekeeping call), described when nothing matches, and paired by ``diff``."""
    import llmcassette

    password = "Zq8Secr3tPassw0rd"
    cassette = tmp_path / "c.yaml"
    uri = f'"https://bob:x[{password}]@api.openai.com/v1/chat/completions"'
    try:
        urlsplit(json.loads(uri))
    except ValueError:
        pass
    else:  # Python 3.10's urllib: the URL reads, so vcrpy and the loader take it
        pytest.skip("this Python's urlsplit accepts brackets outside the host")
    cassette.write_text(VCRPY_WITH_URI.format(header="plain", uri=uri))
    # vcrpy cannot read it (its request parses the URL); the error says so, not what.
    with (
        pytest.raises(llmcassette.CassetteFormatError) as unreadable,
        llmcassette.use_cassette(cassette, record_mode="none"),
    ):
        pass
    assert password not in str(unreadable.value)
    assert "ValueError: a value in it is in no shape vcrpy reads" in str(unreadable.value)
    converted = tmp_path / "out"
    assert cli("convert", "--out", converted, cassette).returncode == 0
    # A .jsonl edited by hand to hold it: loaded, left unplayed, compared with itself.
    edited = converted / "c.jsonl"
    lines = edited.read_text().splitlines()
    request = json.loads(lines[1])
    request["uri"] = json.loads(uri)
    lines[1] = json.dumps(request)
    edited.write_text("\n".join(lines) + "\n")
    with (
        pytest.raises(llmcassette.CassetteFormatError) as refused,
        llmcassette.use_cassette(edited, record_mode="none"),
    ):
        pass
    assert refused.value.line == 2
    assert password not in str(refused.value)
    assert "field 'uri' is not a URL that can be read" in str(refused.value)
    result = cli("diff", edited, edited)
    assert result.returncode == 2
    assert "Traceback" not in result.stdout + result.stderr
    assert password not in result.stdout + result.stderr
    # Asked of a live request (a mismatch, an unused interaction), the URL is not shown.
    from types import SimpleNamespace

    from llmcassette.matching.report import describe_request

    live = SimpleNamespace(method="POST", uri=json.loads(uri), body=b"", headers={})
    assert describe_request(live) == "POST (a URL that cannot be parsed)"
