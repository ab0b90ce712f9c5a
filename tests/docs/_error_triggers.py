"""One way to provoke each error code for real, for the examples of docs/errors.md.

``TRIGGERS[code]`` makes the error happen in the current directory (a fresh one): it writes
the broken cassette, runs the command or enters the ``use_cassette`` block, and returns what
llmcassette said: ``str(error)`` of the exception it raised, or everything a command printed.
``test_error_catalogue.py`` compares that with the example in the code's catalogue entry.

A trigger uses the public API or the command line wherever it can. Where the cause cannot
be produced on any machine (an old vcrpy installed, a format version that no release
needed to migrate yet, a write the file system refuses to a root user), it changes only
that fact, as narrowly as it can, and says so; the message is still built by the code.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

import llmcassette
from llmcassette import FORMAT_VERSION, faults
from llmcassette.cli.main import main as cli_main

Trigger = Callable[[pytest.MonkeyPatch], str]
TRIGGERS: dict[str, Trigger] = {}

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
SSE = {"content-type": "text/event-stream"}


def trigger(number: str) -> Callable[[Trigger], Trigger]:
    """Register ``function`` as the trigger of the code whose number is ``number``."""

    def register(function: Trigger) -> Trigger:
        TRIGGERS[number] = function
        return function

    return register


def command(*args: str) -> str:
    """Run ``llmcassette ARGS`` in this process; what it printed, stdout and stderr."""
    output = io.StringIO()
    with (
        contextlib.redirect_stdout(output),
        contextlib.redirect_stderr(output),
        contextlib.suppress(SystemExit),
    ):
        cli_main(list(args))
    return output.getvalue()


@contextlib.contextmanager
def raised() -> Iterator[list[str]]:
    """Collects ``str(error)`` of the llmcassette error raised in the block (which must raise)."""
    said: list[str] = []
    try:
        yield said
    except llmcassette.LlmCassetteError as error:
        said.append(str(error))
    else:
        raise AssertionError("the trigger raised no llmcassette error")


def write(path: str, *records: dict[str, Any]) -> Path:
    """A cassette (or any JSON Lines file) of ``records`` at ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return target


def header(
    created_at: str = "2026-12-01T04:22:01Z", version: int = FORMAT_VERSION
) -> dict[str, Any]:
    return {"format": "llmcassette", "format_version": version, "created_at": created_at}


def delta(n: int) -> dict[str, Any]:
    return {"index": 0, "delta": {"content": f"w{n} "}}


def chat_stream(events: int, *, done: bool = True) -> list[dict[str, Any]]:
    """The lines of an OpenAI chat stream interaction: ``events`` chunks, then ``[DONE]``."""
    chunks: list[dict[str, Any]] = [
        {"type": "event", "data": {"object": "chat.completion.chunk", "choices": [delta(n)]}}
        for n in range(events)
    ]
    if done:
        chunks.append({"type": "event", "text": "[DONE]"})
    return [
        {"type": "request", "method": "POST", "uri": OPENAI_CHAT, "body": {"json": {"a": 1}}},
        {"type": "response", "status": 200, "headers": SSE, "body": {"stream": "sse"}},
        *chunks,
        {"type": "end", "events": len(chunks)},
    ]


def get(uri: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "request", "method": "GET", "uri": uri},
        {"type": "response", "status": 200, "body": {"json": answer}},
        {"type": "end", "events": 0},
    ]


def days_ago(days: int) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- LC0xx: the command line ----------------------------------------------------------------


@trigger("LC001")
def usage(monkeypatch: pytest.MonkeyPatch) -> str:
    return command("check", "--bogus", ".")


