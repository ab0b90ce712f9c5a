"""Runs the code blocks of one docs page, in order, the way a reader would.

The conventions (CONTRIBUTING.md has the short version for authors):

- ``python`` blocks run in one namespace per page, in a fresh working directory, with
  ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` pointing at a running LocalProvider;
- a ``python`` block that is a pytest test module (``def test_`` and ``pytest.mark.vcr``) is
  written to the file its first line names (``# tests/test_chat.py``), else to
  ``test_<page>_line<N>.py``, and run with pytest twice: recording (``--record-mode=once``),
  then replaying (``--record-mode=none``), which must not reach the provider;
- ``<!-- docs-test: file=PATH -->`` writes the next block, whatever its language, to PATH
  and runs nothing (a conftest.py, a pyproject.toml, a test module a later command runs);
- ``<!-- docs-test: output -->`` before a ``text`` block: it must be what the previous
  ``python`` block printed;
- ``<!-- docs-test: raises -->`` before a ``python`` block: it must raise, and what it
  printed followed by the exception's last line (``module.Class: message``, as pytest's
  ``E`` line shows it) is the output the next ``output`` block is compared with;
- ``<!-- docs-test: run -->`` before a ``console``/``sh`` block: each ``$ llmcassette ...``,
  ``$ pytest ...`` or ``$ sed -i 's/OLD/NEW/' FILE`` (OLD and NEW literal) command runs and must exit 0 (or N when its comment says
  ``# exit N``); an llmcassette command must print the lines shown under it, if any; a
  pytest command's output must contain the lines shown under it, in that order;
- ``<!-- docs-test: figure -->`` before a ``text`` block: not output (a diagram, a file
  layout, a wire format); nothing runs;
- ``<!-- docs-test: error=LCnnn -->`` before a ``text`` block of docs/errors.md: the example
  message of that code's catalogue entry; test_error_catalogue.py provokes the error and
  compares (nothing runs here);
- ``<!-- docs-test: skip -->``: the block does not run;
- ``<!-- docs-test: latency=SECONDS -->`` before a ``python`` block: the provider takes that
  long to answer while it runs (an example about calls that overlap).

Every sample of output (a ``text``, ``console`` or unlabelled block, or a shell block with
output under its ``$`` lines) must be ``output``, ``run``, ``error`` or ``figure`` (`unchecked`
lists those that are not; test_examples.py fails when a page has more of them than it
allows), so no hand-written output can drift. Shown and printed text are compared after
`normalized`: trailing spaces, the page's directory, ports, timestamps and durations do
not count, and ``...`` in the shown text stands for anything (within a line or across
lines), as in doctest.

Every failure names the page and line of the block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import glob
import io
import linecache
import os
import re
import shlex
import subprocess
import sys
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmcassette.cli.main import main as cli_main
from llmcassette.testing import LocalProvider

from ._markdown import Block

PYTHON = frozenset({"python", "py", "python3"})
SHELL = frozenset({"console", "sh", "bash", "shell", "shell-session"})
OUTPUT = frozenset({"text", "console", ""})
ERROR_CATALOGUE = "docs/errors.md"  # its error= examples: test_error_catalogue.py

_NAMED_FILE = re.compile(r"^#\s*(?P<path>[\w./-]+\.py)\s*$")
_EXIT = re.compile(r"#.*\bexit (?P<code>\d+)")
_PYTEST_TIMEOUT = 300.0
# Set by the pytest running this suite; an inner pytest must not inherit them.
_OUTER_PYTEST_ENV = frozenset({"PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "PYTEST_PLUGINS"})


class DocsExampleFailure(AssertionError):
    """A docs code block did not do what the page says."""


def is_test_module(block: Block) -> bool:
    """Whether a python block is a pytest test module that uses cassettes."""
    return "def test_" in block.code and "pytest.mark.vcr" in block.code


@dataclass
class Tally:
    """What a page run did, for the summary line."""

    executed: int = 0
    pytest_modules: int = 0
    files: int = 0
    outputs: int = 0
    commands: int = 0
    skipped: int = 0
    figures: int = 0
    error_examples: int = 0

    def __str__(self) -> str:
        return (
            f"{self.executed} python block(s) executed, {self.pytest_modules} pytest module(s) "
            f"recorded and replayed, {self.files} file(s) written, {self.outputs} output(s) "
            f"compared, {self.commands} command(s) run, {self.skipped} skipped, "
            f"{self.figures} figure(s), {self.error_examples} error example(s) left to "
            "test_error_catalogue.py"
        )


def _fail(block: Block, what: str, detail: str) -> DocsExampleFailure:
    return DocsExampleFailure(f"{block.where}: ```{block.lang} block {what}\n{detail}")


def _diff(expected: str, actual: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "shown in the docs", "actual", lineterm=""
    )
    return "\n".join(lines)


# What differs between runs and machines, replaced by one spelling on both sides.
_VOLATILE = (
    (re.compile(r"\b(127\.0\.0\.1|localhost):\d+"), r"\1:PORT"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "TIME"),
    (re.compile(r"\b\d+(?:\.\d+)?s\b"), "Ns"),  # pytest's "in 0.12s"
    (re.compile(r"\b\d+(?:\.\d+)? ms\b"), "N ms"),
)


def normalized(text: str, workdir: Path | None = None) -> str:
    """``text`` without what varies between runs: trailing spaces, blank lines at either
    end, the page's directory (``/tmp/.../``), ports, timestamps and durations."""
    if workdir is not None:
        for directory in {str(workdir), str(workdir.resolve())}:
            text = text.replace(directory + os.sep, "").replace(directory, ".")
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def pattern(shown: str) -> re.Pattern[str]:
    """A shown text as a regular expression: ``...`` matches anything, the rest itself."""
    return re.compile(".*?".join(re.escape(part) for part in shown.split("...")), re.DOTALL)


