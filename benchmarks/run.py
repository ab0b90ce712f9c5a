#!/usr/bin/env python3
"""Run the shared record/replay benchmark with llmcassette (this checkout) as a contender.

    python benchmarks/run.py list
    python benchmarks/run.py run --contenders vcrpy-json-body,llmcassette,floor-httpx2 --n 1000
    python benchmarks/run.py --harness /path/to/bench run --n 20 --reps 1 --load-reps 1
    python benchmarks/run.py --help-bench          # bench.py's own options
    python benchmarks/run.py --snapshot run ...    # measure a frozen copy of the checkout

The harness (``../shared/bench`` from the repository root, or ``--harness DIR``) is
read-only and is not part of this repository. This script copies it into a scratch
directory (``$BENCH_SCRATCH``, or ``<tmp>/llmcassette-bench``), drops
``benchmarks/llmcassette_contender.py`` into the copy's ``contenders`` package, registers
it, adds an ``llmcassette`` venv that installs this checkout (editable) plus the harness's
pinned client libraries, and runs the copy's ``bench.py`` with every other argument
passed through unchanged. The venvs, cassettes and results JSON go to the same scratch
directory (unless ``--scratch`` is passed on to ``bench.py``).

run.py's own options come before the bench.py command:

  --harness DIR   the harness folder (default: ../shared/bench from the repository root)
  --snapshot      install a frozen copy of the checkout (pyproject, README, LICENSE, src/)
                  instead of an editable install, so edits made while the benchmark runs
                  (e.g. by someone else) cannot change the code between two measurements
  --help-bench    bench.py's own help

Stdlib only; Python >= 3.10.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
CONTENDER = HERE / "llmcassette_contender.py"
CONTENDER_MODULE = "llmcassette_contender"
# Top-level files of the checkout that building the package needs (with src/).
SNAPSHOT_TOP_LEVEL = ("pyproject.toml", "README", "LICENSE")
DEFAULT_HARNESS = REPO_ROOT.parent / "shared" / "bench"
# Files of the harness folder that are outputs of earlier runs, not the harness itself.
IGNORED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "venv-*", "cassettes", "results-*.json", "harness-*"
)

# Appended to the copy's contenders/__init__.py: after the harness's own contenders are
# registered, add llmcassette's venv and module. {install} is how pip installs llmcassette:
# ["-e", <this checkout>] or [<a snapshot folder>].
REGISTRATION = """

