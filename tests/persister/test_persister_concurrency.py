"""Saves that other processes share or interrupt: the cassette lock, merging, killed saves.

Two processes recording one cassette at once lose nothing (the second saver adds its new
interactions to what the first wrote); a save killed at any point leaves the old file or
the new one, and the next save removes the temporary file it left.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import secrets
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.request import Request

import llmcassette
from llmcassette import LlmCassetteError
from llmcassette._vcr import serializer, tempfiles
from llmcassette._vcr.persister import Persister, lock_path, locked, saving
from llmcassette._vcr.session_saves import SessionSaves
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.check import STALE_TEMP, Options, check_paths
from llmcassette.errors import CassetteLockError

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGKILL")

RUNS = 20
CALLS = 6
MODES = ("once", "new_episodes", "all")


# --- two processes recording one cassette -------------------------------------------------


def _chat(client: Any, base_url: str, prompt: str) -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    headers = {"authorization": "Bearer sk-test"}
    url = f"{base_url}/chat/completions"
    with client.stream("POST", url, json=body, headers=headers) as response:
        assert response.status_code == 200
        for _ in response.iter_bytes():
            pass


def _recorder(worker: int, base_url: str, folder: str, barrier: Any, results: Any) -> None:
    """One process: each run, load the run's cassette with the other, then record and save."""
    import httpx2

    client = httpx2.Client(timeout=10)
    for run in range(RUNS):
        path = Path(folder, f"run{run}.jsonl")
        mode = MODES[run % len(MODES)]
        barrier.wait(10)  # the parent wrote the starting file; start together
        try:
            with llmcassette.use_cassette(path, record_mode=mode):
                barrier.wait(10)  # both loaded the same file before either saves
                for call in range(CALLS):
                    _chat(client, base_url, f"w{worker}-r{run}-c{call}")
            results.put((run, worker, "ok"))
        except CassetteLockError as error:  # a loud failure is allowed by the bar
            results.put((run, worker, f"locked: {error}"))
        except BaseException as error:
            results.put((run, worker, f"error: {error!r}"))


def _prompts(path: Path) -> list[str]:
    """The prompt of every recorded request, in file order."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "request":
            body = record.get("body")
            if isinstance(body, dict) and "json" in body:
                body = body["json"]
            if isinstance(body, str):
                body = json.loads(body)
            found.append(body["messages"][0]["content"])
    return found


def _start_file(client: Any, base_url: str, path: Path, mode: str) -> None:
    """``new_episodes`` starts from one recorded call; ``all`` from one it must drop."""
    if mode == "once":
        return
    with llmcassette.use_cassette(path, record_mode="all"):
        _chat(client, base_url, "old")


@posix_only
def test_two_processes_recording_one_cassette_lose_nothing(tmp_path: Path) -> None:
    import httpx2

    from llmcassette.testing import LocalProvider

    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(3)
    results = context.Queue()
    started = time.monotonic()
    with LocalProvider() as provider, httpx2.Client(timeout=10) as client:
        base_url = provider.openai_base_url
        workers = [
            context.Process(
                target=_recorder, args=(w, base_url, os.fspath(tmp_path), barrier, results)
            )
            for w in (1, 2)
        ]
        for process in workers:
            process.start()
        try:
            outcomes: dict[int, list[str]] = {}
            for run in range(RUNS):
                path = tmp_path / f"run{run}.jsonl"
                mode = MODES[run % len(MODES)]
                _start_file(client, base_url, path, mode)
                barrier.wait(30)  # both start this run
                barrier.wait(30)  # both loaded it
                by_worker: dict[int, str] = {}
                for _ in (1, 2):
                    got_run, worker, outcome = results.get(timeout=30)
                    assert got_run == run
                    by_worker[worker] = outcome
                outcomes[run] = [by_worker[1], by_worker[2]]
                assert not any(o.startswith("error") for o in outcomes[run]), outcomes[run]
                # every call of a process that exited normally is in the file, once; a
                # process that failed loudly (CassetteLockError) saved nothing
                expected = {
                    f"w{w}-r{run}-c{c}"
                    for w, outcome in by_worker.items()
                    if outcome == "ok"
                    for c in range(CALLS)
                }
                prompts = _prompts(path)
                assert sorted(set(prompts) - {"old"}) == sorted(expected), (run, mode, prompts)
                assert len(prompts) == len(set(prompts))
                assert ("old" in prompts) == (mode == "new_episodes"), (run, mode)
                assert not lock_path(path).exists()
        finally:
            for process in workers:
                process.join(10)
                if process.is_alive():
                    process.kill()
    assert all(o == ["ok", "ok"] for o in outcomes.values()), outcomes  # merged, not refused
    elapsed = time.monotonic() - started
    print(f"{RUNS} runs of 2 processes x {CALLS} streamed calls in {elapsed:.1f}s: all merged")
    assert elapsed < 60


# --- killed saves ---------------------------------------------------------------------------

KILLS = 100


def _big(tag: str, count: int = 60, size: int = 8000) -> dict[str, Any]:
    requests, responses = [], []
    for i in range(count):
        requests.append(
            Request("POST", f"http://127.0.0.1:9/{tag}/{i}", b'{"q":1}', {"X-Tag": tag})
        )
        responses.append(
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"Content-Type": ["application/json"]},
                "body": {"string": json.dumps({"text": tag * size}).encode()},
            }
        )
    return {"requests": requests, "responses": responses}


def _uris(path: Path) -> list[str] | None:
    """The request URIs of a whole, readable cassette; None when there is no file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    cassette = cassette_file.read(data, path)
    return [item.uri for item in cassette.interactions]


