"""The pytest plugin: makes ``@pytest.mark.vcr`` use llmcassette cassettes, with no config.

It extends pytest-recording through its ``pytest_recording_configure`` hook; its one
command-line option, ``--llmcassette-report=FILE``, writes the run report for tools
(llmcassette.run_report). ``-p no:llmcassette`` turns it off.
"""

from __future__ import annotations

import inspect
import json
import os
import secrets
import shlex
import sys
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import pytest

from llmcassette import _warning_site, run_report
from llmcassette._vcr.install import configure
from llmcassette._vcr.session_saves import SessionSaves
from llmcassette.errors import FixtureCallsWarning, UnusedInteractionsError, shown_path

if TYPE_CHECKING:
    from typing import Literal

    from llmcassette._vcr.install import DriftMode, RecordModeName
    from llmcassette.config import ProjectSettings
from llmcassette.faults import schedule, scheduled_on

# The re-recording workflow (llmcassette.workflow) talks to the plugin through these: the
# first run writes a report of the tests whose cassettes need recording, the second run
# selects just those tests.
REPORT_ENV = "LLMCASSETTE_REPORT"
SELECT_ENV = "LLMCASSETTE_SELECT"
# Seconds: under rewrite, a cassette recorded longer ago gets a new created_at when saved.
RENEW_ENV = "LLMCASSETTE_RENEW_OLDER_THAN"
REPORT_FORMAT = "llmcassette-rerecord-report"
# workeroutput key under which an xdist worker hands its report entries to the controller.
_WORKER_REPORT_KEY = "llmcassette_rerecord_entries"
# workerinput key under which the controller hands its session token to the xdist workers.
_WORKER_SESSION_KEY = "llmcassette_session_token"
# workeroutput key under which an xdist worker hands the cassettes its tests used.
_WORKER_USES_KEY = "llmcassette_cassette_uses"

# --llmcassette-record-mode: vcrpy's record modes and pytest-recording's "rewrite".
RECORD_MODES = ("once", "new_episodes", "none", "all", "rewrite")

# pytest-recording names cassettes with this suffix unless a serializer was chosen.
_PYTEST_RECORDING_DEFAULT_SUFFIX = ".yaml"

_current_item: pytest.Item | None = None
# The test being run, from its setup to its teardown (fixtures of wider scope are set up
# for it, and in its call by request.getfixturevalue).
_running_item: pytest.Item | None = None
# The session writing a run report (--llmcassette-report), if any.
_config_of_run: pytest.Config | None = None

