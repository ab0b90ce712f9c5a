"""``llmcassette run``: its mismatch hints are options ``run`` takes; ``--json`` is refused
with the reason (the program's own output goes to stdout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _cli_support import cli

from llmcassette.cli import run
from llmcassette.testing import LocalProvider

APP = """
import sys

import httpx2

body = {"model": "m", "messages": [{"role": "user", "content": sys.argv[2]}]}
auth = {"authorization": "Bearer sk-test"}
print(httpx2.post(sys.argv[1] + "/v1/chat/completions", json=body, headers=auth).status_code)
"""


def test_a_mismatch_under_run_advises_runs_options(tmp_path: Path, provider: LocalProvider) -> None:
    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "app.jsonl"
    app = [sys.executable, "app.py", provider.url]
    recorded = cli("run", "--record", cassette, "--", *app, "Name a river", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    changed = cli("run", "--replay", cassette, "--", *app, "Name a lake", cwd=tmp_path)
    assert changed.returncode == 1
    assert "recorded 'Name a river', incoming 'Name a lake'" in changed.stderr
    assert "record again (llmcassette run --record CASSETTE -- COMMAND" in changed.stderr
    assert "in the program instead of llmcassette run, which takes no such option" in changed.stderr
    assert "use_cassette(..., record_mode='all')" not in changed.stderr
    assert "leave it out: use_cassette(" not in changed.stderr


def test_json_is_refused_with_the_reason(tmp_path: Path) -> None:
    result = cli("run", "--json", "--replay", tmp_path / "app.jsonl", "--", sys.executable, "-V")
    assert result.returncode == 2
    document = json.loads(result.stdout)
    (error,) = document["errors"]
    assert (document["command"], error["code"]) == ("run", "LC001 usage")
    assert "run takes no --json: the program's own output goes to stdout" in error["message"]
    assert not (tmp_path / "app.jsonl").exists()  # nothing was run


KEYED_APP = """
import sys

import httpx2

