"""Whole pytest runs: vcrpy cassettes whose requests changed replay with their drift reported.

A project records with plain pytest-recording (``-p no:llmcassette``), then installs
llmcassette and changes a prompt: the legacy cassette still answers (as vcrpy would, on
method and URL), each body difference is an LC304 warning, and one summary at the end names
the tests and the command that re-records them. ``drift`` chooses warn, strict or off.
Runs are subprocesses (vcrpy's YAML serializer fails on a second in-process run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcassette.cli.main import main as cli_main

# The `echo` fixture (conftest.py) is an EchoServer.
EchoServer = Any

TEST_MODULE = """
import os
import httpx2
import pytest

@pytest.mark.vcr{marker_args}
def test_echo():
    response = httpx2.post(os.environ["ECHO_URL"], json={{"prompt": "{prompt}", "n": 1}})
    assert response.status_code == 200

@pytest.mark.vcr
def test_other():
    response = httpx2.post(os.environ["ECHO_URL"], json={{"prompt": "{other}"}})
    assert response.status_code == 200
"""

SUMMARY = "*1 test replayed cassettes that drifted since recording*"
DRIFT = "*body.prompt: recorded 'hi', incoming 'bye'*"


def write_test(
    pytester: pytest.Pytester, prompt: str = "hi", marker_args: str = "", other: str = "x"
) -> None:
    module = TEST_MODULE.format(prompt=prompt, marker_args=marker_args, other=other)
    pytester.makepyfile(test_mod=module)


def cassette_dir(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "test_mod"


def record_legacy(pytester: pytest.Pytester, echo: EchoServer) -> None:
    """Record both tests with plain pytest-recording (YAML), then stop the server."""
    write_test(pytester)
    result = pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once")
    result.assert_outcomes(passed=2)
    assert (cassette_dir(pytester) / "test_echo.yaml").is_file()
    echo.stop()


def test_a_drifted_legacy_cassette_passes_with_its_drift_reported(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess("-rP")
    result.assert_outcomes(passed=2)
    # Named relative to the directory pytest ran in, as pytest names files.
    legacy = (cassette_dir(pytester) / "test_echo.yaml").relative_to(pytester.path)
    result.stdout.fnmatch_lines(
        [
            "*llmcassette: legacy cassette drift*",  # the test's report section (-rP)
            f"{legacy}: body.prompt: recorded 'hi', incoming 'bye'",
        ]
    )
    # The warnings summary, at the test's line that made the call.
    lines = (pytester.path / "test_mod.py").read_text().splitlines()
    call = next(n for n, line in enumerate(lines, 1) if "ECHO_URL" in line)
    result.stdout.fnmatch_lines(
        [
            f"*test_mod.py:{call}: LegacyCassetteDriftWarning: {DRIFT}",
            "*how to fix: record the test again "
            "(pytest test_mod.py::test_echo --record-mode=rewrite), or leave it*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= llmcassette: legacy cassette drift =*",
            SUMMARY,
            f"  test_mod.py::test_echo: {legacy}: body.prompt",
            "re-record exactly these tests with:",
            "  pytest --llmcassette-record-mode=rewrite test_mod.py::test_echo",
        ]
    )
    assert "test_other:" not in result.stdout.str(), "an unchanged test is not in the summary"
    assert not (cassette_dir(pytester) / "test_echo.jsonl").exists(), "replay writes nothing"


def test_an_unchanged_legacy_cassette_reports_nothing(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    record_legacy(pytester, echo)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)
    assert "legacy cassette drift" not in result.stdout.str()
    assert "LegacyCassetteDriftWarning" not in result.stdout.str()


def test_strict_fails_the_drifted_test_naming_the_path(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess("--llmcassette-drift=strict")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([DRIFT])
    result.stdout.fnmatch_lines(["FAILED test_mod.py::test_echo*"])
    assert "since recording" not in result.stdout.str()


OWN_MATCH_ON = """
import pytest

@pytest.fixture(scope="module")
def vcr_config():
    # a suite written for vcrpy: its default list spelt out, no body
    return {"match_on": ["method", "scheme", "host", "port", "path", "query"]}
