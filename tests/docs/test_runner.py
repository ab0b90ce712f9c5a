"""The docs example runner itself: what it runs, what it skips, and how it reports failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

from ._markdown import MarkdownError, blocks
from ._runner import DocsExampleFailure, PageRunner, Tally, same_output, unchecked

FENCE = "```"


def run_page(text: str, workdir: Path, provider: LocalProvider) -> Tally:
    page = "docs/example.md"
    return PageRunner(page, workdir, provider).run(blocks(text, page))


def page(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_blocks_share_a_namespace_and_an_output_is_compared(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        "# Title",
        f"{FENCE}python",
        "greeting = 'hi'",
        FENCE,
        "",
        "!!! note",
        f"    {FENCE}python",
        "    print(greeting.upper())",
        f"    {FENCE}",
        "",
        "<!-- docs-test: output -->",
        f"{FENCE}text",
        "HI",
        FENCE,
    )
    tally = run_page(text, docs_workdir, docs_provider)
    assert (tally.executed, tally.outputs, tally.skipped) == (2, 1, 0)


def test_a_failing_block_names_its_page_and_line(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page("# Title", "", f"{FENCE}python", "x = 1", "raise ValueError('broken')", FENCE)
    with pytest.raises(DocsExampleFailure) as failure:
        run_page(text, docs_workdir, docs_provider)
    message = str(failure.value)
    assert message.startswith("docs/example.md:3: ```python block raised")
    # The traceback points at the page's own line, with its text.
    assert 'File "docs/example.md", line 5' in message
    assert "raise ValueError('broken')" in message


def test_skipped_blocks_do_not_run_and_are_counted(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        "<!-- docs-test: skip -->",
        "",
        f"{FENCE}python",
        "raise RuntimeError('needs a real API key')",
        FENCE,
    )
    assert run_page(text, docs_workdir, docs_provider).skipped == 1


def test_a_wrong_output_shows_the_difference(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        f"{FENCE}python",
        "print('You said: hi')",
        FENCE,
        "<!-- docs-test: output -->",
        f"{FENCE}text",
        "You said: bye",
        FENCE,
    )
    with pytest.raises(DocsExampleFailure) as failure:
        run_page(text, docs_workdir, docs_provider)
    assert str(failure.value).startswith("docs/example.md:5:")
    assert "-You said: bye" in str(failure.value)
    assert "+You said: hi" in str(failure.value)


def test_examples_reach_the_local_provider_through_the_sdk_defaults(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        f"{FENCE}python",
        "import openai",
        "reply = openai.OpenAI().chat.completions.create(",
        "    model='gpt-4o-mini', messages=[{'role': 'user', 'content': 'ping'}]",
        ")",
        "print(reply.choices[0].message.content)",
        FENCE,
        "<!-- docs-test: output -->",
        f"{FENCE}text",
        "You said: ping",
        FENCE,
    )
    run_page(text, docs_workdir, docs_provider)
    assert [request.path for request in docs_provider.requests] == ["/v1/chat/completions"]


def test_file_blocks_are_written_and_commands_checked(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        "<!-- docs-test: file=cassettes/hello.jsonl -->",
        f"{FENCE}json",
        '{"format": "llmcassette", "format_version": 1}',
        FENCE,
        "<!-- docs-test: run -->",
        f"{FENCE}console",
        "$ llmcassette check cassettes",
        "llmcassette check: 1 cassette(s), no problems",
        FENCE,
    )
    with pytest.raises(DocsExampleFailure) as failure:
        run_page(text, docs_workdir, docs_provider)
    assert (docs_workdir / "cassettes" / "hello.jsonl").is_file()
    # The command ran and succeeded, but what it printed is not what the page shows.
    message = str(failure.value)
    assert message.startswith("docs/example.md:6: ```console block runs 'llmcassette check")
    assert "-llmcassette check: 1 cassette(s), no problems" in message
    assert "+llmcassette check: no problems in 1 file(s)" in message
    shown = text.replace("1 cassette(s), no problems", "no problems in 1 file(s)")
    assert run_page(shown, docs_workdir, docs_provider).commands == 1


def test_a_command_must_exit_as_the_page_says(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    (docs_workdir / "bad.jsonl").write_text("not json\n")
    text = page(
        "<!-- docs-test: run -->", f"{FENCE}console", "$ llmcassette check bad.jsonl", FENCE
    )
    with pytest.raises(DocsExampleFailure, match="exit code 1, expected 0"):
        run_page(text, docs_workdir, docs_provider)
    said = text.replace("bad.jsonl\n", "bad.jsonl   # exit 1\n")
    assert run_page(said, docs_workdir, docs_provider).commands == 1


def test_a_pytest_module_records_then_replays_offline(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        f"{FENCE}python",
        "# tests/test_hi.py",
        "import openai",
        "import pytest",
        "",
        "",
        "@pytest.mark.vcr",
        "def test_hi():",
        "    reply = openai.OpenAI().chat.completions.create(",
        "        model='gpt-4o-mini', messages=[{'role': 'user', 'content': 'hi'}]",
        "    )",
        "    assert reply.choices[0].message.content == 'You said: hi'",
        FENCE,
    )
    assert run_page(text, docs_workdir, docs_provider).pytest_modules == 1
    assert (docs_workdir / "tests" / "cassettes" / "test_hi" / "test_hi.jsonl").is_file()
    assert len(docs_provider.requests) == 1  # recorded once, replayed from the cassette


def test_a_failing_pytest_module_names_its_page_and_line(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        "Intro",
        "",
        f"{FENCE}python",
        "import pytest",
        "",
        "",
        "@pytest.mark.vcr",
        "def test_wrong():",
        "    assert 1 == 2",
        FENCE,
    )
    with pytest.raises(DocsExampleFailure) as failure:
        run_page(text, docs_workdir, docs_provider)
    message = str(failure.value)
    assert message.startswith(
        "docs/example.md:3: ```python block written to test_example_line3.py, failed while recording"
    )
    assert "assert 1 == 2" in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "<!-- docs-test: skipp -->\n```python\n```\n",
            "docs/x.md:1: unknown docs-test directive 'skipp'",
        ),
        (
            "<!-- docs-test: skip -->\nSome prose.\n```python\n```\n",
            "docs/x.md:1: docs-test directive not followed",
        ),
        (
            "<!-- docs-test: file= -->\n```python\n```\n",
            "docs/x.md:1: unknown docs-test directive 'file='",
        ),
        ("Text\n```python\nprint(1)\n", "docs/x.md:2: code block is never closed"),
    ],
)
def test_malformed_pages_are_reported_with_their_line(text: str, problem: str) -> None:
    with pytest.raises(MarkdownError, match="^" + problem.replace("(", r"\(")):
        blocks(text, "docs/x.md")


def test_fences_record_language_line_and_directive() -> None:
    found = blocks(
        '# T\n\n<!-- docs-test: file=conftest.py -->\n```python title="x"\na = 1\n```\n'
        "````markdown\n```python\nnot a block of its own\n```\n````\n",
        "docs/x.md",
    )
    assert [(b.line, b.lang, b.directive) for b in found] == [
        (4, "python", {"file": "conftest.py"}),
        (7, "markdown", {}),
    ]
    assert found[1].code == "```python\nnot a block of its own\n```\n"


def test_an_exception_is_compared_as_its_last_traceback_line(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        "<!-- docs-test: raises -->",
        f"{FENCE}python",
        "print('before')",
        "raise KeyError('gone')",
        FENCE,
        "<!-- docs-test: output -->",
        f"{FENCE}text",
        "before",
        "KeyError: 'gone'",
        FENCE,
    )
    assert run_page(text, docs_workdir, docs_provider).outputs == 1
    quiet = page("<!-- docs-test: raises -->", f"{FENCE}python", "x = 1", FENCE)
    with pytest.raises(DocsExampleFailure, match="is marked raises"):
        run_page(quiet, docs_workdir, docs_provider)


def test_paths_ports_times_and_ellipses_do_not_count_but_the_rest_does(tmp_path: Path) -> None:
    printed = (
        f"{tmp_path}/tests/c.jsonl: POST http://127.0.0.1:40123/v1 at 2026-12-02T12:00:01Z\n"
        "1 passed in 0.42s   \n"
    )
    shown = "tests/c.jsonl: POST http://127.0.0.1:8000/v1 at 2020-01-01T00:00:00Z\n1 passed in 3s"
    assert same_output(shown, printed, tmp_path)
    assert same_output("tests/c.jsonl: POST ... at ...\n...", printed, tmp_path)
    assert not same_output(shown.replace("POST", "GET"), printed, tmp_path)
    assert not same_output(shown, printed + "one more line", tmp_path)


def test_a_pytest_command_must_print_the_lines_shown_in_order(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    module = page(
        "<!-- docs-test: file=test_fail.py -->",
        f"{FENCE}python",
        "def test_fail():",
        "    assert 'recorded' == 'incoming'",
        FENCE,
    )
    passing = module + page(
        "<!-- docs-test: run -->",
        f"{FENCE}console",
        "$ sed -i 's/incoming/other/' test_fail.py",
        "$ pytest test_fail.py  # exit 1",
        "E   AssertionError: assert 'recorded' == 'other'",
        "FAILED test_fail.py::test_fail - ...",
        FENCE,
    )
    assert run_page(passing, docs_workdir, docs_provider).commands == 2
    wrong = module + page(
        "<!-- docs-test: run -->",
        f"{FENCE}console",
        "$ pytest test_fail.py  # exit 1",
        "E   AssertionError: assert 'recorded' == 'what the page says'",
        FENCE,
    )
    with pytest.raises(DocsExampleFailure, match="whose output has no line"):
        run_page(wrong, docs_workdir, docs_provider)


def test_output_samples_nothing_checks_are_found() -> None:
    text = page(
        f"{FENCE}text",
        "hand-written output",
        FENCE,
        "<!-- docs-test: figure -->",
        f"{FENCE}text",
        "a | diagram",
        FENCE,
        f"{FENCE}sh",
        "pip install llmcassette",
        FENCE,
        f"{FENCE}console",
        "$ llmcassette check tests",
        "llmcassette check: no problems in 1 file(s)",
        FENCE,
    )
    found = unchecked(blocks(text, "docs/example.md"))
    assert [block.line for block in found] == [1, 11]


def test_a_pytest_module_whose_test_is_skipped_fails(
    docs_workdir: Path, docs_provider: LocalProvider
) -> None:
    text = page(
        f"{FENCE}python",
        "import pytest",
        "",
        "",
        "@pytest.mark.vcr",
        "def test_later():",
        "    pytest.skip('needs a plugin this set-up does not install')",
        FENCE,
    )
    with pytest.raises(DocsExampleFailure, match="did not run every test"):
        run_page(text, docs_workdir, docs_provider)