body = {"model": "m", "messages": [{"role": "user", "content": sys.argv[2]}]}
auth = {"authorization": "Bearer sk-test"}
httpx2.post(sys.argv[1] + "/v1/chat/completions?key=AIzaSyD3x9Kq7Lm2Np5Rt8Vw1Yz4Bc6Df0Gh3Jk", json=body, headers=auth).raise_for_status()
"""


def test_the_programs_traceback_is_redacted(tmp_path: Path, provider: LocalProvider) -> None:
    # Python prints the failing source line, which here holds the key.
    (tmp_path / "app.py").write_text(KEYED_APP)
    cassette = tmp_path / "app.jsonl"
    app = [sys.executable, "app.py", provider.url]
    assert cli("run", "--record", cassette, "--", *app, "river", cwd=tmp_path).returncode == 0
    changed = cli("run", "--replay", cassette, "--", *app, "lake", cwd=tmp_path)
    assert changed.returncode == 1
    assert "Traceback (most recent call last)" in changed.stderr
    assert "<REDACTED:google-api-key>" in changed.stderr
    assert "AIzaSyD3x9Kq7Lm2Np5Rt8Vw1Yz4Bc6Df0Gh3Jk" not in changed.stderr


def test_an_exhausted_interaction_under_run_advises_runs_options(
    tmp_path: Path, provider: LocalProvider
) -> None:
    (tmp_path / "app.py").write_text(APP + "\n" + APP.split("\n", 4)[-1])  # the call, twice
    cassette = tmp_path / "app.jsonl"
    app = [sys.executable, "app.py", provider.url]
    # recorded with one call, replayed with two: the second finds its only match played
    (tmp_path / "once.py").write_text(APP)
    once = [sys.executable, "once.py", provider.url]
    assert cli("run", "--record", cassette, "--", *once, "river", cwd=tmp_path).returncode == 0
    twice = cli("run", "--replay", cassette, "--", *app, "river", cwd=tmp_path)
    assert twice.returncode == 1
    assert "all played already" in twice.stderr
    assert "record again (llmcassette run --record CASSETTE -- COMMAND" in twice.stderr
    assert (
        "allow repeats: llmcassette.use_cassette(..., allow_playback_repeats=True) in the"
        in twice.stderr
    )


def test_an_error_response_under_run_advises_where_record_errors_goes(
    tmp_path: Path, provider: LocalProvider
) -> None:
    (tmp_path / "app.py").write_text(APP)
    provider.queue_error(429)
    recorded = cli(
        "run",
        "--record",
        tmp_path / "app.jsonl",
        "--",
        sys.executable,
        "app.py",
        provider.url,
        "river",
        cwd=tmp_path,
    )
    assert "error responses received while recording were not saved" in recorded.stderr
    assert "llmcassette.use_cassette(..., record_errors=True) in the program" in recorded.stderr
    assert "vcr_config" not in recorded.stderr


def test_a_cassette_that_cannot_be_opened_stops_the_program_before_any_request(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # Going on without the cassette sent the requests of a --replay run to the network.
    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "app.jsonl"
    cassette.write_text('{"format":"llmcassette","format_version":2}\n{"type":"request",')
    before = cassette.read_bytes()
    app = [sys.executable, "app.py", provider.url]
    result = cli("run", "--replay", cassette, "--", *app, "Name a river", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""  # the program printed nothing: it never made its request
    assert "app.jsonl:2: line is not valid JSON" in result.stderr
    assert "cannot be used (see above); the program was stopped" in result.stderr
    assert "Error in sitecustomize" not in result.stderr
    assert cassette.read_bytes() == before


def test_a_cassette_path_that_cannot_be_a_file_stops_the_program_too(tmp_path: Path) -> None:
    # Not an llmcassette error (NotADirectoryError): the program must not run without it.
    (tmp_path / "app.py").write_text("print('ran')")
    cassette = tmp_path / "app.py" / "app.jsonl"
    result = cli("run", "--replay", cassette, "--", sys.executable, "app.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    # Named as the program's directory sees it (the cassette is under it).
    shown = os.path.join("app.py", "app.jsonl")
    assert f"llmcassette: {shown}: cannot open the cassette: " in result.stderr
    assert "Error in sitecustomize" not in result.stderr


def test_a_missing_cassette_under_replay_stops_the_program_before_any_request(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # The program ran and failed at its first request, whose mismatch was the first word
    # that the cassette was never recorded.
    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "app.jsonl"
    seen = len(provider.requests)
    app = [sys.executable, "app.py", provider.url, "Name a river"]
    result = cli("run", "--replay", cassette, "--", *app, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert "app.jsonl: the cassette does not exist, and record mode none" in result.stderr
    assert "how to fix: record it first: llmcassette run --record app.jsonl --" in result.stderr
    assert str(tmp_path) not in result.stderr
    assert "cannot be used (see above); the program was stopped before its first line" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert not cassette.exists()
    assert len(provider.requests) == seen

    # --cassette with --mode none is the same replay-only mode.
    same = cli("run", "--cassette", cassette, "--mode", "none", "--", *app, cwd=tmp_path)
    assert (same.returncode, same.stdout) == (2, "")


def test_a_missing_cassette_in_a_mode_that_records_is_recorded(
    tmp_path: Path, provider: LocalProvider
) -> None:
    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "app.jsonl"
    app = [sys.executable, "app.py", provider.url, "Name a river"]
    result = cli("run", "--cassette", cassette, "--mode", "once", "--", *app, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "200\n"), result.stderr
    assert "1 interaction(s) recorded" in result.stderr
    assert cassette.is_file()


def test_a_mode_that_is_not_one_is_refused_without_a_fatal_error(tmp_path: Path) -> None:
    env = run.environment(str(tmp_path / "app.jsonl"), "bogus")
    result = subprocess.run(
        [sys.executable, "-c", "print('ran')"], env=env, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert "LLMCASSETTE_MODE='bogus' is not a record mode" in result.stderr
    assert "Fatal Python error" not in result.stderr


def test_a_python_without_llmcassette_is_stopped_before_its_first_line(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # `-- python app.py` with another Python first on PATH: the start-up hook could not be
    # imported, Python said "Error in sitecustomize" and ran the program without its
    # cassette, so a --replay run sent its requests to the network.
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "other")
    bin_dir = "Scripts" if sys.platform == "win32" else "bin"
    other = next((tmp_path / "other" / bin_dir).glob("python*"))
    app = tmp_path / "app.py"
    app.write_text(
        "import json, sys, urllib.request\n"
        "request = urllib.request.Request(sys.argv[1] + '/v1/models', "
        "headers={'authorization': 'Bearer sk-test'})\n"
        "print(urllib.request.urlopen(request).status)\n"
    )
    env = run.environment(str(tmp_path / "app.jsonl"), "none")
    env["PYTHONPATH"] = str(run.STARTUP_DIR)  # llmcassette is not importable from there
    seen = len(provider.requests)
    result = subprocess.run(
        [str(other), str(app), provider.url], env=env, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert "cannot import llmcassette" in result.stderr
    assert "Error in sitecustomize" not in result.stderr
    assert len(provider.requests) == seen, "nothing reached the network"

    # A Python the program starts itself, once the hook has run, is left alone.
    env.pop("LLMCASSETTE_CASSETTE")
    result = subprocess.run(
        [str(other), "-c", "print('ran')"], env=env, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "ran\n", "")


def test_unplayed_interactions_under_run_advise_runs_options(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # The hint named use_cassette(..., record_mode='all') and allow_unused=True, which a
    # user of `llmcassette run` cannot pass.
    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "app.jsonl"
    app = [sys.executable, "app.py", provider.url, "river"]
    assert cli("run", "--record", cassette, "--", *app, cwd=tmp_path).returncode == 0
    fewer = cli("run", "--replay", cassette, "--", sys.executable, "-c", "pass", cwd=tmp_path)
    assert fewer.returncode == 1
    assert "the 1 interaction recorded in" in fewer.stderr
    assert "record the cassette again (llmcassette run --record CASSETTE -- COMMAND)" in (
        fewer.stderr
    )
    assert "llmcassette.use_cassette(..., allow_unused=True) in the program" in fewer.stderr
    assert "use_cassette(..., record_mode='all')" not in fewer.stderr


def test_a_program_that_crashes_is_not_also_told_of_unplayed_interactions(
    tmp_path: Path, provider: LocalProvider
) -> None:
    # The program is run's `use_cassette` block: a block that raised is not checked for
    # unplayed interactions. Under run it was, and the paragraph blamed the cassette
    # ("The cassette failed at exit") for the program's own error.
    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "app.jsonl"
    for prompt in ("river", "lake"):
        app = [sys.executable, "app.py", provider.url, prompt]
        added = cli(
            "run", "--cassette", cassette, "--mode", "new_episodes", "--", *app, cwd=tmp_path
        )
        assert added.returncode == 0, added.stderr
    (tmp_path / "crash.py").write_text(APP + "\nraise ValueError('a bug of the program')\n")
    crash = [sys.executable, "crash.py", provider.url, "river"]
    crashed = cli("run", "--replay", cassette, "--", *crash, cwd=tmp_path)
    assert crashed.returncode == 1
    assert "ValueError: a bug of the program" in crashed.stderr
    assert "1 replayed" in crashed.stderr
    assert "not played" not in crashed.stderr
    assert "The cassette failed at exit" not in crashed.stderr

    # A program that ends normally is still checked.
    fewer = cli("run", "--replay", cassette, "--", *crash[:1], "app.py", *crash[2:], cwd=tmp_path)
    assert fewer.returncode == 1
    assert "1 of the 2 interactions recorded in" in fewer.stderr
