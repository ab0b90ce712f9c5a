"""Legacy interactions are looked up on vcrpy's URL matchers; an equal URI skips parsing it
again for each matcher, and must decide exactly as the matchers do."""

from __future__ import annotations

from typing import Any

import pytest
from vcr.matchers import requests_match
from vcr.request import Request

from llmcassette._vcr.drift import _requests_match, vcrpy_url_matchers

URI = "https://api.example.com/v1/chat?b=2&a=1"
PAIRS = [
    (("POST", URI), ("POST", URI)),
    (("post", URI), ("POST", URI)),  # a method recorded as the client spelt it
    (("GET", URI), ("POST", URI)),
    (("POST", URI), ("POST", "https://api.example.com/v1/chat?a=1&b=2")),  # query order
    (("POST", URI), ("POST", "https://api.example.com:443/v1/chat?b=2&a=1")),  # default port
    (("POST", URI), ("POST", "https://api.example.com/v1/chat?b=2")),
    (("POST", URI), ("POST", "http://api.example.com/v1/chat?b=2&a=1")),
]


def request(method: str, uri: str) -> Any:
    return Request(method, uri, b"{}", {})


@pytest.mark.parametrize(("incoming", "recorded"), PAIRS)
def test_the_shortcut_decides_as_vcrpys_url_matchers(
    incoming: tuple[str, str], recorded: tuple[str, str]
) -> None:
    matchers = vcrpy_url_matchers()
    expected = requests_match(request(*incoming), request(*recorded), matchers)
    assert _requests_match(request(*incoming), request(*recorded), matchers) is expected


def test_a_suites_own_matchers_are_always_asked() -> None:
    def never(incoming: Any, recorded: Any) -> None:
        raise AssertionError("the suite's own matcher says no")

    matchers = (*vcrpy_url_matchers(), never)
    assert not _requests_match(request("POST", URI), request("POST", URI), matchers)
