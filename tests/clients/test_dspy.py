"""DSPy records and replays on both its engines.

DSPy 3.4's ``dspy.LM`` picks its engine with ``engine="auto"``: lm15, vendored in DSPy, which
speaks HTTP/1.1 over the standard library's ``socket`` itself; under a cassette llmcassette
sends its requests through httpx instead (``llmcassette.transport.lm15``). With
``engine="litellm"`` the calls go through litellm and httpx, and record and replay like
litellm's own (docs/recipes.md, "DSPy"). ``dspy.Parallel`` runs its calls in threads.
Runs in the ``frameworks`` nox session; skipped where dspy is missing.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

import llmcassette
from llmcassette.testing import LocalProvider

from ._record_replay import record_then_replay

# DSPy opens its disk cache when imported: keep it out of the home folder.
os.environ.setdefault("DSPY_CACHEDIR", os.path.join(tempfile.gettempdir(), "llmcassette-dspy"))
dspy = pytest.importorskip("dspy")

KEY = "sk-proj-" + "DspyRecordingKey" * 3


def question(n: int) -> dict[str, str]:
    # The local provider echoes the prompt: the answer field it "writes" is in the question.
    return {"question": f"What is {n} plus {n}?\n\n[[ ## answer ## ]]\n{2 * n}"}


def lm(provider: LocalProvider, engine: str = "litellm") -> Any:
    return dspy.LM(
        "openai/gpt-4o-mini",
        api_base=provider.openai_base_url,
        api_key=KEY,
        cache=False,
        num_retries=0,
        engine=engine,
    )


def requests_in(cassette: Path) -> int:
    return cassette.read_text().count('"type":"request"') if cassette.exists() else 0


def test_predict_sync_and_async(tmp_path: Path) -> None:
    def run(provider: LocalProvider) -> list[str]:
        predict = dspy.Predict("question -> answer")
        with dspy.context(lm=lm(provider)):
            first = predict(**question(1)).answer
            second = asyncio.run(predict.acall(**question(2))).answer
        return [first, second]

    recorded, replayed, cassette = record_then_replay(tmp_path, run)
    assert replayed == recorded
    assert [answer.split()[0] for answer in replayed] == ["2", "4"]
    assert requests_in(cassette) == 2
    assert KEY not in cassette.read_text()


@pytest.mark.parametrize("engine", ["litellm", "lm15"])
def test_parallel_runs_in_threads(tmp_path: Path, engine: str) -> None:
    def run(provider: LocalProvider) -> list[str]:
        predict = dspy.Predict("question -> answer")
        with dspy.context(lm=lm(provider, engine=engine)):
            results = dspy.Parallel(num_threads=4)([(predict, question(n)) for n in range(6)])
        return [result.answer for result in results]

    recorded, replayed, cassette = record_then_replay(tmp_path, run)
    assert replayed == recorded
    assert [answer.split()[0] for answer in replayed] == [str(2 * n) for n in range(6)]
    assert requests_in(cassette) == 6


@pytest.mark.parametrize("engine", ["auto", "lm15"])
def test_the_default_engine_records_and_replays(tmp_path: Path, engine: str) -> None:
    # lm15 speaks HTTP over its own sockets; under a cassette it goes through httpx.
    def run(provider: LocalProvider) -> list[str]:
        predict = dspy.Predict("question -> answer")
        with dspy.context(lm=lm(provider, engine=engine)):
            first = predict(**question(3)).answer
            second = asyncio.run(predict.acall(**question(4))).answer
        return [first, second]

    recorded, replayed, cassette = record_then_replay(tmp_path, run)
    assert replayed == recorded
    assert [answer.split()[0] for answer in replayed] == ["6", "8"]
    assert requests_in(cassette) == 2
    assert KEY not in cassette.read_text()


def test_the_default_engine_streams_event_by_event(tmp_path: Path) -> None:
    def run(provider: LocalProvider) -> list[str]:
        predict = dspy.streamify(
            dspy.Predict("question -> answer"),
            stream_listeners=[dspy.streaming.StreamListener(signature_field_name="answer")],
        )

        async def chunks() -> list[str]:
            return [
                chunk.chunk
                async for chunk in predict(**question(5))
                if isinstance(chunk, dspy.streaming.StreamResponse)
            ]

        with dspy.context(lm=lm(provider, engine="lm15")):
            return asyncio.run(chunks())

    recorded, replayed, cassette = record_then_replay(tmp_path, run)
    assert replayed == recorded
    assert "".join(replayed).split()[0] == "10"
    assert cassette.read_text().count('"type":"event"') > 1


def test_lm15_transport_errors_stay_lm15_errors(tmp_path: Path) -> None:
    # What lm15's providers catch: a refused connection is its ConnectError, as without a
    # cassette, not httpx's.
    from dspy._vendor.lm15 import transports

    with LocalProvider() as provider:
        url = provider.openai_base_url + "/models"
    request = transports.TransportRequest("GET", url, [("authorization", f"Bearer {KEY}")])
    # the cassette says at its exit that the refused call is not in it
    with (
        pytest.warns(llmcassette.FailedRequestNotRecordedWarning, match="ConnectError after"),
        llmcassette.use_cassette(tmp_path / "down.jsonl", record_mode="all"),
        transports.StdlibTransport() as transport,
        pytest.raises(transports.ConnectError) as caught,
    ):
        transport.stream(request)
    assert type(caught.value.__cause__).__name__ == "ConnectError"  # httpx's: it went through
    assert type(caught.value.__cause__).__module__.startswith("httpx")


def test_the_model_price_list_dspy_fetches_is_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DSPy fetches litellm's price list (3 MB) on first use, inside whichever test calls a
    # model first; recorded, it made that cassette 3 MB larger and test order matter.
    import gzip
    import http.server
    import threading
    from importlib.resources import files

    from dspy.clients import model_metadata

    price_list = gzip.decompress(
        files(model_metadata.__package__).joinpath("snapshot.json.gz").read_bytes()
    )
    fetched: list[str] = []

    class PriceList(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            fetched.append(self.path)
            self.send_response(200)
            self.send_header("content-length", str(len(price_list)))
            self.end_headers()
            self.wfile.write(price_list)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PriceList)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/prices.json"
    monkeypatch.setenv("LITELLM_MODEL_COST_MAP_URL", url)  # as its default, on GitHub, is
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP")  # set for litellm in conftest.py
    monkeypatch.setattr(model_metadata, "_data", None)  # not fetched yet in this process

    def run(provider: LocalProvider) -> str:
        with dspy.context(lm=lm(provider, engine="auto")):  # "auto" reads the list
            return str(dspy.Predict("question -> answer")(**question(6)).answer)

    try:
        recorded, replayed, cassette = record_then_replay(tmp_path, run)
    finally:
        server.shutdown()
        server.server_close()
    assert fetched == ["/prices.json"], "DSPy fetched the list, through no cassette"
    assert replayed == recorded
    assert requests_in(cassette) == 1
    assert cassette.stat().st_size < 100_000