# The llmcassette persister of a test's VCR, and what went wrong with its cassette, for the
# re-recording report (llmcassette.workflow).
_PERSISTER = pytest.StashKey[Any]()
_PROBLEMS = pytest.StashKey[set[str]]()
# The UnusedInteractionsError pytest_runtest_call raised, so its report can point at the test.
_UNUSED_RAISED = pytest.StashKey[Exception]()
# The cassettes this session (with its xdist workers) saved under rewrite or all, so that
# tests sharing one cassette add to it instead of replacing each other's calls.
_SESSION_SAVES = pytest.StashKey[SessionSaves]()
# Whether the test, recording its cassette from scratch (rewrite, all), passed without a call.
_RECORDED_NOTHING = pytest.StashKey[bool]()
# The tests' own cassette files in this session (an xdist controller adds its workers'):
# one flag per test that used the file, True when that test recorded nothing (above).
_CASSETTE_USES = pytest.StashKey[dict[str, list[bool]]]()
# The cassettes removed at the end of the session (_remove_unrecorded), or that could not
# be, for the summary: one line each.
_REMOVED_CASSETTES = pytest.StashKey[list[str]]()
# Set when a fixture's teardown failed while the test's cassette was still open, and the
# llmcassette section saying what that teardown's discard left unsaved (see
# pytest_fixture_setup).
_TEARDOWN_FAILED = pytest.StashKey[bool]()
_TEARDOWN_DISCARDED = pytest.StashKey[str]()
# Filled only while LLMCASSETTE_REPORT is set, emptied when a session starts.
_report_entries: list[dict[str, Any]] = []
# report.user_properties name of a test's first legacy drift, and the tests that had one
# (nodeid: "file: path"), for the terminal summary.
_DRIFT_PROPERTY = "llmcassette_legacy_drift"
_drifted_tests: dict[str, str] = {}
# Tests whose drift is all in values made anew on every run (``volatile`` presets take it
# away): recording them again would not stop it, so the summary names the option instead.
_VOLATILE_DRIFT_PROPERTY = "llmcassette_volatile_drift"
_volatile_drift: dict[str, str] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Point llmcassette's warnings at the test, not at the library code that issues them
    (vcrpy's cassette exit, pytest-recording's fixture, an SDK's transport)."""
    global _running_item
    _running_item = item
    try:
        with _warning_site.pointing_at(lambda frame: _test_location(item, frame)):
            return (yield)
    finally:
        _running_item = None


def _test_location(item: pytest.Item, frame: FrameType) -> _warning_site.Location | None:
    """The line of ``item``'s test function that ``frame`` was called from, else the test
    itself: a warning at the cassette's exit, at its loading, or in a thread of the test."""
    function = getattr(item, "obj", None)
    if function is None:
        return None
    # pytest-asyncio runs a coroutine test through a wrapper; the test's own frame has the
    # code of the function it wraps.
    code = getattr(inspect.unwrap(function), "__code__", None)
    caller: FrameType | None = frame
    while caller is not None:
        if caller.f_code is code:
            return _warning_site.frame_location(caller)
        caller = caller.f_back
    path, lineno, _ = item.reportinfo()
    module = getattr(item, "module", None)
    return _warning_site.Location(
        os.fspath(path),
        (lineno or 0) + 1,
        getattr(module, "__name__", None),
        getattr(module, "__dict__", {}).setdefault("__warningregistry__", {}),
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    global _current_item
    _current_item = item
    mismatch = sys.modules.get("llmcassette._vcr.mismatch")
    if mismatch is not None:
        mismatch.RAISED.clear()
    drift = sys.modules.get("llmcassette._vcr.drift")
    if drift is not None:
        drift.DRIFTED.clear()
    try:
        return (yield)
    finally:
        _current_item = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Show the cassette mismatches of a failing test, even if an SDK hid the exception.

    anthropic (and openai 2.x) retry a transport error and raise their own "Connection
    error."; the report section keeps the path-level differences in front of the reader.
    """
    report = yield
    unused = item.stash.get(_UNUSED_RAISED, None)
    if call.when == "call" and call.excinfo is not None and call.excinfo.value is unused:
        report.longrepr = _unused_longrepr(item, call.excinfo.value)
    mismatch = sys.modules.get("llmcassette._vcr.mismatch")
    raised: list[Exception] = list(mismatch.RAISED) if mismatch is not None else []
    _record_run_events(item, call, raised)
    _note_drift(item, report)
    if _PERSISTER in item.stash:
        _note_problems(item, call, raised)
        if call.when in ("setup", "call"):  # a fixture may record, then fail the setup
            _discard_failed_recording(item, call, report)
        _note_cassette_use(item, call, report)
        discarded = item.stash.get(_TEARDOWN_DISCARDED, None)
        if call.when == "teardown" and discarded is not None and report.failed:
            report.sections.append(("llmcassette", discarded))
        if call.when == "teardown" and os.environ.get(REPORT_ENV):
            _report_entries.append(_report_entry(item))
    if mismatch is not None and raised and report.failed and call.when != "teardown":
        text = "\n\n".join(str(error) for error in raised)
        if len(raised) >= mismatch.RAISED_LIMIT:
            text += f"\n\n(only the last {mismatch.RAISED_LIMIT} are shown)"
        report.sections.append(("llmcassette: requests the cassette could not answer", text))
        mismatch.RAISED.clear()
    if (report.failed or report.sections) and _PERSISTER in item.stash:
        _redact_shown(item, report)
    return report


def _redact_shown(item: pytest.Item, report: pytest.TestReport) -> None:
    """Take the secrets out of what pytest shows of a test, as they are taken out of the
    cassette: the terminal, ``--junitxml`` and CI logs keep it.

    A failure raised inside a client's call has the live request in the arguments of its
    frames (``--tb=long``, the last frame by default) and in their locals (``-l``); and
    httpx logs each request's URL, query keys included, in the captured log, which ``-rA``
    and ``junit_logging`` show for passing tests too.
    """
    persister = item.stash[_PERSISTER]
    redactor = getattr(persister, "redactor", None)
    if redactor is None or not redactor.config.enabled:
        return
    shown = str(report.longrepr)
    hidden = redactor.shown(shown)
    if hidden != shown:
        report.longrepr = hidden  # plain text: pytest prints and stores it as it is
    report.sections = [(title, redactor.shown(content)) for title, content in report.sections]


def _record_run_events(
    item: pytest.Item, call: pytest.CallInfo[None], raised: Iterable[Exception]
) -> None:
    """Add the phase's llmcassette errors to the run report (``--llmcassette-report``)."""
    events = run_report.active()
    if events is None:
        return
    for error in raised:
        run_report.record_event(item, error, call.when)
    if call.excinfo is not None:
        run_report.record_exception_chain(item, call.excinfo.value, call.when)
    if call.when == "teardown":
        events.forget_seen()


def _note_drift(item: pytest.Item, report: pytest.TestReport) -> None:
    """Put the legacy cassette drift of the phase in the test's report: a section, and the
    first path in ``user_properties``, which reaches an xdist controller with the report."""
    drift = sys.modules.get("llmcassette._vcr.drift")
    if drift is None or not drift.DRIFTED:
        return
    found = list(drift.DRIFTED)
    drift.DRIFTED.clear()
    text = "\n".join(
        f"{w.shown_file}: {w.path}: recorded {w.recorded}, incoming {w.incoming}" for w in found
    )
    report.sections.append(("llmcassette: legacy cassette drift", text))
    if _PERSISTER in item.stash:  # --record-mode=rewrite re-records the marker's cassette only
        first = found[0]
        where = f"{first.shown_file}: {first.path}"
        if all(warning.volatile for warning in found):
            options = "; ".join(dict.fromkeys(str(warning.option) for warning in found))
            report.user_properties.append((_VOLATILE_DRIFT_PROPERTY, f"{where}: {options}"))
        else:
            report.user_properties.append((_DRIFT_PROPERTY, where))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the drifted tests for the summary (on an xdist controller, from workers)."""
    for name, value in report.user_properties:
        if name == _DRIFT_PROPERTY:
            _drifted_tests.setdefault(report.nodeid, str(value))
        elif name == _VOLATILE_DRIFT_PROPERTY:
            _volatile_drift.setdefault(report.nodeid, str(value))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the cassettes removed because their test records nothing now; one summary of
    the tests that replayed legacy cassettes that drifted."""
    removed = terminalreporter.config.stash.get(_REMOVED_CASSETTES, [])
    if removed:
        terminalreporter.write_sep("=", "llmcassette: cassettes removed")
        terminalreporter.write_line(
            "recorded again from scratch, their test passed without making a call:"
        )
        for line in removed:
            terminalreporter.write_line(f"  {line}")
    if not _drifted_tests and not _volatile_drift:
        return
    terminalreporter.write_sep("=", "llmcassette: legacy cassette drift")
    if _volatile_drift:
        _list_tests(
            terminalreporter,
            _volatile_drift,
            "drifted only in values the client makes anew on every run, which recording "
            "again would not stop; leave them out with the match option named "
            "(docs/matching.md)",
        )
    if not _drifted_tests:
        return
    _list_tests(
        terminalreporter,
        _drifted_tests,
        "replayed cassettes that drifted since recording: a request changed, or a recorded "
        "call is no longer made (vcrpy checked neither; replayed as it would)",
    )
    terminalreporter.write_line("re-record exactly these tests with:")
    nodeids = " ".join(shlex.quote(nodeid) for nodeid in _drifted_tests)
    # Not --record-mode: a record_mode in vcr_config or a vcr marker would win over it.
    terminalreporter.write_line(f"  pytest --llmcassette-record-mode=rewrite {nodeids}")


def _list_tests(terminalreporter: Any, tests: dict[str, str], what: str) -> None:
    """``N tests {what}:``, then each test and what it says of it."""
    count = len(tests)
    terminalreporter.write_line(f"{count} test{'s' if count != 1 else ''} {what}:")
    for nodeid, said in tests.items():
        terminalreporter.write_line(f"  {nodeid}: {said}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmcassette")
    group.addoption(
        "--llmcassette-drift",
        dest="llmcassette_drift",
        choices=("warn", "strict", "off"),
        default=None,
        help="what a body difference of a vcrpy-recorded (legacy) cassette leads to: warn "
        "(replay and report it, the default), strict (fail) or off; overrides the marker, "
        "vcr_config and [tool.llmcassette] drift",
    )
    group.addoption(
        "--llmcassette-record-mode",
        dest="llmcassette_record_mode",
        choices=RECORD_MODES,
        default=None,
        help="--record-mode that also overrides the record_mode of vcr_config and of vcr "
        "markers (pytest-recording lets those win over --record-mode): "
        "--llmcassette-record-mode=rewrite records a test again whatever it sets",
    )
    group.addoption(
        run_report.OPTION,
        dest="llmcassette_report",
        metavar="FILE",
        default=None,
        help="write one JSON line per llmcassette event of the run (mismatch, unused "
        "interaction, incomplete stream, refused secret, expiry) to FILE",
    )


def pytest_warning_recorded(warning_message: Any, when: str, nodeid: str, location: Any) -> None:
    """Add llmcassette's warnings to the run report; an xdist controller gets them from
    its workers' reports instead (it sees each warning a second time, forwarded)."""
    warning = warning_message.message
    if run_report.is_llmcassette_warning(warning) and not _is_xdist_controller(_config_of_run):
        run_report.record_event(nodeid or None, warning, when)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Merge an xdist worker's run report events, and its re-recording report entries
    (``LLMCASSETTE_REPORT``), into the controller's."""
    output = getattr(node, "workeroutput", {})
    run_report.merge(output.get(run_report.WORKER_OUTPUT_KEY, []))
    _report_entries.extend(output.get(_WORKER_REPORT_KEY, []))
    known = node.config.stash.setdefault(_CASSETTE_USES, {})
    for path, uses in output.get(_WORKER_USES_KEY, {}).items():
        known.setdefault(path, []).extend(uses)


def _is_xdist_controller(config: pytest.Config | None) -> bool:
    return config is not None and config.pluginmanager.has_plugin("dsession")


def _note_problems(
    item: pytest.Item, call: pytest.CallInfo[None], raised: Iterable[Exception]
) -> None:
    """Remember why the test's cassette needs recording again (see llmcassette.workflow)."""
    problems = item.stash.setdefault(_PROBLEMS, set())
    for error in raised:
        reason = getattr(error, "reason", None)  # a CassetteMismatch; fault errors have none
        if reason is not None:
            problems.add("missing" if reason == "cassette_not_found" else "mismatch")
    if call.excinfo is not None and call.excinfo.errisinstance(UnusedInteractionsError):
        problems.add("unused")


def _discard_failed_recording(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """Do not save what a failed test recorded (``record_failed=True`` saves it)."""
    cassette = getattr(item, "funcargs", {}).get("vcr")
    if cassette is None or call.excinfo is None or not report.failed:
        return  # skipped, or an xfail test failing as expected: replay must do the same
    if _options_of(item).get("record_failed", False):
        return
    said = _discard_recording(
        cassette, "the test failed while recording: its {count} new interaction(s) were not saved"
    )
    if said is not None:
        report.sections.append(("llmcassette", said))


def _discard_recording(cassette: Any, headline: str) -> str | None:
    """Make ``cassette`` save nothing of this run; what the report says (``headline`` with
    the ``{count}`` of interactions), if it recorded anything."""
    if not cassette.dirty:
        return None
    from llmcassette._vcr.save_policy import discard_new

    count = discard_new(cassette)
    path = _cassette_file(cassette)
    state = "left as it was" if os.path.exists(path) else "not created"
    return (
        f"{headline.format(count=count)}\n"
        f"  cassette: {shown_path(path)} ({state})\n"
        "  fix the test and record again; to keep what a failed test records, use "
        "@pytest.mark.vcr(record_failed=True)"
    )


def _note_cassette_use(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """Count the test among the users of its cassette file, noting whether it recorded the
    cassette from scratch and passed without a call (``_remove_unrecorded``)."""
    cassette = getattr(item, "funcargs", {}).get("vcr")
    if cassette is None or call.when == "setup":
        return
    from llmcassette._vcr.save_policy import recorded_nothing

    if call.when == "call":  # before the save drops error responses: they were calls
        from_scratch = item.stash[_PERSISTER].session_saves is not None  # rewrite, all
        item.stash[_RECORDED_NOTHING] = (
            from_scratch and report.passed and recorded_nothing(cassette)
        )
        return
    from llmcassette._vcr.persister import own_file

    path = own_file(cassette)
    if path is None:
        return
    # and no fixture recorded a call as the test was torn down
    nothing = item.stash.get(_RECORDED_NOTHING, False) and report.passed
    nothing = nothing and recorded_nothing(cassette)
    uses = item.config.stash.setdefault(_CASSETTE_USES, {})
    uses.setdefault(os.path.abspath(path), []).append(nothing)


def _remove_unrecorded(session: pytest.Session, exitstatus: int) -> None:
    """Remove each cassette recorded from scratch whose one test in the session passed
    without making a call: nothing else would (no call, no save), and the calls it holds
    fail every replay as unused. A cassette other tests of the session use is kept, and
    nothing is removed after a run that stopped early (``-x``, Ctrl-C): a test that did not
    run may use it."""
    if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return
    if session.shouldstop or session.shouldfail:
        return
    saves = session.config.stash.get(_SESSION_SAVES, None)
    if saves is None:
        return
    from llmcassette._vcr.persister import remove_unrecorded
    from llmcassette.errors import CassetteLockError

    removed = session.config.stash.setdefault(_REMOVED_CASSETTES, [])
    for path, uses in session.config.stash.get(_CASSETTE_USES, {}).items():
        if uses != [True]:
            continue
        try:
            if remove_unrecorded(Path(path), saves):
                removed.append(shown_path(path))
        except (CassetteLockError, OSError) as error:  # left as it was: the summary says why
            removed.append(f"{shown_path(path)}: not removed ({error})")


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, object, object]:
    """Save nothing when a fixture's teardown fails while the test's cassette is open.

    The teardown phase is reported only once every fixture is torn down, after pytest-
    recording's ``vcr`` fixture saved the cassette: too late for _discard_failed_recording.
    So the teardowns of the function-scoped fixtures set up after ``vcr`` (those torn down
    before it, while it still records) note a failure on the test, and ``vcr`` checks for
    one right before its own teardown saves.
    """
    item = request.node
    if request.scope == "function" and _PERSISTER in item.stash:  # vcr is set up already
        # A yield fixture's teardown is added through its request too (pytest's
        # call_fixture_func), as is each of request.addfinalizer's.
        noting = _noting_a_failure(item, request.addfinalizer)
        request.addfinalizer = noting  # type: ignore[method-assign,assignment]
    if request.scope == "function":
        value = yield
    else:
        with _calls_of_a_wider_fixture(fixturedef):
            value = yield
    is_test_cassette = fixturedef.argname == "vcr" and _PERSISTER in item.stash
    if value is not None and is_test_cassette and not _options_of(item).get("record_failed"):
        cassette = value  # runs before the teardown of vcr, which saves it
        request.addfinalizer(lambda: _discard_after_failed_teardown(item, cassette))
    return value


@contextmanager
def _calls_of_a_wider_fixture(fixturedef: pytest.FixtureDef[Any]) -> Iterator[None]:
    """Warn when the setup of a fixture of wider scope than the test makes calls inside the
    cassette of the test that first needed it (``FixtureCallsWarning``): they are the
    fixture's, kept in one test's cassette, and the other tests that use the fixture
    replay only when that test runs first."""
    item = _running_item
    cassette = getattr(item, "funcargs", {}).get("vcr") if item is not None else None
    if item is None or cassette is None or _PERSISTER not in item.stash:
        yield
        return
    from llmcassette._vcr.stubs import calls_made

    before = calls_made(cassette)
    try:
        yield
    finally:
        calls = calls_made(cassette) - before
        if calls:
            warning = FixtureCallsWarning(fixturedef.argname, fixturedef.scope, item.nodeid, calls)
            code = getattr(inspect.unwrap(fixturedef.func), "__code__", None)
            if code is None:
                warnings.warn(warning, stacklevel=1)
            else:  # at the fixture, whose calls they are
                warnings.warn_explicit(
                    warning, FixtureCallsWarning, code.co_filename, code.co_firstlineno
                )


def _noting_a_failure(
    item: pytest.Item, add_finalizer: Callable[[Callable[[], object]], None]
) -> Callable[[Callable[[], object]], None]:
    """``add_finalizer`` whose finalizers note on ``item`` that they raised."""

    def add_noting_finalizer(finalizer: Callable[[], object]) -> None:
        def finalize() -> None:
            __tracebackhide__ = True  # the fixture's own frames are what the user needs
            try:
                finalizer()
            except pytest.skip.Exception:
                raise  # a skipped teardown fails nothing
            except BaseException:
                item.stash[_TEARDOWN_FAILED] = True
                raise

        add_finalizer(finalize)

    return add_noting_finalizer


def _discard_after_failed_teardown(item: pytest.Item, cassette: Any) -> None:
    """Run by ``vcr``'s teardown before it saves: nothing is saved after a failed teardown."""
    if not item.stash.get(_TEARDOWN_FAILED, False):
        return
    said = _discard_recording(
        cassette,
        "a fixture's teardown failed while recording: the test's {count} new interaction(s) "
        "were not saved",
    )
    if said is not None:
        item.stash[_TEARDOWN_DISCARDED] = said


def _cassette_file(cassette: Any) -> str:
    """The file the test's cassette is saved to (the ``.jsonl`` one under the plugin)."""
    from llmcassette._vcr.persister import display_path

    return display_path(cassette) or ""


def _report_entry(item: pytest.Item) -> dict[str, Any]:
    from llmcassette.cassette import FORMAT_VERSION

    persister = item.stash[_PERSISTER]
    problems = item.stash.get(_PROBLEMS, set())
    cassettes = []
    for use in persister.used:
        if use.expired:
            problems.add("expired")
        if use.format_version < FORMAT_VERSION:
            problems.add("outdated")
        cassettes.append(
            {"path": use.path, "created_at": use.created_at, "format_version": use.format_version}
        )
    cassette = getattr(item, "funcargs", {}).get("vcr")
    if not cassettes and cassette is not None:
        cassettes.append({"path": _cassette_file(cassette)})
    return {"nodeid": item.nodeid, "problems": sorted(problems), "cassettes": cassettes}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run only the tests named in the file ``LLMCASSETTE_SELECT`` points to, when it is set
    (llmcassette.workflow)."""
    source = os.environ.get(SELECT_ENV)
    if not source:
        return
    wanted = set(Path(source).read_text(encoding="utf-8").splitlines())
    dropped = [item for item in items if item.nodeid not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid in wanted]


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start the re-recording report and the drift summary afresh (pytester runs sessions
    in one process)."""
    _report_entries.clear()
    _drifted_tests.clear()
    _volatile_drift.clear()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the re-recording report when ``LLMCASSETTE_REPORT`` names a file; remove the
    cassettes whose test records nothing now (``_remove_unrecorded``)."""
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller decides
        uses = session.config.stash.get(_CASSETTE_USES, {})
        session.config.workeroutput[_WORKER_USES_KEY] = uses
    else:
        _remove_unrecorded(session, exitstatus)
    target = os.environ.get(REPORT_ENV)
    if target and hasattr(session.config, "workeroutput"):  # an xdist worker: the controller writes
        session.config.workeroutput[_WORKER_REPORT_KEY] = list(_report_entries)
    elif target:
        write_report(target, session.config.rootpath, _report_entries)
    events = run_report.active()
    if events is not None:
        if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller writes
            session.config.workeroutput[run_report.WORKER_OUTPUT_KEY] = events.events
        else:
            events.write()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _config_of_run
    saves = config.stash.get(_SESSION_SAVES, None)
    if saves is not None and _WORKER_SESSION_KEY not in getattr(config, "workerinput", {}):
        saves.remove()  # this process made the token: the session ends here
    if config is _config_of_run:
        run_report.stop()
        _config_of_run = None


def write_report(
    target: str | os.PathLike[str], rootdir: str | os.PathLike[str], entries: Iterable[Any]
) -> None:
    """Write the report the pytest plugin collected (``entries`` are dicts) as JSON."""
    data = {
        "format": REPORT_FORMAT,
        "version": 1,
        "rootdir": os.fspath(rootdir),
        "tests": list(entries),
    }
    Path(target).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _options_of(item: pytest.Item | None) -> dict[str, Any]:
    """The test's ``vcr_config`` merged with its ``vcr`` markers, as pytest-recording merges them."""
    from pytest_recording.utils import merge_kwargs

    if item is None:
        return {}
    markers = list(item.iter_markers(name="vcr"))
    try:
        vcr_config = item._request.getfixturevalue("vcr_config")  # type: ignore[attr-defined]
    except Exception:  # not a plain function item, or no such fixture
        vcr_config = {}
    return dict(merge_kwargs(vcr_config, markers))


# pytest-vcr's plugin name; pytest-recording refuses to run beside it.
_PYTEST_VCR = "vcr"
PYTEST_VCR_MESSAGE = (
    "llmcassette extends pytest-recording, which cannot run beside pytest-vcr (installed "
    "here). Uninstall pytest-vcr (pip uninstall pytest-vcr): pytest-recording reads the same "
    "@pytest.mark.vcr and vcr_config. --vcr-record=MODE becomes --record-mode=MODE, and "
    "three fixtures in conftest.py keep your cassettes where pytest-vcr put them "
    "(docs/migrating.md, From pytest-vcr)."
)


@pytest.hookimpl(tryfirst=True)  # before pytest-recording's, which stops with a traceback
def pytest_configure(config: pytest.Config) -> None:
    global _config_of_run
    if config.pluginmanager.has_plugin(_PYTEST_VCR):
        raise pytest.UsageError(PYTEST_VCR_MESSAGE)
    forced = config.getoption("llmcassette_record_mode", default=None)
    if forced is not None:
        # What pytest-recording reads as the command line's mode (its record_mode fixture,
        # --block-network); vcr_config and markers are overridden per test below.
        config.option.record_mode = forced
    _start_session_saves(config)
    target = config.getoption("llmcassette_report", default=None)
    if target:
        _config_of_run = config
        on_worker = hasattr(config, "workerinput")
        run_report.start(None if on_worker else Path(config.invocation_params.dir, target))
    config.addinivalue_line(
        "markers",
        "llm_faults(*faults): apply llmcassette faults (llmcassette.faults.http_error, "
        "transport_error, cut_stream, hang, latency, replace_text) to the test's next calls",
    )


def _start_session_saves(config: pytest.Config) -> None:
    """Name this session's record of saved cassettes: a new token on the controller (or a
    run without xdist), the controller's on an xdist worker."""
    workerinput = getattr(config, "workerinput", {})
    token = workerinput.get(_WORKER_SESSION_KEY) or secrets.token_hex(16)
    config.stash[_SESSION_SAVES] = SessionSaves(token)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand the controller's session token to an xdist worker it starts."""
    saves = node.config.stash.get(_SESSION_SAVES, None)
    if saves is not None:
        node.workerinput[_WORKER_SESSION_KEY] = saves.token


class FaultSchedule:
    """The ``llm_faults`` fixture: schedule faults on the test's cassette."""

    def __init__(self, cassette: Any) -> None:
        self.cassette = cassette

    def schedule(self, *faults: Any) -> None:
        """Apply ``faults`` to the next calls, one call each, in order."""
        schedule(self.cassette, *faults)

    @property
    def pending(self) -> int:
        """How many scheduled faults no call has used yet."""
        queue = scheduled_on(self.cassette)
        return 0 if queue is None else len(queue.pending)


@pytest.fixture
def llm_faults(request: pytest.FixtureRequest) -> FaultSchedule:
    """Schedule llmcassette faults for the next calls of this test (its ``vcr`` cassette)."""
    return FaultSchedule(request.getfixturevalue("vcr"))


def _start_faults(item: pytest.Item, cassette: Any) -> None:
    """Schedule the ``llm_faults`` marker's faults (the overrides sidecar was read as the
    cassette opened: a bad one is an error at the test's setup)."""
    for marker in reversed(list(item.iter_markers(name="llm_faults"))):
        if marker.args:
            schedule(cassette, *marker.args)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Fail a replayed test that left recorded interactions unplayed (``allow_unused`` allows it).

    An unplayed interaction means the code under test no longer makes a request it used to
    make, or the cassette holds traffic nobody checks: either way the cassette is out of date.
    Scheduled faults and overridden entries count too.
    """
    cassette = getattr(item, "funcargs", {}).get("vcr")
    if cassette is not None:
        _start_faults(item, cassette)
    result = yield  # a test that failed already raises here, and is not checked further
    if cassette is None or _options_of(item).get("allow_unused", False):
        return result
    from llmcassette._vcr.unused import unused_error

    # What vcrpy left unplayed as well is drift, or (repeats) no unused call at all.
    unused = unused_error(cassette, _drift_setting(item.config, _options_of(item)))
    if unused is not None:
        unused = _naming_the_test(item, unused)
        item.stash[_UNUSED_RAISED] = unused
        raise unused
    return result


def _naming_the_test(item: pytest.Item, unused: UnusedInteractionsError) -> UnusedInteractionsError:
    """``unused`` with a hint whose command records exactly this test again."""
    from llmcassette._vcr.persister import rerecord_command

    command = rerecord_command(item.stash.get(_PERSISTER, None))
    if command is None:
        return unused
    return unused.with_hint(UnusedInteractionsError.PYTEST_HINT.format(command=command))


def _unused_longrepr(item: pytest.Item, error: Exception) -> str:
    """The unused failure as pytest shows a failing test: at the test, not at this hook.

    The first line is what the short summary repeats; the last one is the test's location,
    where pytest puts it for a failing assertion.
    """
    relpath, lineno, _ = item.location
    first, *rest = str(error).splitlines()
    why = (
        "a request it made was refused, and the code caught the error"
        if getattr(error, "refused", None)
        else "its cassette holds calls it no longer makes"
    )
    return "\n".join(
        [
            f"{type(error).__name__}: {first}",
            *(f"E   {line}" for line in rest),
            "",
            f"{relpath}:{(lineno or 0) + 1}: in {item.name}: the test passed, but {why}",
        ]
    )


def _record_mode(config: pytest.Config, options: dict[str, Any]) -> str | None:
    """The record mode pytest-recording was asked for, before it turned "rewrite" into another
    (``--llmcassette-record-mode`` over all)."""
    forced = config.getoption("llmcassette_record_mode", default=None)
    if forced is not None:
        return str(forced)
    if "record_mode" in options:
        return str(options["record_mode"])
    option = config.getoption("--record-mode", default=None)
    return None if option is None else str(option)


def _drift_setting(
    config: pytest.Config, options: dict[str, Any], project: ProjectSettings | None = None
) -> DriftMode:
    """``--llmcassette-drift``, else the marker's or vcr_config's ``drift``, else
    ``[tool.llmcassette] drift`` (of ``project`` when the caller read it), else ``"warn"``."""
    from llmcassette.config import check_drift, project_drift

    flag = config.getoption("llmcassette_drift", default=None)
    if flag is not None:
        return cast("DriftMode", flag)
    if "drift" in options:
        where = "drift= of the vcr marker or vcr_config"
        return cast("DriftMode", check_drift(options["drift"], where))
    return cast("DriftMode", project_drift(config.rootpath, project=project) or "warn")


def _force_record_mode(vcr: Any, record_mode: str) -> None:
    """Make ``vcr``'s cassette use ``record_mode`` whatever vcr_config or the marker says.

    pytest-recording passes their record_mode to ``vcr.use_cassette`` after this hook; "rewrite"
    is "new_episodes" over a cassette the persister reads as empty (``rewrite=True``).
    """
    mode = "new_episodes" if record_mode == "rewrite" else record_mode
    vcr.record_mode = mode
    use_cassette = vcr.use_cassette

    def use_cassette_in_forced_mode(path: Any = None, **kwargs: Any) -> Any:
        return use_cassette(path, **{**kwargs, "record_mode": mode})

    vcr.use_cassette = use_cassette_in_forced_mode


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
    """Install llmcassette on the VCR pytest-recording made for this test.

    ``tryfirst`` lets a user's own ``pytest_recording_configure`` run after this one and
    override it; ``optionalhook`` keeps ``-p no:recording`` working.
    """
    from llmcassette.config import parse_age, project_expiry, project_settings, resolve_redaction

    options = _options_of(_current_item)
    record_mode = _record_mode(config, options) or "none"
    project = project_settings(config.rootpath)  # found and read once for this test
    expiry = project_expiry(project=project)
    configure(
        vcr,
        swap_suffix=_PYTEST_RECORDING_DEFAULT_SUFFIX,
        rewrite=record_mode == "rewrite",
        pace=options.get("pace", "instant"),
        incomplete_streams=options.get("incomplete_streams", "warn"),
        # [tool.llmcassette.redaction] of the project being tested, the test's own on top.
        redaction=resolve_redaction(options.get("redaction"), project=project),
        match=options.get("match"),
        overrides=options.get("overrides"),
        record_errors=options.get("record_errors", False),
        max_age=options.get("max_age", expiry.get("max_age")),
        expired=options.get("expired", expiry.get("expired")),
        record_mode=cast("RecordModeName | Literal['rewrite']", record_mode),  # configure checks it
        # Where the test's own record_mode wins over --record-mode, hints give the flag that
        # overrides it.
        context="pytest_options" if "record_mode" in options else "pytest",
        drift=_drift_setting(config, options, project),
    )
    if config.getoption("llmcassette_record_mode", default=None) is not None:
        _force_record_mode(vcr, record_mode)  # record_mode is the flag's (_record_mode)
    if record_mode in ("rewrite", "all"):
        # Tests sharing the cassette: the session's first save replaces it, the others add.
        vcr.persister.session_saves = config.stash.get(_SESSION_SAVES, None)
    renew = os.environ.get(RENEW_ENV)
    if renew:
        vcr.persister.renew_older_than = parse_age(renew)
    if _current_item is not None:
        _current_item.stash[_PERSISTER] = vcr.persister
        vcr.persister.test = _current_item.nodeid  # hints give the command for this test
