"""Record real clients through llmcassette and check no planted secret reaches the file."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
import requests

import llmcassette
from llmcassette.errors import SecretLeakError
from llmcassette.redact import RedactionConfig
from llmcassette.testing import LocalProvider

from ._server import serving
from .test_rules import ANTHROPIC, OPENAI, OPENAI_2

GOOGLE = "AIza" + "Sy" + "Q" * 33
GITHUB = "ghp_" + "R" * 36
COOKIE = "cookievalue0123456789"
ORG = "org-PlantedOrganization42"
SECRETS = [OPENAI, OPENAI_2, ANTHROPIC, GOOGLE, GITHUB, COOKIE, ORG, "s3cr3t-pa55word"]


class _Planted(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer()

    def _answer(self) -> None:
        path = self.path.split("?", 1)[0]
        headers = {
            "set-cookie": f"__cf_bm={COOKIE}; path=/; HttpOnly",
            "openai-organization": ORG,
            "x-echo-key": GITHUB,
            "cf-ray": "8abcdef-CDG",
        }
        if path == "/json":
            body = json.dumps(
                {"a": {"b": [{"api_key": "s3cr3t-pa55word", "note": f"key {OPENAI}"}]}}
            ).encode()
            headers["content-type"] = "application/json"
        elif path == "/sse":
            parts = ["Here: ", OPENAI_2[:20], OPENAI_2[20:], " done"]
            events = [
                "data: " + json.dumps({"choices": [{"delta": {"content": p}}]}) + "\n\n"
                for p in parts
            ]
            body = ("".join(events) + "data: [DONE]\n\n").encode()
            headers["content-type"] = "text/event-stream"
        elif path == "/ndjson":
            lines = [json.dumps({"message": {"content": ANTHROPIC}}), json.dumps({"done": True})]
            body = ("\n".join(lines) + "\n").encode()
            headers["content-type"] = "application/x-ndjson"
        else:  # gzip
            body = gzip.compress(json.dumps({"token_info": GOOGLE}).encode())
            headers["content-type"] = "application/json"
            headers["content-encoding"] = "gzip"
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def planted() -> Iterator[str]:
    with serving(_Planted) as url:
        yield url


CLIENTS = {"httpx": httpx.Client, "httpx2": httpx2.Client}


def _traffic(base: str, client_class: Any = httpx.Client) -> list[object]:
    seen: list[object] = []
    with client_class() as client:
        auth = {
            "authorization": f"Bearer {OPENAI}",
            "x-api-key": ANTHROPIC,
            "cookie": "a=" + COOKIE,
        }
        seen.append(client.get(f"{base}/json?key={GOOGLE}", headers=auth).json())
        seen.append(client.get(f"{base}/sse", headers=auth).text)
        seen.append(client.get(f"{base}/ndjson", headers=auth).text)
        seen.append(client.get(f"{base}/gzip", headers=auth).json())
        form = {"client_secret": "s3cr3t-pa55word", "grant_type": "x"}
        seen.append(client.post(f"{base}/json", data=form, headers=auth).status_code)
        seen.append(
            client.post(f"{base}/json", json={"password": "s3cr3t-pa55word", "q": GITHUB}).json()
        )
    return seen


def _assert_clean(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in text
    assert "T3BlbkFJ" not in text
    assert json.loads(text.split("\n", 1)[0])["redaction"]["rules"] == "llmcassette-default"


@pytest.mark.parametrize("client", CLIENTS)
def test_planted_secrets_never_reach_the_cassette_and_it_replays(
    planted: str, tmp_path: Path, client: str
) -> None:
    path = tmp_path / "planted.jsonl"
    with llmcassette.use_cassette(path, record_mode="once"):
        recorded = _traffic(planted, CLIENTS[client])
    _assert_clean(path)
    text = path.read_text()
    assert "cf-ray" not in text
    assert "<REDACTED:openai-api-key:2>" in text  # the key split across two SSE events
    with llmcassette.use_cassette(path, record_mode="none"):
        replayed = _traffic(planted, CLIENTS[client])
    assert len(replayed) == len(recorded)
    assert replayed[4] == recorded[4] == 200


@pytest.mark.parametrize("stream", [False, True])
def test_openai_sdk_with_a_real_looking_key(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "openai.jsonl"
    messages = [{"role": "user", "content": f"Is {GITHUB} a token?"}]

    def call(key: str, base_url: str) -> str:
        client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
        with client:
            if stream:
                chunks = client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=messages,
                    stream=True,  # type: ignore[arg-type]
                )
                return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            done = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
            return done.choices[0].message.content or ""

    with LocalProvider() as provider, llmcassette.use_cassette(path):
        recorded = call(OPENAI, provider.openai_base_url)
        base_url = provider.openai_base_url
    _assert_clean(path)
    # Replay with another real key: the redacted request matches (symmetric redaction), and the
    # prompt holding a redacted token still matches itself.
    with llmcassette.use_cassette(path, record_mode="none"):
        replayed = call(OPENAI_2, base_url)
    # The provider echoed the token: the response is stored (and replayed) redacted.
    assert replayed == recorded.replace(GITHUB, "<REDACTED:github-token>")
    assert GITHUB in recorded


def test_mismatch_error_shows_no_key(planted: str, tmp_path: Path) -> None:
    path = tmp_path / "mismatch.jsonl"
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(f"{planted}/json", json={"q": "first"})
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        httpx.Client() as client,
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        client.post(
            f"{planted}/json?key={GOOGLE}",
            json={"q": f"second {OPENAI}", "api_key": "s3cr3t-pa55word"},
            headers={"authorization": f"Bearer {OPENAI}"},
        )
    rendered = "".join(
        str(e) for e in (caught.value, caught.value.__cause__, caught.value.__context__) if e
    )
    assert "incoming 'second <REDACTED:openai-api-key>'" in rendered
    for secret in (GOOGLE, OPENAI, "s3cr3t-pa55word"):
        assert secret not in rendered


def test_fail_closed_when_a_secret_slips_through(
    planted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "leak.jsonl"
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.get(f"{planted}/json")
    before = path.read_bytes()
    from llmcassette.redact.redactor import Redactor

    monkeypatch.setattr(
        Redactor, "records", lambda self, *records, **options: None
    )  # a redactor bug
    with (
        pytest.raises(SecretLeakError) as caught,
        llmcassette.use_cassette(path, record_mode="all"),
        httpx.Client() as client,
    ):
        client.get(f"{planted}/json", headers={"x-api-key": ANTHROPIC})
    error = caught.value
    assert path.read_bytes() == before
    assert error.path == str(path)
    assert error.line is not None
    assert error.line >= 2
    assert error.json_path.startswith("headers.")
    assert error.rule
    for secret in SECRETS:
        assert secret not in str(error)


def test_fail_closed_with_a_literal_rule_only_the_scanner_knows(
    planted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmcassette.redact import scan

    path = tmp_path / "leak2.jsonl"
    strict = llmcassette.redact.Redactor(
        RedactionConfig(literals=(("first-prompt", "prompt"),)), environ={}
    )
    real_check = scan.check_text
    monkeypatch.setattr(
        scan, "check_text", lambda _rules, text, p: real_check(strict.rules, text, p)
    )
    with (
        pytest.raises(SecretLeakError, match="prompt"),
        llmcassette.use_cassette(path),
        httpx.Client() as client,
    ):
        client.post(f"{planted}/json", json={"q": "first-prompt"})
    assert not path.exists()


def test_user_before_record_request_is_composed(planted: str, tmp_path: Path) -> None:
    import vcr

    calls: list[str] = []

    def mine(request: object) -> object:
        calls.append("mine")
        return request

    my_vcr = llmcassette.configure(vcr.VCR(before_record_request=mine))
    path = tmp_path / "composed.jsonl"
    with my_vcr.use_cassette(str(path)), httpx.Client() as client:
        client.get(f"{planted}/json", headers={"authorization": f"Bearer {OPENAI}"})
    assert calls
    _assert_clean(path)


def test_redaction_can_be_turned_off(planted: str, tmp_path: Path) -> None:
    path = tmp_path / "off.jsonl"
    with llmcassette.use_cassette(path, redaction=False), httpx.Client() as client:
        client.get(f"{planted}/json", headers={"x-custom": "sk-visible-on-purpose"})
    assert "sk-visible-on-purpose" in path.read_text()
    assert "redaction" not in json.loads(path.read_text().split("\n", 1)[0])


SHAPELESS = "Zq7RmT2vX9kLp4Wn8Yd3Hs6Jc1Fb5Gt0"  # a key with no recognizable shape (Mistral-like)


def test_environment_values_userinfo_and_basic_auth_with_requests(
    planted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", SHAPELESS)
    path = tmp_path / "requests.jsonl"
    host = planted.removeprefix("http://")

    def traffic() -> list[object]:
        with requests.Session() as session:
            return [
                session.post(
                    f"{planted}/json",
                    json={"model": "mistral-small", "key_hint": SHAPELESS},
                    headers={"x-custom-auth": SHAPELESS},
                ).json(),
                session.get(f"http://reader:{COOKIE}@{host}/json").status_code,
                session.get(f"{planted}/sse", auth=("reader", "s3cr3t-pa55word")).text,
            ]

    with llmcassette.use_cassette(path, record_mode="once"):
        recorded = traffic()
    text = path.read_text()
    for secret in [SHAPELESS, COOKIE, "s3cr3t-pa55word", OPENAI_2]:
        assert secret not in text
    assert "<REDACTED:env-MISTRAL_API_KEY>" in text
    with llmcassette.use_cassette(path, record_mode="none"):
        assert len(traffic()) == len(recorded)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_sdk_with_a_real_looking_key(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "anthropic.jsonl"
    messages: Any = [{"role": "user", "content": "hello"}]

    def call(key: str, base_url: str) -> str:
        with anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0) as client:
            if stream:
                with client.messages.stream(
                    model="claude-haiku-4-5", max_tokens=32, messages=messages
                ) as events:
                    return "".join(events.text_stream)
            message = client.messages.create(
                model="claude-haiku-4-5", max_tokens=32, messages=messages
            )
            return "".join(block.text for block in message.content if block.type == "text")

    with LocalProvider() as provider, llmcassette.use_cassette(path):
        recorded = call(ANTHROPIC, provider.anthropic_base_url)
        base_url = provider.anthropic_base_url
    text = path.read_text()
    assert ANTHROPIC not in text
    assert "<REDACTED:anthropic-api-key>" in text
    with llmcassette.use_cassette(path, record_mode="none"):
        assert call("sk-ant-api03-" + "Z" * 93, base_url) == recorded


def test_the_same_secret_keeps_its_placeholder_across_sessions(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"

    def ask(url: str, key: str, prompt: str) -> None:
        httpx.post(
            f"{url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": f"{prompt} {key}"}]},
            headers={"authorization": "Bearer sk-test"},
        )

    with LocalProvider() as provider:
        with llmcassette.use_cassette(path, record_mode="new_episodes"):
            ask(provider.url, OPENAI, "first")
        with llmcassette.use_cassette(path, record_mode="new_episodes"):
            ask(provider.url, OPENAI, "second")
    text = path.read_text()
    assert "first <REDACTED:openai-api-key>" in text
    assert "second <REDACTED:openai-api-key>" in text
    assert OPENAI not in text


# The local provider's model fills a second string property with "example <name>": a
# password with no shape, that only its key says is secret.
PASSWORD = "example password"
LOGIN_TOOL = {
    "type": "function",
    "function": {
        "name": "login",
        "parameters": {
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "password": {"type": "string"},
            },
        },
    },
}


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_call_with_a_password_argument_replays_as_recorded(
    tmp_path: Path, stream: bool
) -> None:
    # The arguments are JSON text in a string, streamed in pieces or not: the model's
    # words (issue #25). The next turn sends them back in the request's history, where they
    # are still the model's words: redacted there, the value became a known secret and was
    # taken out of the recorded answer too, so replay handed the code a placeholder.
    path = tmp_path / "tools.jsonl"
    question = [{"role": "user", "content": "log me in as bob"}]

    def call(base_url: str) -> tuple[str, str]:
        client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
        with client:
            if stream:
                chunks = client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=question,
                    tools=[LOGIN_TOOL],
                    stream=True,  # type: ignore[list-item]
                )
                calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices]
                arguments = "".join(c[0].function.arguments or "" for c in calls if c)  # type: ignore[union-attr]
                call_id = next(c[0].id for c in calls if c and c[0].id)
            else:
                done = client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=question,
                    tools=[LOGIN_TOOL],  # type: ignore[list-item]
                )
                tool_call = done.choices[0].message.tool_calls[0]  # type: ignore[index]
                arguments, call_id = tool_call.function.arguments, tool_call.id  # type: ignore[union-attr]
            follow_up = [
                *question,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "login", "arguments": arguments},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": "logged in"},
            ]
            answer = client.chat.completions.create(model="gpt-4o-mini", messages=follow_up)  # type: ignore[arg-type]
            return arguments, answer.choices[0].message.content or ""

    with LocalProvider() as provider, llmcassette.use_cassette(path):
        recorded = call(provider.openai_base_url)
        base_url = provider.openai_base_url
    assert json.loads(recorded[0])["password"] == PASSWORD
    text = path.read_text()
    assert "<REDACTED:password>" not in text
    with llmcassette.use_cassette(path, record_mode="none"):
        replayed = call(base_url)
    assert replayed == recorded
    assert replayed[1] == "The tool returned: logged in"


@pytest.mark.parametrize("stream", [False, True])
def test_an_anthropic_tool_use_with_a_password_input_replays_as_recorded(
    tmp_path: Path, stream: bool
) -> None:
    # Streamed, the input arrives as JSON text in `partial_json` pieces; not streamed, it
    # is a JSON object in the body. Either way it is the model's output, which a test
    # replays and checks: a `password` in a response is no credential unless it looks like
    # a token or the client sent it (issue #25). The client's key is still redacted.
    path = tmp_path / "tools.jsonl"
    tool = {"name": "login", "input_schema": LOGIN_TOOL["function"]["parameters"]}  # type: ignore[index]

    def call(base_url: str) -> dict[str, Any]:
        client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-test", max_retries=0)
        with client:
            arguments = {
                "model": "claude-3-5-haiku-latest",
                "max_tokens": 100,
                "messages": [{"role": "user", "content": "log me in as bob"}],
                "tools": [tool],
            }
            if stream:
                with client.messages.stream(**arguments) as events:  # type: ignore[arg-type]
                    message = events.get_final_message()
            else:
                message = client.messages.create(**arguments)  # type: ignore[arg-type]
        block = next(b for b in message.content if b.type == "tool_use")
        return dict(block.input)  # type: ignore[union-attr]

    with LocalProvider() as provider, llmcassette.use_cassette(path):
        recorded = call(provider.anthropic_base_url)
        base_url = provider.anthropic_base_url
    assert recorded["password"] == PASSWORD
    text = path.read_text()
    assert "<REDACTED:password>" not in text
    assert "sk-ant-test" not in text
    with llmcassette.use_cassette(path, record_mode="none"):
        assert call(base_url) == recorded