def _save_forever(path: Path) -> None:
    """The child: save two large cassettes in turn until killed."""
    persister = Persister()
    turn = 0
    while True:
        persister.save_cassette(path, _big("ab"[turn % 2]), serializer=serializer)
        turn += 1


def _temp_files(path: Path) -> list[str]:
    return [n for n in os.listdir(path.parent) if tempfiles.MARKER in n]


@posix_only
def test_killed_saves_leave_the_old_or_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big_uris = {tag: [f"http://127.0.0.1:9/{tag}/{i}" for i in range(60)] for tag in "ab"}
    rng = random.Random(17)
    context = multiprocessing.get_context("fork")
    outcomes = {"old": 0, "new": 0, "absent": 0}
    left = 0
    started = time.monotonic()
    for kill in range(KILLS):
        if kill % 10 == 0 and path.exists():
            path.unlink()  # every tenth child saves a cassette that did not exist
        before = _uris(path)
        child = context.Process(target=_save_forever, args=(path,))
        child.start()
        deadline = time.monotonic() + 5
        while not _temp_files(path) and time.monotonic() < deadline:
            time.sleep(0.0002)
        time.sleep(rng.uniform(0, 0.03))  # at a random point of this save or a later one
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join(5)
        assert child.exitcode == -signal.SIGKILL
        after = _uris(path)  # a torn file would not read
        if after is None:
            assert before is None
            outcomes["absent"] += 1
        elif after == before:
            outcomes["old"] += 1
        else:
            assert after in big_uris.values()
            outcomes["new"] += 1
        left += bool(_temp_files(path))
        # the next save (here, a small one) removes what the killed one left
        Persister().save_cassette(path, _big("p", count=1, size=1), serializer=serializer)
        assert _temp_files(path) == []
        assert not lock_path(path).exists()
    elapsed = time.monotonic() - started
    print(f"{KILLS} kills in {elapsed:.1f}s: {outcomes}, temp file left {left} times")
    assert sum(outcomes.values()) == KILLS
    assert left > 0  # the kills did land inside saves
    assert elapsed < 60


# --- tests of one pytest session sharing a cassette under rewrite --------------------------


def _rewrite(path: Path, saves: SessionSaves, tag: str) -> None:
    """One test recording ``path`` from scratch in the session ``saves`` names."""
    persister = Persister(rewrite=True)
    persister.session_saves = saves
    with pytest.raises(CassetteNotFoundError):  # rewrite reads the cassette as empty
        persister.load_cassette(path, serializer=serializer)
    recorded = _big(tag, count=2, size=1)
    with saving(list(zip(recorded["requests"], recorded["responses"], strict=True))):
        persister.save_cassette(path, recorded, serializer=serializer)


