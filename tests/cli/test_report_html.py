"""`llmcassette report --html`: the page, loaded in a real headless chromium (Debian's
``/usr/bin/chromium`` driven by playwright), shows the conversations, sorts, filters, draws
something, raises no console or page error, loads nothing from the network, and a
recorded ``</script>`` stays text.

Without chromium or playwright the browser tests skip, except in CI (``CI`` set), where
they fail: there the page must have been looked at.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli_support import WEATHER_TOOL, Record, cli

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOSTILE = "</script><script>window.__injected = 1</script><img src=x onerror=alert(1)>"
KNOWN = "cassettes/test_openai_sdk/test_chat_not_streamed.jsonl"  # user "One word"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium for the module; a skip (a failure under CI) when it cannot start."""
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "the playwright package is not installed"
    if missing is None and not os.access(CHROMIUM, os.X_OK):
        missing = f"{CHROMIUM} is missing (apt-get install chromium)"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser test: {missing}")
        pytest.skip(missing)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def _png_colours(png: bytes) -> int:
    """How many distinct pixel values an 8-bit RGB(A) non-interlaced PNG holds."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, width, height, channels = 8, b"", 0, 0, 0
    while position < len(png):
        (length,) = struct.unpack(">I", png[position : position + 4])
        kind = png[position + 4 : position + 8]
        chunk = png[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert (depth, interlace) == (8, 0), chunk
            assert colour in (2, 6), chunk
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        position += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    pixels: set[bytes] = set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):  # undo the row's PNG filter (RFC 2083, 6.)
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                guess = left + up - corner
                pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                best = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + best) & 0xFF
        pixels.update(bytes(line[i : i + channels]) for i in range(0, stride, channels))
        previous = line
    return len(pixels)


@pytest.fixture(scope="module")
def report_page(
    tmp_path_factory: pytest.TempPathFactory, browser: Any
) -> Iterator[tuple[Any, list[str], list[str]]]:
    """The page over cassettes/ and, recorded from the local provider, an orphan cassette
    with a stream and a hostile prompt, loaded; with the console errors and page errors it
    gave and the URLs it asked for beyond its own file."""
    from llmcassette.testing import LocalProvider

    base = tmp_path_factory.mktemp("tree")
    with LocalProvider() as provider:
        import openai

        import llmcassette

        client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-t", max_retries=0)
        # No test_gone.py exists: this cassette is an orphan, a check finding.
        with llmcassette.use_cassette(base / "cassettes" / "test_gone" / "test_hostile"):
            messages: Any = [{"role": "user", "content": "Name three rivers"}]
            list(
                client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
            )
            messages = [{"role": "user", "content": HOSTILE}]
            client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            messages = [{"role": "user", "content": "Oslo"}]
            answer = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=[WEATHER_TOOL]
            )
            call = answer.choices[0].message.tool_calls[0]
            messages += [
                {"role": "assistant", "tool_calls": [call.model_dump()]},
                {"role": "tool", "tool_call_id": call.id, "content": "Cold and clear"},
            ]
            client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    out = base / "report.html"
    done = cli("report", "--html", out, "cassettes", base / "cassettes", cwd=ROOT)
    assert done.returncode == 1, done.stderr  # the orphan is a problem the page reports
    assert "wrote" in done.stdout
    assert out.stat().st_size < 200_000
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    page = context.new_page()
    page.set_default_timeout(5000)
    errors: list[str] = []
    fetched: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: fetched.append(r.url) if r.url != out.as_uri() else None)
    page.goto(out.as_uri())
    yield page, errors, fetched
    context.close()


def test_page_loads_clean_and_shows_the_conversations(
    report_page: tuple[Any, list[str], list[str]],
) -> None:
    page, errors, fetched = report_page
    assert errors == []
    assert fetched == []
    known = page.locator("section.cassette", has_text=KNOWN)
    assert known.locator(".turn.user").inner_text() == "userOne word"
    assert "You said: One word" in known.locator(".turn.assistant").inner_text()
    # The redacted authorization header is marked as a placeholder.
    assert "<REDACTED:bearer-token>" in known.locator("mark.redacted").all_inner_texts()

    extra = page.locator("section.cassette", has_text="test_gone/test_hostile.jsonl")
    assert "LC605 orphan" in extra.locator(".findings").inner_text()
    # The streamed interaction's chart: one tick per recorded event.
    chart = extra.locator(".interaction").first.locator("svg.timing")
    label = chart.get_attribute("aria-label") or ""
    assert int(label.split()[0]) == chart.locator("g line").count() > 1
    # The hostile prompt and its echo are text: no script of theirs ran or was added.
    assert page.evaluate("window.__injected") is None
    assert page.locator("script").count() == 1
    assert page.locator("img").count() == 0
    assert HOSTILE in extra.locator(".turn.user").nth(1).inner_text()
    assert HOSTILE in extra.locator(".turn.assistant").nth(1).inner_text()

    # The tool call the answer made, then the request sending its result back.
    assert "get_weather(" in extra.locator(".turn.call").first.inner_text()
    assert extra.locator(".turn.tool").inner_text() == "toolCold and clear"

    shot = page.screenshot(clip={"x": 0, "y": 0, "width": 600, "height": 300})
    assert _png_colours(shot) > 20, "the screenshot is (nearly) one colour"


def _column(page: Any, index: int) -> list[str]:
    cells = page.locator(f"#summary tbody tr:not([hidden]) td:nth-child({index})")
    return [str(value) for value in cells.evaluate_all("cs => cs.map(c => c.dataset.v)")]


def test_sort_by_a_header_and_filter_by_text(
    report_page: tuple[Any, list[str], list[str]],
) -> None:
    page, errors, _ = report_page
    header = page.locator("#summary th", has_text="size")
    index = 1 + page.locator("#summary th").all_inner_texts().index("size")
    header.click()
    sizes = [int(v) for v in _column(page, index)]
    assert sizes == sorted(sizes)
    assert len(sizes) == 12
    header.click()
    assert [int(v) for v in _column(page, index)] == sorted(sizes, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"

    page.locator("#filter").fill("anthropic")
    shown = _column(page, 1)
    assert len(shown) == 3
    assert all("anthropic" in path for path in shown)
    page.locator("#filter").fill("")
    assert len(_column(page, 1)) == 12
    assert errors == []


def test_html_excludes_json_and_says_what_it_wrote(tmp_path: Path, record: Record) -> None:
    """No browser needed: the option's contract on the command line."""
    cassette = record(tmp_path / "cassettes" / "test_x" / "test_y.jsonl", ("Hi",))
    out = tmp_path / "page.html"
    done = cli("report", "--html", out, cassette.parent)
    assert done.returncode == 1, done.stderr  # no test_x.py: an orphan, reported on the page
    assert done.stdout == f"wrote {out}: 1 cassette(s), {out.stat().st_size} bytes\n"
    text = out.read_text(encoding="utf-8")
    assert "You said: Hi" in text
    assert "http://" not in text.split("<body>")[0]
    # A file that cannot be read: the page is written without it, says why, exit 2.
    (cassette.parent / "broken.jsonl").write_text('{"format": "llmcassette"}\nnot json\n')
    done = cli("report", "--html", out, cassette.parent)
    assert done.returncode == 2
    assert "broken.jsonl:2: line is not valid JSON" in done.stderr
    assert done.stdout.startswith("wrote ")
    page = out.read_text(encoding="utf-8")
    assert "You said: Hi" in page
    assert '<section class="cassette unreadable"><h2>' in page
    assert "broken.jsonl:2: line is not valid JSON" in page
    both = cli("report", "--html", out, "--json", cassette.parent)
    assert both.returncode == 2
    assert "not allowed with argument" in both.stdout + both.stderr


def test_a_page_that_cannot_be_written_is_an_error_not_a_traceback(
    tmp_path: Path, record: Record
) -> None:
    # --html naming a folder raised IsADirectoryError with exit 1, the code of "problems
    # found", which the `|| test $? -eq 1` of a publishing CI step lets pass.
    cassette = record(tmp_path / "cassettes" / "test_x" / "test_y.jsonl", ("Hi",))
    folder = tmp_path / "out"
    folder.mkdir()
    done = cli("report", "--html", folder, cassette.parent)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{folder}: cannot write: Is a directory; not changed" in done.stderr
    assert done.stdout == ""
    assert list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cassettes", "out"]
