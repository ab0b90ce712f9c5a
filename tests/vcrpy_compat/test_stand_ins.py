"""llmcassette's httpx stand-ins: bound to each cassette as its patches are applied."""

from __future__ import annotations

from pathlib import Path

import httpx
import httpx2
import pytest
import vcr.patch

import llmcassette
from llmcassette._vcr import compat
from llmcassette._vcr.stubs import AsyncInterceptedMethod, InterceptedMethod
from llmcassette.testing import LocalProvider

PROMPT = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
AUTH = {"authorization": "Bearer sk-test"}


def _installed(library: object, class_name: str, method: str) -> object:
    return vars(getattr(library, class_name))[method]


def test_each_cassette_has_its_own_stand_ins_and_leaving_one_restores_the_outer(
    tmp_path: Path,
) -> None:
    original = _installed(httpx, "HTTPTransport", "handle_request")
    with llmcassette.use_cassette(tmp_path / "outer") as outer:
        stand_in = _installed(httpx, "HTTPTransport", "handle_request")
        # An object of llmcassette's own class, not a class vcrpy built for this cassette.
        assert type(stand_in) is InterceptedMethod
        assert stand_in.cassette is outer
        asynchronous = _installed(httpx2, "AsyncHTTPTransport", "handle_async_request")
        assert type(asynchronous) is AsyncInterceptedMethod
        assert asynchronous.cassette is outer
        with llmcassette.use_cassette(tmp_path / "inner") as inner:
            assert _installed(httpx, "HTTPTransport", "handle_request").cassette is inner
        assert _installed(httpx, "HTTPTransport", "handle_request") is stand_in
    assert _installed(httpx, "HTTPTransport", "handle_request") is original


def test_a_stand_in_called_through_the_transport_class_records_and_replays(
    tmp_path: Path,
) -> None:
    """``HTTPTransport.handle_request(transport, request)``, as a subclass's explicit call
    to its base may spell it, works as the bound call does."""
    path = tmp_path / "explicit.jsonl"
    with LocalProvider() as provider:
        request = httpx2.Request(
            "POST", f"{provider.url}/v1/chat/completions", json=PROMPT, headers=AUTH
        )
        with llmcassette.use_cassette(path), httpx2.HTTPTransport() as transport:
            live = httpx2.HTTPTransport.handle_request(transport, request)
            live.read()
        assert len(provider.requests) == 1
    with llmcassette.use_cassette(path, record_mode="none"), httpx2.HTTPTransport() as transport:
        replayed = httpx2.HTTPTransport.handle_request(transport, request)
        replayed.read()
    assert replayed.status_code == live.status_code == 200
    assert replayed.content == live.content


def test_a_vcrpy_that_subclasses_every_patch_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """llmcassette binds its stand-ins itself; a vcrpy that built a class of each bound
    one would fail on the first cassette, so the compatibility check names it first."""

    def always_subclass(builder: object, klass: object) -> object:
        return type("Subclass", (object,), {"cassette": None})

    monkeypatch.setattr(vcr.patch.CassettePatcherBuilder, "_get_cassette_subclass", always_subclass)
    assert compat.missing() == [
        "CassettePatcherBuilder applying a custom patch that holds its cassette"
    ]