"""


NARROWER_MATCH_ON = """
import pytest

@pytest.fixture(scope="module")
def vcr_config():
    # chatlas's: "some tests have dynamic request bodies - skip body matching"
    return {"match_on": ["method", "scheme", "host", "port", "path"]}
"""


def test_a_narrower_match_on_than_vcrpys_is_left_to_vcrpy(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    pytester.makeconftest(NARROWER_MATCH_ON)
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess("--llmcassette-drift=strict")
    result.assert_outcomes(passed=2)
    assert "incoming 'bye'" not in result.stdout.str()


@pytest.mark.parametrize("drift", ["warn", "strict", "off"])
def test_a_suites_own_match_on_without_the_body_still_tells_the_drift(
    pytester: pytest.Pytester, echo: EchoServer, drift: str
) -> None:
    # openinference's google-genai suite sets its own match_on: llmcassette left its
    # requests to vcrpy, and 7 drifted tests passed with no warning, strict or not.
    pytester.makeconftest(OWN_MATCH_ON)
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess(f"--llmcassette-drift={drift}")
    if drift == "strict":
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines([DRIFT, "FAILED test_mod.py::test_echo*"])
    elif drift == "warn":
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines([DRIFT, SUMMARY])
    else:
        result.assert_outcomes(passed=2)
        assert "incoming 'bye'" not in result.stdout.str()


def test_off_replays_silently(pytester: pytest.Pytester, echo: EchoServer) -> None:
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess("--llmcassette-drift=off", "-rP")
    result.assert_outcomes(passed=2)
    assert "legacy cassette drift" not in result.stdout.str()
    assert "incoming 'bye'" not in result.stdout.str()
    assert "since recording" not in result.stdout.str()


@pytest.mark.parametrize(
    ("pyproject", "vcr_config", "marker_args", "flag", "outcome"),
    [
        ("strict", None, "", None, "failed"),
        ("strict", "warn", "", None, "passed"),  # vcr_config over pyproject
        ("warn", "strict", "", None, "failed"),
        (None, "strict", '(drift="warn")', None, "passed"),  # marker over vcr_config
        (None, None, '(drift="strict")', None, "failed"),
        (None, None, '(drift="strict")', "warn", "passed"),  # flag over marker
        ("warn", "warn", '(drift="warn")', "strict", "failed"),
    ],
)
def test_the_setting_comes_from_flag_marker_vcr_config_pyproject_in_that_order(
    pytester: pytest.Pytester,
    echo: EchoServer,
    pyproject: str | None,
    vcr_config: str | None,
    marker_args: str,
    flag: str | None,
    outcome: str,
) -> None:
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye", marker_args=marker_args)
    if pyproject is not None:
        pytester.makepyprojecttoml(f'[tool.llmcassette]\ndrift = "{pyproject}"\n')
    if vcr_config is not None:
        pytester.makeconftest(
            f"""
            import pytest

            @pytest.fixture
            def vcr_config():
                return {{"drift": "{vcr_config}"}}
            """
        )
    args = [] if flag is None else [f"--llmcassette-drift={flag}"]
    result = pytester.runpytest_subprocess(*args)
    if outcome == "passed":
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines([SUMMARY])
    else:
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines([DRIFT, "FAILED test_mod.py::test_echo*"])


def test_a_bad_drift_setting_names_where_it_came_from(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    record_legacy(pytester, echo)
    pytester.makepyprojecttoml('[tool.llmcassette]\ndrift = "loud"\n')
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*pyproject.toml: [[]tool.llmcassette[]] drift must be one of warn, strict, off*"]
    )


def test_a_converted_cassette_is_legacy_too(pytester: pytest.Pytester, echo: EchoServer) -> None:
    record_legacy(pytester, echo)
    for name in ("test_echo", "test_other"):
        legacy = cassette_dir(pytester) / f"{name}.yaml"
        assert cli_main(["convert", str(legacy)]) == 0
        legacy.rename(pytester.path / f"{name}.yaml.moved")  # only the .jsonl is left
    converted = cassette_dir(pytester) / "test_echo.jsonl"
    assert "converted_from" in json.loads(converted.read_text().splitlines()[0])
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)
    shown = converted.relative_to(pytester.path)
    result.stdout.fnmatch_lines([SUMMARY, f"  test_mod.py::test_echo: {shown}: body.prompt"])
    strict = pytester.runpytest_subprocess("--llmcassette-drift=strict")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines([DRIFT])


def test_a_cassette_llmcassette_recorded_stays_strict(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    write_test(pytester)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=2)
    assert (cassette_dir(pytester) / "test_echo.jsonl").is_file()
    echo.stop()
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess()  # drift defaults to warn: not for these
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([DRIFT, "FAILED test_mod.py::test_echo*"])
    assert "since recording" not in result.stdout.str()


def test_the_summary_is_whole_under_xdist(pytester: pytest.Pytester, echo: EchoServer) -> None:
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye", other="y")
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert out.count("2 tests replayed cassettes that drifted since recording") == 1
    # The workers finish in either order: each test is named once, whichever came first.
    result.stdout.fnmatch_lines(["  test_mod.py::test_echo: *test_echo.yaml: body.prompt"])
    result.stdout.fnmatch_lines(["  test_mod.py::test_other: *test_other.yaml: body.prompt"])
    rewrite = next(line for line in out.splitlines() if line.startswith("  pytest --llmcassette-"))
    assert sorted(rewrite.split()[2:]) == ["test_mod.py::test_echo", "test_mod.py::test_other"]


def test_the_run_report_has_an_lc304_line(pytester: pytest.Pytester, echo: EchoServer) -> None:
    record_legacy(pytester, echo)
    write_test(pytester, prompt="bye")
    report = pytester.path / "report.jsonl"
    result = pytester.runpytest_subprocess(f"--llmcassette-report={report}")
    result.assert_outcomes(passed=2)
    events = [json.loads(line) for line in report.read_text().splitlines()]
    drifts = [e for e in events if e.get("code") == "LC304 legacy-drift"]
    assert len(drifts) == 1, events
    assert drifts[0]["path"] == "body.prompt"
    assert drifts[0]["expected"] == "'hi'"
    assert drifts[0]["received"] == "'bye'"
    assert drifts[0]["file"].endswith("test_echo.yaml")


GEMINI_TEST_MODULE = """
import os
import httpx2
import pytest