# --- added by llmcassette's benchmarks/run.py (scratch copy only) ---
ENVS["llmcassette"] = [*{install!r}, *CLIENTS]
_MODULES.append({module!r})
importlib.import_module(f"{{__name__}}.{module}")
"""


def log(message: str) -> None:
    print(f"[run.py] {message}", file=sys.stderr, flush=True)


def scratch_root() -> Path:
    """Where the harness copy (and, by default, the venvs and results) go."""
    configured = os.environ.get("BENCH_SCRATCH")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path(tempfile.gettempdir()).resolve() / "llmcassette-bench"


def _is_within(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True


def _make_writable(root: Path) -> None:
    """Give the owner write access throughout ``root`` (the harness is shipped read-only)."""
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            entry = Path(folder) / name
            if not entry.is_symlink():
                entry.chmod(entry.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR)
    root.chmod(root.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)


def snapshot_checkout(scratch: Path) -> Path:
    """Copy what pip needs to build this checkout into ``<scratch>/llmcassette-src-<hash>``.

    The folder name carries a hash of the files, so the harness sees new requirements (and
    reinstalls) exactly when the code changed; other agents' later edits of the working tree
    then cannot change the code under a running benchmark.
    """
    files = sorted(
        path
        for path in [*REPO_ROOT.glob("*"), *(REPO_ROOT / "src").rglob("*")]
        if path.is_file()
        and (path.parent != REPO_ROOT or path.name.startswith(SNAPSHOT_TOP_LEVEL))
        and "__pycache__" not in path.parts
        and path.suffix != ".pyc"
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    target = scratch / f"llmcassette-src-{digest.hexdigest()[:12]}"
    for old in scratch.glob("llmcassette-src-*"):
        if old != target:
            shutil.rmtree(old)
    if not target.exists():
        building = target.with_name(target.name + ".partial")
        if building.exists():
            shutil.rmtree(building)
        for path in files:
            destination = building / path.relative_to(REPO_ROOT)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
        building.rename(target)
    return target


def prepare_harness(source: Path, scratch: Path, install: list[str]) -> Path:
    """Copy the harness to a new ``<scratch>/harness-*`` and register llmcassette in the copy.

    Each invocation gets its own copy (removed when it ends), so a second invocation cannot
    pull the harness from under one that is still running.
    """
    init = source / "contenders" / "__init__.py"
    if not (source / "bench.py").is_file() or not init.is_file():
        sys.exit(
            f"run.py: the benchmark harness was not found at {source}\n"
            "  (expected bench.py and contenders/__init__.py there). It lives in the project's\n"
            "  shared folder, ../shared/bench next to this repository; pass --harness DIR to\n"
            "  point at another copy."
        )
    init_text = init.read_text(encoding="utf-8")
    for needed in ("ENVS", "CLIENTS", "_MODULES", "importlib"):
        if needed not in init_text:
            sys.exit(f"run.py: {init} has no {needed}; the harness interface has changed")
    if _is_within(scratch, REPO_ROOT):
        sys.exit(f"run.py: refusing to copy the harness into the repository ({scratch})")
    target = Path(tempfile.mkdtemp(prefix="harness-", dir=scratch))
    shutil.copytree(source, target, ignore=IGNORED, dirs_exist_ok=True)
    _make_writable(target)
    shutil.copyfile(CONTENDER, target / "contenders" / f"{CONTENDER_MODULE}.py")
    registration = REGISTRATION.format(install=install, module=CONTENDER_MODULE)
    with (target / "contenders" / "__init__.py").open("a", encoding="utf-8") as handle:
        handle.write(registration)
    return target


def checkout_state() -> str:
    """The commit this checkout is at, and whether its tree has local changes."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "src", "pyproject.toml"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout?)"
    return f"{head}{' + uncommitted changes in src/' if dirty else ''}"


class Options:
    """run.py's own options (the rest of the command line goes to bench.py)."""

    def __init__(self) -> None:
        self.harness = DEFAULT_HARNESS
        self.snapshot = False


def parse_args(argv: Sequence[str]) -> tuple[Options, list[str]]:
    """Split off run.py's own options, which come before the bench.py command."""
    rest = list(argv)
    options = Options()
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-h", "--help"):
            print(__doc__.strip())
            print(f"\nDefault harness: {DEFAULT_HARNESS}")
            raise SystemExit(0)
        if option == "--help-bench":
            return options, ["--help"]
        if option == "--snapshot":
            options.snapshot = True
        elif option == "--harness" and rest:
            options.harness = Path(rest.pop(0))
        elif option.startswith("--harness="):
            options.harness = Path(option.partition("=")[2])
        else:
            sys.exit(f"run.py: unknown option {option!r} before the bench.py command")
    return options, rest


def main(argv: Sequence[str] | None = None) -> int:
    options, bench_args = parse_args(sys.argv[1:] if argv is None else argv)
    if not bench_args:
        bench_args = ["--help"]
    scratch = scratch_root()
    scratch.mkdir(parents=True, exist_ok=True)
    if options.snapshot:
        snapshot = snapshot_checkout(scratch)
        install = [str(snapshot)]
        log(f"llmcassette: snapshot {snapshot} of {REPO_ROOT} at {checkout_state()}")
    else:
        install = ["-e", str(REPO_ROOT)]
        log(f"llmcassette: editable install of {REPO_ROOT} at {checkout_state()}")
    harness = prepare_harness(options.harness.expanduser().resolve(), scratch, install)
    log(f"harness copy: {harness}")
    env = dict(os.environ, BENCH_SCRATCH=str(scratch))
    command = [sys.executable, str(harness / "bench.py"), *bench_args]
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 130
    finally:
        _make_writable(harness)
        shutil.rmtree(harness, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
