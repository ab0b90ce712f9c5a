"""`llmcassette convert` of a tree: every file it reports converted is on disk, with the
folder entries that name it, before it exits; what a convert cut short leaves is refused.

Users delete their vcrpy files once convert is done, so a converted file must survive a
power cut from then on. The files are written without a flush each and flushed together at
the end (issue 18: a flush per file cost 0.14x of the bar); these tests watch ``os.fsync``
(calling the real one) to see what was flushed by the time the command's JSON document is
printed.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmcassette.cli.main import main

CHAT_URL = "https://api.openai.com/v1/chat/completions"


def vcrpy_yaml(answer: str) -> str:
    request = {"method": "POST", "uri": CHAT_URL, "body": '{"q": 1}', "headers": {}}
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-type": ["application/json"]},
        "body": {"string": json.dumps({"answer": answer})},
    }
    return yaml.safe_dump({"interactions": [{"request": request, "response": response}]})


class FlushSpy:
    """Every path ``os.fsync`` was called on (through the real one), and, once the command
    prints to stdout, what had been flushed by then."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.flushed: list[Path] = []
        self.flushed_when_printed: list[Path] | None = None
        real_fsync, real_write = os.fsync, sys.stdout.write

        def fsync(fd: int) -> None:
            self.flushed.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
            real_fsync(fd)

        def write(text: str) -> int:
            if self.flushed_when_printed is None and text.strip():
                self.flushed_when_printed = list(self.flushed)
            return real_write(text)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(sys.stdout, "write", write)


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="names an fd's file through /proc"
)


@needs_proc
def test_every_converted_file_and_the_folders_naming_it_are_flushed_before_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "cassettes"
    (source / "a" / "b").mkdir(parents=True)
    (source / "a" / "one.yaml").write_text(vcrpy_yaml("one"))
    (source / "a" / "b" / "two.yaml").write_text(vcrpy_yaml("two"))
    (source / "top.yaml").write_text(vcrpy_yaml("top"))
    out = tmp_path / "new" / "out"  # neither folder exists: both are created
    spy = FlushSpy(monkeypatch)

    code = main(["convert", "--json", "--out", str(out), str(source)])

    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    targets = [Path(result["target"]) for result in document["results"]]
    assert sorted(targets) == [
        out / "a" / "b" / "two.jsonl",
        out / "a" / "one.jsonl",
        out / "top.jsonl",
    ]
    # The files' data, the folders that hold them, and the parents of every folder made
    # for them (tmp_path names new/): all flushed before the document says "converted".
    folders = [out / "a" / "b", out / "a", out, tmp_path / "new", tmp_path]
    assert spy.flushed_when_printed is not None
    assert set(targets + folders) <= set(spy.flushed_when_printed)
    for target in targets:
        assert json.loads(target.read_text().splitlines()[0])["converted_from"]


@needs_proc
def test_a_convert_beside_the_sources_flushes_each_file_and_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.yaml").write_text(vcrpy_yaml("x"))
    spy = FlushSpy(monkeypatch)

    assert main(["convert", str(tmp_path / "x.yaml")]) == 0

    assert capsys.readouterr().out.startswith(f"{tmp_path / 'x.yaml'} -> {tmp_path / 'x.jsonl'}")
    assert {tmp_path / "x.jsonl", tmp_path} <= set(spy.flushed)


def test_a_failed_flush_is_an_error_that_names_the_file_and_how_to_fix_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.yaml").write_text(vcrpy_yaml("x"))

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    assert main(["convert", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert "cannot flush to disk: Input/output error" in err
    assert "convert again with --force" in err
    assert str(tmp_path) in err


@pytest.mark.parametrize(
    ("left", "said"),
    [
        (b"", "is empty"),
        (b'{"format": "llmcassette", "version"', "does not end with a line end"),
    ],
)
def test_a_target_a_cut_short_convert_left_is_refused_saying_how_to_convert_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], left: bytes, said: str
) -> None:
    source = tmp_path / "x.yaml"
    source.write_text(vcrpy_yaml("x"))
    target = tmp_path / "x.jsonl"
    target.write_bytes(left)

    assert main(["convert", str(source)]) == 1
    err = capsys.readouterr().err
    assert f"{target} exists but {said}" in err
    assert "a convert cut short by a crash or a power cut" in err
    assert target.read_bytes() == left

    assert main(["convert", "--force", str(source)]) == 0
    assert target.read_text().endswith("\n")


@pytest.mark.parametrize("command", [["convert"], ["check"]])
def test_a_folder_holding_an_empty_target_names_the_convert_not_a_new_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """The commands that walk a folder read the empty x.jsonl beside x.yaml themselves:
    they say to convert it again, as loading it does, not to delete it and record again."""
    (tmp_path / "x.yaml").write_text(vcrpy_yaml("x"))
    (tmp_path / "x.jsonl").write_bytes(b"")

    assert main([*command, str(tmp_path)]) != 0
    out = capsys.readouterr()
    said = out.out + out.err
    assert "x.yaml beside it is a vcrpy cassette" in said
    assert "llmcassette convert --force" in said
    assert "delete it to record it again" not in said


def test_an_existing_complete_target_is_still_just_said_to_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "x.yaml"
    source.write_text(vcrpy_yaml("x"))
    assert main(["convert", str(source)]) == 0
    capsys.readouterr()
    assert main(["convert", str(source)]) == 1
    err: Any = capsys.readouterr().err
    assert f"{tmp_path / 'x.jsonl'} exists; use --force to replace it" in err


@needs_proc
def test_what_was_written_before_an_interrupt_is_flushed_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from llmcassette.cli import output

    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(vcrpy_yaml(name))
    real_replay, replayed = output.replay, []

    def interrupted_after_the_first(calls: Any, out: Any) -> None:
        if replayed:
            raise KeyboardInterrupt
        replayed.append(calls)
        real_replay(calls, out)

    monkeypatch.setattr(output, "replay", interrupted_after_the_first)
    spy = FlushSpy(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        main(["convert", "--jobs", "1", str(tmp_path)])
    assert f"{tmp_path / 'a.yaml'} -> {tmp_path / 'a.jsonl'}" in capsys.readouterr().out
    assert {tmp_path / "a.jsonl", tmp_path} <= set(spy.flushed)