@trigger("LC002")
def cannot_write(monkeypatch: pytest.MonkeyPatch) -> str:
    # Permissions do not stop root, who runs CI containers: a file size limit of 0 makes
    # the write fail for every user (EFBIG), in a child process so that only it is limited.
    # A secret in the body, so that redact has something to write back.
    key = "sk-proj-" + "a" * 40
    write("tests/cassettes/c.jsonl", header(), *get("https://example.com/", {"key": key}))
    script = textwrap.dedent(
        """
        import resource, signal, sys
        from llmcassette.cli.main import main
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        sys.exit(main(sys.argv[1:]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "redact", "tests/cassettes/c.jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout + done.stderr


# --- LC1xx: reading a cassette --------------------------------------------------------------


@trigger("LC101")
def cassette_format(monkeypatch: pytest.MonkeyPatch) -> str:
    write(
        "broken.jsonl",
        {"format": "llmcassette", "format_version": 1},
        {"type": "request", "method": "GET", "uri": "https://example.com/"},
        {"type": "response", "reason": "OK"},
        {"type": "end", "events": 0},
    )
    with raised() as said, llmcassette.use_cassette("broken.jsonl", record_mode="none"):
        pass
    return said[0]


@trigger("LC102")
def cassette_version(monkeypatch: pytest.MonkeyPatch) -> str:
    write("future.jsonl", {"format": "llmcassette", "format_version": FORMAT_VERSION + 1})
    with raised() as said, llmcassette.use_cassette("future.jsonl", record_mode="none"):
        pass
    return said[0]


@trigger("LC103")
def unreadable(monkeypatch: pytest.MonkeyPatch) -> str:
    Path("tests/cassettes").mkdir(parents=True)
    return command("check", "tests/cassettes/c.jsonl")


@trigger("LC104")
def empty_file(monkeypatch: pytest.MonkeyPatch) -> str:
    Path("tests/cassettes").mkdir(parents=True)
    Path("tests/cassettes/c.jsonl").write_text("\n")
    return command("check", "tests/cassettes/c.jsonl")


VCRPY_REQUEST = "request:\n  method: GET\n  uri: https://example.test/logo.png\n  body: null\n"


@trigger("LC110")
def unreadable_interaction(monkeypatch: pytest.MonkeyPatch) -> str:
    Path("tests/cassettes").mkdir(parents=True)
    Path("tests/cassettes/c.yaml").write_text(
        "interactions:\n- "
        + VCRPY_REQUEST.replace("\n  ", "\n    ")
        + "  response:\n    headers: {}\n    status_code: 200\n    weird: 1\nversion: 1\n"
    )
    return command("convert", "tests/cassettes/c.yaml")


@trigger("LC111")
def binary_body_in_json(monkeypatch: pytest.MonkeyPatch) -> str:
    path = write(
        "tests/cassettes/c.jsonl",
        header(),
        {"type": "request", "method": "GET", "uri": "https://example.test/logo.png"},
        {"type": "response", "status": 200, "body": {"base64": "iVBORw0KGgo="}},
        {"type": "end", "events": 0},
    )
    return command("convert", "--to", "vcrpy-json", str(path))


# --- LC2xx: recording -----------------------------------------------------------------------


@trigger("LC201")
def secret_leak(monkeypatch: pytest.MonkeyPatch) -> str:
    # The check every save makes last, on the text about to be written: here a cassette
    # whose authorization header the redactor (not involved here) did not replace.
    from llmcassette.redact import scan
    from llmcassette.redact.rules import Rules

    text = (
        json.dumps(header())
        + "\n"
        + json.dumps(
            {
                "type": "request",
                "method": "GET",
                "uri": "https://example.com/",
                "headers": {"authorization": "Bearer sk-proj-" + "a" * 40},
            }
        )
        + "\n"
    )
    with raised() as said:
        scan.check_text(Rules(None, {}), text, "c.jsonl")
    return said[0]


@trigger("LC202")
def incomplete_stream(monkeypatch: pytest.MonkeyPatch) -> str:
    write("c.jsonl", header(), *chat_stream(3, done=False))
    with (
        raised() as said,
        llmcassette.use_cassette("c.jsonl", record_mode="none", incomplete_streams="error"),
        httpx2.stream("POST", OPENAI_CHAT, json={"a": 1}) as response,
    ):
        response.read()
    return said[0]


@trigger("LC203")
def cassette_lock(monkeypatch: pytest.MonkeyPatch) -> str:
    # Another process holds the lock of c.jsonl; the save here gives up after 0.5 s (60 s
    # by default: durations are normalized when compared).
    from llmcassette._vcr import persister

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from llmcassette._vcr.persister import locked\n"
            "with locked(Path('c.jsonl')):\n"
            "    print('held', flush=True); time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"  # it holds the lock now
        with raised() as said, persister.locked(Path("c.jsonl"), 0.5):
            pass
    finally:
        holder.kill()
        holder.wait()
    return said[0].replace(f"process {holder.pid}", "process 4242")  # a pid varies


# --- LC3xx: replaying -----------------------------------------------------------------------


@trigger("LC302")
def unused_interactions(monkeypatch: pytest.MonkeyPatch) -> str:
    write(
        "pages.jsonl",
        header(),
        *get("https://example.com/pages/1", {"page": 1}),
        *get("https://example.com/pages/2", {"page": 2}),
    )
    # The same error again when the block ends, where use_cassette checks too.
    with (
        contextlib.suppress(llmcassette.UnusedInteractionsError),
        llmcassette.use_cassette("pages.jsonl", record_mode="none") as cassette,
    ):
        httpx2.get("https://example.com/pages/1")
        unused = llmcassette.check_unused(cassette)
    assert unused is not None
    return str(unused)


@trigger("LC303")
def cassette_expired(monkeypatch: pytest.MonkeyPatch) -> str:
    write(
        "tests/cassettes/test_chat/test_weather.jsonl",
        header("2020-01-01T00:00:00Z"),
        *get("https://example.com/", {"k": 1}),
    )
    with (
        raised() as said,
        llmcassette.use_cassette(
            "tests/cassettes/test_chat/test_weather.jsonl",
            record_mode="none",
            max_age="30d",
            expired="fail",
        ),
    ):
        pass
    return said[0]


@trigger("LC304")
def legacy_drift(monkeypatch: pytest.MonkeyPatch) -> str:
    # A cassette as vcrpy writes it: recorded without comparing bodies.
    body = json.dumps({"model": "m", "max_tokens": 8192})
    answer = json.dumps({"id": "x"})
    Path("chat.yaml").write_text(
        textwrap.dedent(
            f"""\
            interactions:
            - request:
                body: '{body}'
                headers: {{}}
                method: POST
                uri: {OPENAI_CHAT}
              response:
                body:
                  string: '{answer}'
                headers:
                  content-type:
                  - application/json
                status:
                  code: 200
                  message: OK
            version: 1
            """
        ),
        encoding="utf-8",
    )
    with (
        warnings.catch_warnings(record=True) as caught,
        llmcassette.use_cassette("chat.jsonl", record_mode="none"),
    ):
        warnings.simplefilter("always")
        httpx2.post(OPENAI_CHAT, json={"model": "m", "max_tokens": 64000})
    drifts = [w.message for w in caught if isinstance(w.message, llmcassette.LlmCassetteWarning)]
    assert len(drifts) == 1, drifts
    return str(drifts[0])


# --- LC4xx: configuration -------------------------------------------------------------------


@trigger("LC401")
def config(monkeypatch: pytest.MonkeyPatch) -> str:
    with raised() as said:
        llmcassette.use_cassette("chat.jsonl", max_age="a month")
    return said[0]


@trigger("LC402")
def incompatible_vcrpy(monkeypatch: pytest.MonkeyPatch) -> str:
    # vcrpy 7.0.0 cannot be installed beside this one: the version check is told it is.
    from llmcassette._vcr import compat

    monkeypatch.setattr(compat, "_version", lambda: (7, 0, 0))
    with raised() as said:
        compat.check.__wrapped__()
    return said[0]


@trigger("LC403")
def overlapping_cassettes(monkeypatch: pytest.MonkeyPatch) -> str:
    import threading

    opened, release = threading.Event(), threading.Event()

    def hold() -> None:
        with llmcassette.use_cassette("agent_a.jsonl", record_mode="all"):
            opened.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    opened.wait(10)
    try:
        with raised() as said, llmcassette.use_cassette("agent_b.jsonl", record_mode="all"):
            pass
    finally:
        release.set()
        thread.join(10)
    return said[0]


# --- LC5xx: overrides and faults ------------------------------------------------------------


@trigger("LC501")
def overrides(monkeypatch: pytest.MonkeyPatch) -> str:
    write("c.jsonl", header(), *get("https://example.com/", {"k": 1}))
    sidecar = {"entries": [{"at": 0}, {"at": 0}, {"at": 0, "status": 700}]}
    Path("c.overrides.json").write_text(json.dumps(sidecar))
    with raised() as said, llmcassette.use_cassette("c.jsonl", record_mode="none"):
        httpx2.get("https://example.com/")
    return said[0]


@trigger("LC502")
def fault(monkeypatch: pytest.MonkeyPatch) -> str:
    write("c.jsonl", header(), *get("https://example.com/", {"k": 1}), *chat_stream(11))
    with llmcassette.use_cassette("c.jsonl", record_mode="none") as cassette:
        httpx2.get("https://example.com/")
        faults.schedule(cassette, faults.cut_stream(500))
        with raised() as said, httpx2.stream("POST", OPENAI_CHAT, json={"a": 1}) as response:
            response.read()
    return said[0]


@trigger("LC503")
def placeholder(monkeypatch: pytest.MonkeyPatch) -> str:
    write(
        "c.jsonl",
        header(),
        *get("https://example.com/", {"k": 1}),
        {
            "type": "request",
            "method": "POST",
            "uri": "https://example.com/echo",
            "body": {"json": {"say": "hi"}},
        },
        {"type": "response", "status": 200, "body": {"text": "{{fromRequest:model (.*)}}"}},
        {"type": "end", "events": 0},
    )
    with llmcassette.use_cassette("c.jsonl", record_mode="none"):
        httpx2.get("https://example.com/")
        with raised() as said:
            httpx2.post("https://example.com/echo", json={"say": "hi"})
    return said[0]


@trigger("LC504")
def fault_field(monkeypatch: pytest.MonkeyPatch) -> str:
    with raised() as said:
        faults.http_error(700)
    return said[0]


# --- LC6xx: findings of the commands --------------------------------------------------------


@trigger("LC601")
def truncated_stream(monkeypatch: pytest.MonkeyPatch) -> str:
    write("tests/cassettes/test_chat/test_cut.jsonl", header(), *chat_stream(3, done=False))
    return command("check", "tests/cassettes/test_chat/test_cut.jsonl")


@trigger("LC602")
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    write(
        "tests/cassettes/c.jsonl",
        header(),
        {
            "type": "request",
            "method": "GET",
            "uri": "https://example.com/",
            "headers": {"x-api-key": "sk-proj-" + "a" * 40},
        },
        {"type": "response", "status": 200, "body": {"json": {}}},
        {"type": "end", "events": 0},
    )
    return command("scan", "tests/cassettes/c.jsonl")


@trigger("LC603")
def expired(monkeypatch: pytest.MonkeyPatch) -> str:
    write("tests/cassettes/c.jsonl", header(days_ago(60)), *get("https://example.com/", {}))
    return command("check", "--max-age", "30d", "tests/cassettes/c.jsonl")


@trigger("LC604")
def age_unknown(monkeypatch: pytest.MonkeyPatch) -> str:
    first = {"format": "llmcassette", "format_version": 1}
    write("tests/cassettes/c.jsonl", first, *get("https://example.com/", {}))
    return command("check", "--max-age", "30d", "tests/cassettes/c.jsonl")


@trigger("LC605")
def orphan(monkeypatch: pytest.MonkeyPatch) -> str:
    write("tests/cassettes/test_chat/test_old_name.jsonl", header(), *get("https://e.com/", {}))
    Path("tests/test_chat.py").write_text("def test_new_name():\n    pass\n")
    return command("check", "--orphans", "tests")


@trigger("LC606")
def stale_temp(monkeypatch: pytest.MonkeyPatch) -> str:
    write("tests/cassettes/c.jsonl", header(), *get("https://example.com/", {}))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process that has ended: the save it stands for was killed
    name = f"tests/cassettes/.c.jsonl.llmcassette-tmp-{dead.pid}-abc123"
    Path(name).write_text("{")
    return command("check", "tests/cassettes").replace(str(dead.pid), "4242")  # a pid varies


@trigger("LC607")
def cassettes_differ(monkeypatch: pytest.MonkeyPatch) -> str:
    write("old.jsonl", header(), *get("https://example.com/a", {"n": 1}))
    write(
        "new.jsonl",
        header(),
        *get("https://example.com/a", {"n": 2}),
        *get("https://example.com/b", {"n": 3}),
    )
    return command("diff", "old.jsonl", "new.jsonl")


@trigger("LC608")
def needs_migration(monkeypatch: pytest.MonkeyPatch) -> str:
    write("tests/cassettes/c.jsonl", header(version=1), *get("https://example.com/", {}))
    return command("migrate", "--check", "tests/cassettes/c.jsonl")


@trigger("LC609")
def target_exists(monkeypatch: pytest.MonkeyPatch) -> str:
    Path("tests/cassettes").mkdir(parents=True)
    Path("tests/cassettes/c.yaml").write_text(
        "interactions:\n- request:\n    method: GET\n    uri: https://example.com/\n"
        "    body: null\n    headers: {}\n  response:\n    status: {code: 200, message: OK}\n"
        "    headers: {}\n    body: {string: ok}\nversion: 1\n"
    )
    write("tests/cassettes/c.jsonl", header())
    return command("convert", "tests/cassettes/c.yaml")


@trigger("LC620")
def lost_body(monkeypatch: pytest.MonkeyPatch) -> str:
    write(
        "tests/cassettes/c.jsonl",
        header(),
        {"type": "request", "method": "POST", "uri": OPENAI_CHAT, "body": {"json": {"a": 1}}},
        {"type": "response", "status": 200, "headers": {"content-length": "17"}},
        {"type": "end", "events": 0},
    )
    return command("check", "tests/cassettes/c.jsonl")


# --- LC7xx: heal ----------------------------------------------------------------------------


@trigger("LC701")
def cannot_heal(monkeypatch: pytest.MonkeyPatch) -> str:
    created = {"type": "response.created", "response": {"id": "resp_1", "output": []}}
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"id": "msg_1", "type": "message", "status": "in_progress", "content": []},
    }
    events = [  # cut inside the answer: its output item was never done
        {"type": "event", "event": "response.created", "data": created},
        {"type": "event", "event": "response.output_item.added", "data": added},
        {
            "type": "event",
            "event": "response.output_text.delta",
            "data": {"type": "response.output_text.delta", "delta": "Hi"},
        },
    ]
    write(
        "c.jsonl",
        header(),
        {
            "type": "request",
            "method": "POST",
            "uri": "https://api.openai.com/v1/responses",
            "body": {"json": {"stream": True}},
        },
        {"type": "response", "status": 200, "body": {"stream": "sse"}},
        *events,
        {"type": "end", "events": len(events)},
    )
    return command("heal", "c.jsonl")