@pytest.mark.vcr
def test_generate():
    base = os.environ["ECHO_URL"].removesuffix("/echo")
    path = "/{version}/models/gemini-2.0-flash:generateContent"
    response = httpx2.post(base + path, json={{"contents": [{{"parts": [{{"text": "hi"}}]}}]}})
    assert response.status_code == 200
"""


def test_a_legacy_gemini_cassette_names_the_google_genai_3_move(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    # google-genai 2 recorded /v1beta/; google-genai 3 asks /v1/ of the same cassette.
    pytester.makepyfile(test_gemini=GEMINI_TEST_MODULE.format(version="v1beta"))
    recorded = pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    echo.stop()
    pytester.makepyfile(test_gemini=GEMINI_TEST_MODULE.format(version="v1"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*url.path: recorded '/v1beta/models/gemini-2.0-flash:generateContent', "
            "incoming '/v1/models/gemini-2.0-flash:generateContent'*",
            "*likely cause: google-genai 3 calls the Gemini API's /v1/ where earlier "
            "releases called /v1beta/*GOOGLE_GENAI_API_VERSION=beta*",
        ]
    )


TWICE_MODULE = """
import httpx2
import pytest

BODY = {"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000}

@pytest.mark.vcr
def test_twice():
    for _ in range(2):  # a retry: the one recorded call, made again
        httpx2.post("https://api.openai.com/v1/chat/completions", json=BODY)
"""

TWICE_CASSETTE = """interactions:
- request:
    body: '{"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}'
    headers: {}
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: '{"choices":[{"message":{"role":"assistant","content":"hello"}}]}'
    headers: {}
    status:
      code: 200
      message: OK
version: 1
"""


def test_a_call_after_the_legacy_recording_was_played_is_not_blamed_on_its_body(
    pytester: pytest.Pytester,
) -> None:
    # The body drifted (max_tokens is new): the first call replays with its drift told;
    # the second is one more call than recorded, as vcrpy says, not a body to leave out.
    pytester.makepyfile(test_mod=TWICE_MODULE)
    folder = pytester.path / "cassettes" / "test_mod"
    folder.mkdir(parents=True)
    (folder / "test_twice.yaml").write_text(TWICE_CASSETTE)
    result = pytester.runpytest_subprocess("--block-network")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "but the cassette recorded 1 such call, all played already" in output
    assert "leave it out: match=" not in output
    assert "body.max_tokens: recorded (absent), incoming 1000" in output  # the drift, told


REQUESTS_MODULE = """
import os
import requests
import pytest

@pytest.mark.vcr
def test_echo():
    response = requests.post(os.environ["ECHO_URL"], json={{"prompt": "{prompt}", "n": 1}})
    assert response.status_code == 200
"""


def test_strict_through_vcrpys_own_stubs_names_the_path_under_a_suites_match_on(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    # requests and aiohttp go through vcrpy's stubs: vcrpy's own message, built from a
    # match_on without the body, said the request matches an interaction already played.
    pytester.makeconftest(OWN_MATCH_ON)
    pytester.makepyfile(test_mod=REQUESTS_MODULE.format(prompt="hi"))
    pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once").assert_outcomes(
        passed=1
    )
    echo.stop()
    pytester.makepyfile(test_mod=REQUESTS_MODULE.format(prompt="bye"))
    result = pytester.runpytest_subprocess("--llmcassette-drift=strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CassetteMismatch: body.prompt: recorded 'hi', incoming 'bye'*"])
    assert "already been played back" not in result.stdout.str()


TOOL_RESULT_MODULE = """
import os
import uuid
import httpx2
import pytest

@pytest.mark.vcr
def test_tool_result():
    # A tool-call id the code makes anew on every run (``llm`` does), sent back with the
    # tool's result.
    call_id = "call_" + uuid.uuid4().hex
    body = {{"prompt": "{prompt}", "messages": [{{"role": "tool", "tool_call_id": call_id}}]}}
    assert httpx2.post(os.environ["ECHO_URL"], json=body).status_code == 200
"""


def test_drift_in_a_value_made_anew_on_every_run_names_the_option_not_a_new_recording(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    """Found on simonw/llm-gemini: its tool-call ids are new on every run, so every replay
    drifted, and the summary said to record the test again, after which it drifts again."""
    pytester.makepyfile(test_mod=TOOL_RESULT_MODULE.format(prompt="hi"))
    recorded = pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    echo.stop()

    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    # fnmatch patterns: "[[]" is a "[".
    option = "match={'volatile': [[]'tool_call_id']} in vcr_config or the vcr marker"
    result.stdout.fnmatch_lines(
        [
            "*LegacyCassetteDriftWarning: *body.messages[[]0].tool_call_id: recorded 'call_*",
            "*how to fix: the value looks made anew on every run (tool_call_id): recording "
            f"again would not stop it drifting; leave such values out with {option}*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= llmcassette: legacy cassette drift =*",
            "1 test drifted only in values the client makes anew on every run*",
            f"  test_mod.py::test_tool_result: *.yaml: body.messages[[]0].tool_call_id: {option}",
        ]
    )
    assert "re-record exactly" not in result.stdout.str()

    # A prompt that changed too is drift that recording again does fix.
    pytester.makepyfile(test_mod=TOOL_RESULT_MODULE.format(prompt="bye"))
    changed = pytester.runpytest_subprocess()
    changed.assert_outcomes(passed=1)
    changed.stdout.fnmatch_lines(
        [
            "*body.prompt: recorded 'hi', incoming 'bye'*",
            "*how to fix: record the test again*",
            "re-record exactly these tests with:",
            "  pytest --llmcassette-record-mode=rewrite test_mod.py::test_tool_result",
        ]
    )
    assert "makes anew on every run, which" not in changed.stdout.str()
