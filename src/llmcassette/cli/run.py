"""``llmcassette run``: record or replay any Python program, which needs no change.

The command runs ``COMMAND`` with ``LLMCASSETTE_CASSETTE`` and ``LLMCASSETTE_MODE`` set and
the folder of llmcassette's start-up hook (``llmcassette/cli/_startup/sitecustomize.py``)
first on ``PYTHONPATH``. Python imports ``sitecustomize`` at start-up in every interpreter
(unless run with ``-S`` or ``-I``), so the program runs inside ``llmcassette.use_cassette``
from its first line (``cli.run_hook``), then imports a sitecustomize of its own as usual. A
folder on PYTHONPATH was chosen over a ``.pth`` file in site-packages: it is active only
for the processes ``run`` starts, never for every Python of the environment.

At the end it says in one paragraph what happened: interactions recorded or replayed,
requests no recorded interaction matched. The exit code is the program's, or 1 when it
exited 0 but a request was missed or the cassette failed at exit (interactions not played).
A cassette that cannot be opened stops the program before its first line (exit 2): run
without it, a ``--replay`` would send the program's requests to the network. So does a
cassette that does not exist in record mode ``none`` (``--replay``): nothing could answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from llmcassette.cli import run_hook
from llmcassette.errors import shown_path

STARTUP_DIR = Path(__file__).with_name("_startup")


def environment(cassette: str, mode: str, summary: str | None = None) -> dict[str, str]:
    """The environment that makes a Python program run inside ``cassette``."""
    env = dict(os.environ)
    env[run_hook.CASSETTE_ENV] = os.path.abspath(cassette)
    env[run_hook.MODE_ENV] = mode
    if summary is not None:
        env[run_hook.SUMMARY_ENV] = summary
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), env.get("PYTHONPATH")]))
    return env


def run(command: Sequence[str], *, cassette: str, mode: str) -> int:
    """Run ``command`` with ``cassette`` active in it; the exit code (module docstring)."""
    if not command:
        print("llmcassette run: give the command after --, e.g. -- python app.py", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="llmcassette-run-") as folder:
        summary_file = os.path.join(folder, "summary.json")
        try:
            code = subprocess.call(list(command), env=environment(cassette, mode, summary_file))
        except OSError as error:
            print(f"llmcassette run: cannot start {command[0]}: {error}", file=sys.stderr)
            return 2
        try:
            with open(summary_file, encoding="utf-8") as written:
                summary = json.load(written)
        except (OSError, ValueError):
            summary = None
    if summary is None:
        print(
            f"llmcassette run: {command[0]} exited {code}; the cassette was never opened in it "
            "(is it a Python program, with llmcassette installed, started without -S or -I?)",
            file=sys.stderr,
        )
        return code or 1
    if summary.get("opened") is False:
        print(
            f"llmcassette run: {shown_path(summary['cassette'])} cannot be used (see above); the program "
            "was stopped before its first line, so nothing was recorded, replayed or sent",
            file=sys.stderr,
        )
        return 2
    print(paragraph(summary, code), file=sys.stderr)
    if code == 0 and (summary["misses"] or summary["error"]):
        return 1
    return code


def paragraph(summary: dict[str, object], code: int) -> str:
    """The one-paragraph account of a run."""
    text = (
        f"llmcassette run: {shown_path(str(summary['cassette']))} (mode {summary['mode']}): "
        f"{summary['recorded']} interaction(s) recorded, {summary['replayed']} replayed, "
        f"{summary['misses']} request(s) matched no recorded interaction; "
        f"the program exited {code}."
    )
    if summary["misses"]:
        text += " The mismatch report above names the differing paths; record again with --record."
    if summary["error"]:
        text += " The cassette failed at exit (see above)."
    return text