def test_a_session_rewriting_a_shared_cassette_keeps_every_test_and_replaces_the_last_session(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.jsonl"
    first, second = SessionSaves(secrets.token_hex(16)), SessionSaves(secrets.token_hex(16))
    try:
        _rewrite(path, first, "a")
        _rewrite(path, first, "b")  # loads after a saved: the file is unchanged since
        assert _uris(path) == [f"http://127.0.0.1:9/{t}/{i}" for t in "ab" for i in range(2)]
        _rewrite(path, second, "c")  # the next session records it from scratch again
        assert _uris(path) == [f"http://127.0.0.1:9/c/{i}" for i in range(2)]
    finally:
        first.remove()
        second.remove()
    assert not first.folder.exists()


# --- the lock itself ------------------------------------------------------------------------


def test_a_save_that_cannot_get_the_lock_fails_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    persister = Persister()
    persister.lock_timeout = 0.2
    with locked(path), pytest.raises(CassetteLockError) as raised:
        persister.save_cassette(path, _big("a", count=1, size=1), serializer=serializer)
    error = raised.value
    assert isinstance(error, LlmCassetteError)
    assert error.pid == os.getpid()
    assert error.path == os.fspath(path)
    assert f"process {os.getpid()}" in str(error)
    assert os.fspath(path) in str(error)
    assert not path.exists()


def test_a_save_outside_use_cassette_of_a_changed_file_fails_loudly(tmp_path: Path) -> None:
    """Without knowing which interactions are new, a changed file is not guessed at."""
    path = tmp_path / "c.jsonl"
    first, second = Persister(), Persister()
    for persister in (first, second):
        with pytest.raises(CassetteNotFoundError):
            persister.load_cassette(path, serializer=serializer)
    first.save_cassette(path, _big("a", count=2, size=1), serializer=serializer)
    with pytest.raises(CassetteLockError, match="saved this cassette after it was loaded"):
        second.save_cassette(path, _big("b", count=2, size=1), serializer=serializer)
    assert _uris(path) == [f"http://127.0.0.1:9/a/{i}" for i in range(2)]


@pytest.mark.parametrize(("mode", "summed"), [("none", False), ("once", True), ("all", True)])
def test_only_a_cassette_that_may_be_saved_is_summed_when_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, summed: bool
) -> None:
    """What a save compares with is taken only where a save can follow: record mode
    "none" never saves, and summing every byte was 4% of loading a corpus."""
    from llmcassette._vcr import persister as persister_module

    path = tmp_path / "c.jsonl"
    Persister().save_cassette(path, _big("a", count=1, size=1), serializer=serializer)
    sums: list[int] = []
    real = persister_module._digest

    def digest(data: bytes | None) -> str | None:
        sums.append(len(data or b""))
        return real(data)

    monkeypatch.setattr(persister_module, "_digest", digest)
    with llmcassette.use_cassette(path, record_mode=mode, allow_unused=True):  # type: ignore[arg-type]
        pass
    assert bool(sums) is summed
    assert sums == ([path.stat().st_size] if summed else [])


def test_a_stale_temp_file_is_removed_by_the_next_save_and_reported_by_check(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    Persister().save_cassette(path, _big("a", count=1, size=1), serializer=serializer)
    dead = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    dead.start()
    dead.join(10)
    stale = tmp_path / f".c.jsonl{tempfiles.MARKER}{dead.pid}-abc123"
    stale.write_bytes(b"half a cassette")
    alive = tmp_path / f".c.jsonl{tempfiles.MARKER}{os.getpid()}-def456"
    alive.write_bytes(b"being written")
    orphan = tmp_path / f".gone.jsonl{tempfiles.MARKER}{dead.pid}-0"
    orphan.write_bytes(b"a first save, killed")

    found = {
        os.fspath(p): [x.kind for x in problems]
        for p, problems in check_paths([tmp_path], Options(secrets=False))
    }
    assert found[os.fspath(stale)] == [STALE_TEMP]
    assert found[os.fspath(orphan)] == [STALE_TEMP]
    assert os.fspath(alive) not in found  # its writer is still running
    assert found[os.fspath(path)] == []
    named = list(check_paths([path], Options(secrets=False)))
    assert [(os.fspath(p), [x.kind for x in f]) for p, f in named][1:] == [
        (os.fspath(stale), [STALE_TEMP])
    ]

    Persister().save_cassette(path, _big("b", count=1, size=1), serializer=serializer)
    assert not stale.exists()
    assert alive.exists()  # its writer is running
    assert orphan.exists()  # another cassette's


def test_the_check_command_reports_a_stale_temp_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmcassette.cli.main import main

    path = tmp_path / "c.jsonl"
    Persister().save_cassette(path, _big("a", count=1, size=1), serializer=serializer)
    assert main(["check", "--no-secrets", "--json", os.fspath(tmp_path)]) == 0
    capsys.readouterr()
    dead = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    dead.start()
    dead.join(10)
    stale = tmp_path / f".c.jsonl{tempfiles.MARKER}{dead.pid}-abc123"
    stale.write_bytes(b"half a cassette")
    assert main(["check", "--no-secrets", "--json", os.fspath(tmp_path)]) == 1
    records = json.loads(capsys.readouterr().out)["findings"]
    assert [(r["file"], r["kind"]) for r in records] == [(os.fspath(stale), STALE_TEMP)]
    assert f"process {dead.pid}" in records[0]["message"]
