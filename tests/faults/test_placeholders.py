"""``{{fromRequest:...}}``: the rules for filling, escaping and failing."""

from __future__ import annotations

import json

import pytest
from vcr.request import Request

from llmcassette.errors import PlaceholderError
from llmcassette.faults import backtracking, placeholders


def request(body: object, uri: str = "http://127.0.0.1/v1/chat?trace=t-42") -> Request:
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body
    return Request("POST", uri, data, {"x-session": "s-777", "content-type": "application/json"})


def fill(text: str, req: Request, json_strings: bool = False) -> str:
    return placeholders.resolve(
        text, req, json_strings=json_strings, cassette="c.jsonl", location="interaction #1, body"
    )


def test_the_last_match_wins_and_its_first_group() -> None:
    req = request({"messages": [{"content": "ticket T-1"}, {"content": "ticket T-2 then T-3"}]})
    assert fill("id={{fromRequest:T-\\d}}", req) == "id=T-3"
    assert fill("id={{fromRequest:ticket (T-\\d)}}", req) == "id=T-2"


def test_a_pattern_may_end_in_a_brace_quantifier() -> None:
    req = request({"id": "call_12345678"})
    assert fill("<{{fromRequest:call_\\d{8}}}>", req) == "<call_12345678>"
    assert fill("{{fromRequest:(\\d{4})\\d{4}}}!", req) == "1234!"


def test_url_and_header_scopes() -> None:
    req = request({"x": 1})
    assert fill("{{fromRequest.url:trace=([\\w-]+)}}", req) == "t-42"
    assert fill("{{fromRequest.headers:s-\\d+}}", req) == "s-777"


def test_a_non_json_body_is_searched_as_text() -> None:
    assert fill("{{fromRequest:n=(\\d+)}}", request(b"a=1&n=99")) == "99"


def test_inside_json_strings_the_pattern_is_unescaped_and_the_value_escaped() -> None:
    req = request({"content": 'say "hi"\\now'})
    filled = fill('{"echo": "{{fromRequest:say (.*)}}"}', req, json_strings=True)
    assert json.loads(filled) == {"echo": '"hi"\\now'}
    assert fill('"{{fromRequest:\\\\d+}}"', request({"n": "a77"}), json_strings=True) == '"77"'


def test_escaped_markers_stay_literal() -> None:
    req = request({})
    assert fill("docs: {{!fromRequest:x}} and {{!!fromRequest:y}}", req) == (
        "docs: {{fromRequest:x}} and {{!fromRequest:y}}"
    )


def test_recording_escapes_and_replay_restores() -> None:
    recorded = "use {{fromRequest:x}} or {{!fromRequest:y}}"
    stored = placeholders.escape(recorded)
    assert stored == "use {{!fromRequest:x}} or {{!!fromRequest:y}}"
    assert fill(stored, request({})) == recorded


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{{fromRequest:abc", "unterminated placeholder"),
        ("{{fromRequest:(}}", "invalid regex"),
        ("{{fromRequest:zzz}}", "matches nothing in the request's body"),
        ("{{fromRequest}}", "malformed placeholder"),
        ("{{fromRequest.cookie:x}}", "malformed placeholder"),
    ],
)
def test_failures_name_the_cassette_and_location(text: str, problem: str) -> None:
    with pytest.raises(PlaceholderError) as raised:
        fill(text, request({"a": "b"}))
    message = str(raised.value)
    assert message.startswith("c.jsonl: interaction #1, body: ")
    assert problem in message
    assert raised.value.cassette == "c.jsonl"
    assert raised.value.location == "interaction #1, body"


def test_text_without_markers_is_returned_as_is() -> None:
    text = "no placeholders {{here}}"
    assert fill(text, request({})) is text


@pytest.mark.parametrize(
    "pattern",
    [
        "(a+)+$",  # a quantifier inside a repeated group
        "(\\\\w+\\\\s?)*$",
        "(ab|a.)+$",  # repeated alternatives that start alike
        "(a|)+",
        ".*.*.*.*.*.*.*.*.*.*=",  # quantifiers in a row that take the same characters
        "(.*) (.*)x",
        "\\\\w+\\\\d+",
        "a?a?a?a?aaaa",
    ],
)
def test_a_pattern_that_could_backtrack_without_end_is_refused_before_it_runs(
    pattern: str,
) -> None:
    # Each of these takes from seconds to centuries on a request of forty characters
    # ("a" * 40 + "!"): re has no time limit and holds the GIL, so it must never run.
    text = '{"echo": "{{fromRequest:' + pattern + '}}"}'
    with pytest.raises(PlaceholderError) as raised:
        placeholders.check(
            text, json_strings=True, cassette="c.jsonl", location="interaction #1, body"
        )
    message = str(raised.value)
    assert message.startswith("c.jsonl: interaction #1, body: refused {{fromRequest:")
    assert "could hang the replay" in message
    assert "one quantifier alone can take each character" in message