def same_output(shown: str, printed: str, workdir: Path | None = None) -> bool:
    """Whether a sample in the docs is what the code printed (see `normalized`)."""
    shown, printed = normalized(shown, workdir), normalized(printed, workdir)
    return shown == printed or pattern(shown).fullmatch(printed) is not None


def contains_lines(shown: str, printed: str, workdir: Path | None = None) -> str | None:
    """None when every shown line is a line of ``printed``, in order; else the first
    shown line that is missing."""
    # Runs of spaces count as one: pytest indents a traceback's lines by their depth.
    lines = iter(" ".join(got.split()) for got in normalized(printed, workdir).splitlines())
    for line in normalized(shown, workdir).splitlines():
        wanted = pattern(" ".join(line.split()))
        if line.strip() and not any(wanted.fullmatch(got) for got in lines):
            return line
    return None


class PageRunner:
    """Runs the blocks of one page in ``workdir`` (the current directory during the run)."""

    def __init__(self, page: str, workdir: Path, provider: LocalProvider) -> None:
        self.page = page
        self.workdir = workdir
        self.provider = provider
        self.pytest_runs = 0
        self.tally = Tally()
        module_name = "docs_example_" + re.sub(r"\W", "_", page)
        self.module = types.ModuleType(module_name)
        self.last_output: str | None = None

    def run(self, blocks: list[Block]) -> Tally:
        """Run every block in order; raises `DocsExampleFailure` at the first that fails."""
        sys.modules[self.module.__name__] = self.module
        try:
            for block in blocks:
                self._run_block(block)
        finally:
            sys.modules.pop(self.module.__name__, None)
        return self.tally

    def _run_block(self, block: Block) -> None:
        if block.directive.get("figure"):
            self.tally.figures += 1
        elif block.directive.get("skip"):
            self.tally.skipped += 1
        elif "error" in block.directive:
            if self.page != ERROR_CATALOGUE:
                raise _fail(
                    block,
                    f"is marked error={block.directive['error']}",
                    f"only the example messages of {ERROR_CATALOGUE} are error= blocks; "
                    "mark this one output (after the python block that prints it) or run",
                )
            self.tally.error_examples += 1
        elif "file" in block.directive:
            self._write_file(block, str(block.directive["file"]))
        elif block.lang in PYTHON and is_test_module(block):
            self._run_pytest_module(block)
        elif block.directive.get("output"):
            self._compare_output(block)
        elif block.directive.get("run"):
            self._run_commands(block)
        elif block.lang in PYTHON and "latency" in block.directive:
            with self._latency(float(block.directive["latency"])):
                self._execute(block)
        elif block.lang in PYTHON:
            self._execute(block)

    @contextlib.contextmanager
    def _latency(self, seconds: float) -> Iterator[None]:
        """The provider takes ``seconds`` to answer while a block runs: an example about
        calls that overlap must not depend on how fast this machine starts them."""
        before = self.provider.behaviour
        self.provider.behaviour = dataclasses.replace(before, latency=seconds)
        try:
            yield
        finally:
            self.provider.behaviour = before

    # --- python ---------------------------------------------------------------------------

    def _execute(self, block: Block) -> None:
        # Padding keeps line numbers those of the page, so tracebacks point into the docs.
        source = "\n" * block.line + block.code
        filename = self.page
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        output = io.StringIO()
        try:
            code = compile(source, filename, "exec")
            with contextlib.redirect_stdout(output):
                exec(code, self.module.__dict__)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            if block.directive.get("raises") and isinstance(error, Exception):
                last = traceback.format_exception_only(type(error), error)
                self.last_output = output.getvalue() + "".join(last)
                self.tally.executed += 1
                return
            # Leave out this runner's own frame: the trace starts in the page.
            trace = "".join(traceback.format_exception(error.with_traceback(_tail(error))))
            printed = f"\nit printed:\n{output.getvalue()}" if output.getvalue() else ""
            raise _fail(block, "raised", trace + printed) from None
        if block.directive.get("raises"):
            raise _fail(block, "is marked raises", "but it raised nothing")
        self.last_output = output.getvalue()
        self.tally.executed += 1

    def _compare_output(self, block: Block) -> None:
        if self.last_output is None:
            raise _fail(block, "is marked as output", "but no python block ran before it")
        if block.lang not in OUTPUT:
            raise _fail(block, "is marked as output", "use a ```text block for printed output")
        if not same_output(block.code, self.last_output, self.workdir):
            expected = normalized(block.code, self.workdir)
            actual = normalized(self.last_output, self.workdir)
            raise _fail(
                block, "is not what the python block before it printed", _diff(expected, actual)
            )
        self.tally.outputs += 1

    # --- files and pytest -----------------------------------------------------------------

    def _write_file(self, block: Block, name: str) -> Path:
        path = self.workdir / name
        if not path.resolve().is_relative_to(self.workdir.resolve()):
            raise _fail(block, f"names file={name}", "the file must be inside the page directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code, encoding="utf-8")
        self.tally.files += 1
        return path

    def _test_file_name(self, block: Block) -> str:
        named = _NAMED_FILE.match(block.code.splitlines()[0]) if block.code.strip() else None
        if named:
            return named["path"]
        stem = re.sub(r"\W", "_", Path(self.page).stem)
        return f"test_{stem}_line{block.line}.py"

    def _run_pytest_module(self, block: Block) -> None:
        path = self._write_file(block, self._test_file_name(block))
        target = str(path.relative_to(self.workdir))
        self.tally.files -= 1
        status, output = self._pytest([target, "--record-mode=once"])
        if status != 0:
            what = f"written to {target}, failed while recording"
            raise _fail(block, what, f"pytest exit code {status}:\n{output}")
        if re.search(r"\d+ (skipped|xfailed|deselected)", output):
            what = f"written to {target}, did not run every test while recording"
            raise _fail(block, what, output)  # a skipped async test passes off as working
        reached = len(self.provider.requests)
        status, output = self._pytest([target, "--record-mode=none"])
        if status != 0:
            what = f"written to {target}, failed while replaying"
            raise _fail(block, what, f"pytest exit code {status}:\n{output}")
        if len(self.provider.requests) != reached:
            raise _fail(
                block,
                f"written to {target}, reached the provider while replaying",
                "the replay run (--record-mode=none) must be served from cassettes",
            )
        self.tally.pytest_modules += 1

    def _pytest(self, args: list[str]) -> tuple[int, str]:
        """pytest in a subprocess, in the page's directory: its exit code and its output.

        Not pytester: its teardown drops every module a test imported, and the in-process
        examples import the SDKs, httpx and yaml, whose later re-imports no longer agree
        with the copies other tests hold (exception classes, yaml's C loader).
        """
        self.pytest_runs += 1
        basetemp = self.workdir / f".pytest-basetemp-{self.pytest_runs}"
        env = {k: v for k, v in os.environ.items() if k not in _OUTER_PYTEST_ENV}
        env["COLUMNS"] = "80"  # pytest's section rules are as wide as the terminal
        # No page uses Hypothesis, whose plugin imports all of it for each run's summary.
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
        command += ["-p", "no:hypothesispytest"]
        try:
            done = subprocess.run(
                [*command, f"--basetemp={basetemp}", *args],
                cwd=self.workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=_PYTEST_TIMEOUT,
            )
        except subprocess.TimeoutExpired as error:
            return -1, f"pytest did not finish within {error.timeout} s"
        return done.returncode, done.stdout + done.stderr

    # --- commands -------------------------------------------------------------------------

    def _run_commands(self, block: Block) -> None:
        if block.lang not in SHELL:
            raise _fail(block, "is marked run", "only console/sh blocks of commands run")
        for command, shown in _commands(block):
            expected_exit = _EXIT.search(command)
            want = int(expected_exit["code"]) if expected_exit else 0
            argv = shlex.split(command, comments=True)
            if argv and argv[0] == "llmcassette":
                status, output = self._llmcassette(argv[1:])
            elif argv[:2] == ["sed", "-i"] and len(argv) == 4:
                status, output = self._sed(block, argv[2], argv[3])
            elif argv and argv[0] == "pytest":
                status, output = self._pytest(argv[1:])
                missing = contains_lines(shown, output, self.workdir)
                if status == want and missing is not None:
                    what = f"runs {command!r}, whose output has no line {missing!r}"
                    raise _fail(block, what, f"(after the lines before it)\n{output}")
                shown = ""  # pytest prints much more than a page shows: checked above
            else:
                raise _fail(
                    block,
                    f"runs {command!r}",
                    "only llmcassette, pytest and sed -i 's/OLD/NEW/' FILE commands can run",
                )
            if status != want:
                raise _fail(
                    block, f"runs {command!r}", f"exit code {status}, expected {want}:\n{output}"
                )
            if shown.strip() and not same_output(shown, output, self.workdir):
                expected = normalized(shown, self.workdir)
                raise _fail(
                    block, f"runs {command!r}", _diff(expected, normalized(output, self.workdir))
                )
            self.tally.commands += 1

    def _sed(self, block: Block, script: str, name: str) -> tuple[int, str]:
        """``sed -i s/OLD/NEW/ FILE`` with literal OLD and NEW: the edit a page asks for."""
        substitution = re.fullmatch(r"s/(?P<old>[^/]+)/(?P<new>[^/]*)/", script)
        path = self.workdir / name
        if substitution is None or not path.is_file():
            raise _fail(block, f"runs sed -i {script} {name}", "needs s/OLD/NEW/ and a file")
        text = path.read_text(encoding="utf-8")
        if substitution["old"] not in text:
            raise _fail(
                block, f"runs sed -i {script} {name}", f"{name} has no {substitution['old']!r}"
            )
        path.write_text(text.replace(substitution["old"], substitution["new"]), encoding="utf-8")
        return 0, ""

    def _llmcassette(self, args: list[str]) -> tuple[Any, str]:
        """The command line, in this process: its exit code and what it printed."""
        output = io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            try:
                status: Any = cli_main([arg for pattern in args for arg in _expand(pattern)])
            except SystemExit as exit_:
                status = exit_.code
        return status, output.getvalue()


def unchecked(blocks: list[Block]) -> list[Block]:
    """The samples of output among ``blocks`` that nothing checks (see the module docstring)."""
    marks = ("output", "run", "figure", "file", "error")
    return [b for b in blocks if b.is_sample and not any(m in b.directive for m in marks)]


def _tail(error: BaseException) -> types.TracebackType | None:
    tb = error.__traceback__
    return tb.tb_next if tb is not None and tb.tb_next is not None else tb


def _commands(block: Block) -> list[tuple[str, str]]:
    """``(command, output shown under it)`` for each ``$ `` line of a console block."""
    commands: list[tuple[str, list[str]]] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            commands.append((line, []))  # an sh block: every line is a command
    return [(command, "\n".join(shown)) for command, shown in commands]


def _expand(pattern: str) -> list[str]:
    """Shell-style glob expansion; a pattern matching nothing stays as it is."""
    if not any(char in pattern for char in "*?["):
        return [pattern]
    return sorted(glob.glob(pattern, recursive=True)) or [pattern]
