"""Whole pytest runs (pytester) that show how the plugin changes ``@pytest.mark.vcr``.

Runs are subprocesses: vcrpy's YAML serializer fails on a second in-process run
(``yaml.emitter.EmitterError``), with or without llmcassette.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmcassette import FORMAT_VERSION

# The `echo` fixture (conftest.py) is an EchoServer.
EchoServer = Any

TEST_MODULE = """
import os
import httpx2
import pytest

@pytest.mark.vcr{marker_args}
def test_echo():
    response = httpx2.post(os.environ["ECHO_URL"], json={{"prompt": "{prompt}"}})
    assert response.json()["echo"] == {{"prompt": "{prompt}"}}
    print("VERSION", response.json()["version"])
"""


def write_test(pytester: pytest.Pytester, prompt: str = "hi", marker_args: str = "") -> None:
    pytester.makepyfile(test_mod=TEST_MODULE.format(prompt=prompt, marker_args=marker_args))


def cassette_dir(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "test_mod"


def test_records_jsonl_by_default_and_replays_offline(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    write_test(pytester)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    assert sorted(p.name for p in cassette_dir(pytester).iterdir()) == ["test_echo.jsonl"]
    lines = (cassette_dir(pytester) / "test_echo.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["format_version"] == FORMAT_VERSION
    assert json.loads(lines[1])["body"] == {"json": {"prompt": "hi"}}

    echo.stop()
    hits = echo.hits
    pytester.runpytest_subprocess().assert_outcomes(
        passed=1
    )  # pytest-recording's default mode: none
    assert echo.hits == hits


def test_changed_prompt_fails_with_the_path_that_differs(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    write_test(pytester, prompt="hi")
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    write_test(pytester, prompt="bye")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*body.prompt: recorded 'hi', incoming 'bye'*"])


@pytest.mark.parametrize(
    ("where", "marker_args"),
    [("vcr_config", ""), ("marker", '(serializer="yaml")')],
)
def test_an_explicit_yaml_serializer_keeps_yaml(
    pytester: pytest.Pytester, echo: EchoServer, where: str, marker_args: str
) -> None:
    write_test(pytester, marker_args=marker_args)
    if where == "vcr_config":
        pytester.makeconftest(
            """
            import pytest

            @pytest.fixture
            def vcr_config():
                return {"serializer": "yaml"}
            """
        )
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    assert sorted(p.name for p in cassette_dir(pytester).iterdir()) == ["test_echo.yaml"]
    echo.stop()
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_legacy_yaml_cassette_replays_and_recording_writes_jsonl(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    write_test(pytester)
    # Record with plain pytest-recording, as a project did before installing llmcassette.
    pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once").assert_outcomes(
        passed=1
    )
    legacy = cassette_dir(pytester) / "test_echo.yaml"
    assert legacy.exists()
    assert not (cassette_dir(pytester) / "test_echo.jsonl").exists()

    hits = echo.hits
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    assert echo.hits == hits, "the legacy cassette should have answered"
    assert not (cassette_dir(pytester) / "test_echo.jsonl").exists()

    # A new request in new_episodes mode records, and the cassette is written as JSONL.
    pytester.makepyfile(
        test_mod=TEST_MODULE.format(prompt="hi", marker_args="")
        + "\n\n@pytest.mark.vcr\ndef test_more():\n"
        "    assert httpx2.post(os.environ['ECHO_URL'], json={'prompt': 'more'}).status_code == 200\n"
    )
    pytester.runpytest_subprocess("--record-mode=new_episodes", "-k", "test_echo").assert_outcomes(
        passed=1
    )
    pytester.makepyfile(
        test_mod=TEST_MODULE.format(prompt="hi", marker_args="").replace(
            '{"prompt": "hi"})\n',
            '{"prompt": "hi"})\n    httpx2.post(os.environ["ECHO_URL"], json={"prompt": "two"})\n',
            1,
        )
    )
    pytester.runpytest_subprocess("--record-mode=new_episodes").assert_outcomes(passed=1)
    jsonl = cassette_dir(pytester) / "test_echo.jsonl"
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    prompts = [line["body"]["json"]["prompt"] for line in lines if line.get("type") == "request"]
    assert prompts == ["hi", "two"]
    assert legacy.exists(), "the legacy file is left for the user to delete"


def test_rewrite_records_the_jsonl_cassette_again(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    write_test(pytester)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    echo.version = 2
    result = pytester.runpytest_subprocess("--record-mode=rewrite", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*VERSION 2*"])
    path = cassette_dir(pytester) / "test_echo.jsonl"
    responses = [json.loads(line) for line in path.read_text().splitlines()]
    bodies = [r["body"]["json"] for r in responses if r.get("type") == "response"]
    assert bodies == [{"echo": {"prompt": "hi"}, "version": 2}]

    echo.stop()
    pytester.runpytest_subprocess("-s").stdout.fnmatch_lines(["*VERSION 2*"])


def test_rewrite_from_the_marker(pytester: pytest.Pytester, echo: EchoServer) -> None:
    write_test(pytester)
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    echo.version = 3
    write_test(pytester, marker_args='(record_mode="rewrite")')
    pytester.runpytest_subprocess("-s").stdout.fnmatch_lines(["*VERSION 3*"])


def test_opting_out_restores_plain_pytest_recording(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    write_test(pytester)
    pytester.runpytest_subprocess("-p", "no:llmcassette", "--record-mode=once").assert_outcomes(
        passed=1
    )
    assert sorted(p.name for p in cassette_dir(pytester).iterdir()) == ["test_echo.yaml"]


def test_a_users_own_hook_runs_after_ours_and_wins(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    write_test(pytester, prompt="hi")
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    pytester.makeconftest(
        """
        def pytest_recording_configure(config, vcr):
            vcr.match_on = ("method", "path")
        """
    )
    # Without the body matcher the changed prompt replays the old answer (the user's choice).
    pytester.makepyfile(
        test_mod=TEST_MODULE.format(prompt="bye", marker_args="").replace(
            'assert response.json()["echo"] == {"prompt": "bye"}',
            'assert response.json()["echo"] == {"prompt": "hi"}',
        )
    )
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_disabling_pytest_recording_does_not_break_startup(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    pytester.runpytest_subprocess("-p", "no:recording").assert_outcomes(passed=1)


def test_no_option_of_pytest_recording_is_registered_twice(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0
    # pytest-recording's option once; llmcassette's own names it only in its help text.
    options = [line.split()[0] for line in result.stdout.lines if line.startswith("  --")]
    assert options.count("--record-mode={once,new_episodes,none,all,rewrite}") == 1
    assert options.count("--llmcassette-record-mode={once,new_episodes,none,all,rewrite}") == 1


def test_redaction_settings_from_pyproject_and_vcr_config(
    pytester: pytest.Pytester, echo: EchoServer
) -> None:
    pytester.makepyfile(
        test_mod="""
        import os
        import httpx2
        import pytest

        @pytest.fixture
        def vcr_config():
            return {"redaction": {"json_keys": ["session_ref"]}}

        @pytest.mark.vcr
        def test_echo():
            body = {"user_ref": "u-123456789", "session_ref": "s-987654321", "q": "hi"}
            assert httpx2.post(os.environ["ECHO_URL"], json=body).status_code == 200
        """
    )
    pytester.makefile(".toml", pyproject='[tool.llmcassette.redaction]\njson_keys = ["user_ref"]\n')
    pytester.runpytest_subprocess("--record-mode=once").assert_outcomes(passed=1)
    text = (cassette_dir(pytester) / "test_echo.jsonl").read_text()
    assert "u-123456789" not in text  # from pyproject.toml
    assert "s-987654321" not in text  # from the test's vcr_config
    assert '"q":"hi"' in text
    echo.stop()
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