@pytest.mark.parametrize(
    ("pattern", "body", "value"),
    [
        ("ticket ([0-9a-f-]{36})", "ticket " + "5f0c8a6e-3b7e-4c43-9d7a-2a1f0e6b9c11", None),
        ("model (.*)", "model gpt-4o", "gpt-4o"),
        ("(\\d+)-(\\d+)", "pages 12-34", "12"),
        ("key=(\\w+)&id=(\\w+)", "key=k1&id=i2", "k1"),
        ("\\s*(\\d+)", "  42", "42"),
        ("https?://([^/]+)", "see https://example.test/x", "example.test"),
        ("(?:ab|cd)+x", "abcdx", "abcdx"),
        ("(\\d{3}-)+", "555-123-", "123-"),
        ("(\\d{4})\\d{4}", "call_12345678", "1234"),
    ],
)
def test_patterns_that_backtrack_boundedly_still_work(
    pattern: str, body: str, value: str | None
) -> None:
    expected = body.removeprefix("ticket ") if value is None else value
    assert fill("{{fromRequest:" + pattern + "}}", request({"content": body})) == expected


@pytest.mark.parametrize("depth", [600, 800, 5000])
def test_a_pattern_of_groups_nested_hundreds_deep_is_a_placeholder_error(depth: int) -> None:
    # re's parser recurses once per group, the backtracking check twice: a RecursionError
    # either way, from a sidecar anyone can write.
    pattern = "(?:" * depth + "a" + ")" * depth
    with pytest.raises(PlaceholderError, match="nest too deeply"):
        placeholders.check(
            "{{fromRequest:" + pattern + "}}",
            json_strings=False,
            cassette="c.jsonl",
            location="interaction #1, body",
        )


@pytest.mark.parametrize(
    ("pattern", "run"),
    [
        (".*!", "a"),
        ("[^!]*!", "a"),
        ("\\\\s*x", " "),
        ("a*b", "a"),
        ("(\\\\d+)-(\\\\d+)", "7"),
        ("(?:ab|cd)+x", "ab"),
        ("model (.*)x", "a"),
    ],
)
def test_a_pattern_of_quadratic_search_time_is_refused_on_a_long_run(
    pattern: str, run: str
) -> None:
    # A failed search for these starts over at each character of the run its repeat takes:
    # O(n^2). Before they were refused, ".*!" ran 3.5 s on the 50,000 characters here and
    # 18 minutes on the megabyte of a base64 image; "(\\d+)-(\\d+)" 72 s on 100,000 digits.
    body = {"content": [{"text": "ticket T-1"}, {"image": run * (50_000 // len(run))}]}
    text = '{"echo": "{{fromRequest:' + pattern + '}}"}'
    with pytest.raises(PlaceholderError) as raised:
        fill(text, request(body), json_strings=True)
    message = str(raised.value)
    assert message.startswith("c.jsonl: interaction #1, body: refused {{fromRequest:")
    assert "quadratic in the run" in message
    assert "the longest: 50,000" in message
    assert raised.value.code.startswith("LC503")


@pytest.mark.parametrize(
    ("pattern", "quadratic"),
    [
        (".*?!", True),  # lazy: it grows one character at a time, to the end all the same
        ("(?=.*!)", True),
        ("\\w+$", True),
        ("a\\w+-", True),  # what comes before the repeat is a character it takes
        ("model (.*)x", True),
        (".{0,500}!", True),
        (".{0,50}!", False),  # short: at most 50 characters a start
        ("model (.*)", False),  # a match once reached: the search goes on past it
        ("\\n.*x", False),  # each start holds a character the repeat cannot take
        ("/(\\w+)$", False),
        ("key=(\\w+)&id=(\\w+)", False),
        ("https?://([^/]+)", False),
        ("(\\d{3}-)+", False),
    ],
)
def test_which_patterns_search_in_quadratic_time(pattern: str, quadratic: bool) -> None:
    assert backtracking.quadratic_repeat(pattern) is quadratic


def test_many_strings_add_up_to_the_search_limit() -> None:
    # A chat history of short messages costs what one long string of its size costs.
    body = {"messages": [{"content": "b" * 2_000} for _ in range(30)]}
    with pytest.raises(PlaceholderError, match="quadratic in the run"):
        fill("{{fromRequest:.*!}}", request(body))
    assert fill("{{fromRequest:(b)!?}}", request(body)) == "b"


@pytest.mark.parametrize(
    ("pattern", "value"),
    [("ticket (T-\\\\d)", "T-1"), ("say (.*)", "hi"), ('\\"([^\\"]*)\\"', "q")],
)
def test_a_pattern_of_linear_search_time_runs_on_megabytes(pattern: str, value: str) -> None:
    texts = [{"text": "ticket T-1"}, {"text": "say hi"}, {"text": '"q"'}]
    body = {"content": [*texts, {"image": "a" * 1_000_000}]}
    text = '{"echo": "{{fromRequest:' + pattern + '}}"}'
    assert fill(text, request(body), json_strings=True) == '{"echo": "' + value + '"}'


def test_a_quadratic_pattern_runs_on_long_text_without_long_runs_of_what_it_repeats() -> None:
    # A system prompt of 200,000 characters of words holds no long run of digits: the
    # search for (\d+)-(\d+) is linear in it, so it is not refused (nor is ".*!" on many
    # short lines).
    prose = "Answer briefly, in plain words, and cite pages 12-34 when asked. " * 3_000
    body = {"messages": [{"role": "system", "content": prose}, {"content": "pages 56-78"}]}
    assert fill("{{fromRequest:(\\d+)-(\\d+)}}", request(body)) == "56"
    lines = {"content": "a line of text\n" * 20_000 + "done!"}
    assert fill("{{fromRequest:(.*)!}}", request(lines)) == "done"


def test_a_quadratic_pattern_still_runs_on_a_short_request() -> None:
    assert fill("{{fromRequest:(\\d+)-(\\d+)}}", request({"content": "pages 12-34"})) == "12"
