"""What ``llm_body`` reads as the same JSON, and what not: each equality is one a server's
JSON parser makes too, and each difference one the model could see."""

from __future__ import annotations

import pytest
from vcr.request import Request

from llmcassette.matching.matchers import LlmBody


def request(body: bytes) -> Request:
    headers = {"content-type": "application/json"}
    return Request("POST", "https://api.example/v1/chat/completions", body, headers)


@pytest.mark.parametrize(
    ("recorded", "incoming"),
    [
        (b'{"p":"x","p":"y"}', b'{"p":"y"}'),  # a repeated key: the last one wins
        (b'{"t":1}', b'{"t":1.0}'),
        (b'{"t":1}', b'{"t":1e0}'),
        (b'{"t":0.1}', b'{"t":0.10000000000000001}'),  # the same double
        (b'{"p":"caf\\u00e9"}', '{"p":"café"}'.encode()),  # an escape is its character
        (b'{"a":1,"b":2}', b'{ "b" : 2,\n "a" : 1 }'),
    ],
)
def test_the_same_json(recorded: bytes, incoming: bytes) -> None:
    assert LlmBody().differences(request(incoming), request(recorded)) == []


@pytest.mark.parametrize(
    ("recorded", "incoming", "path"),
    [
        (b'{"p":"x","p":"y"}', b'{"p":"x"}', "body.p"),
        (b'{"s":12345678901234567890}', b'{"s":12345678901234567891}', "body.s"),  # exact
        (b'{"s":9007199254740993}', b'{"s":9007199254740992.0}', "body.s"),
        ('{"p":"café"}'.encode(), '{"p":"cafe\u0301"}'.encode(), "body.p"),  # not normalized
        (b'{"a":[1,2]}', b'{"a":[2,1]}', "body.a"),
        (b'{"a":true}', b'{"a":1}', "body.a"),
        (b'{"a":"1"}', b'{"a":1}', "body.a"),
    ],
)
def test_different_json(recorded: bytes, incoming: bytes, path: str) -> None:
    (difference,) = LlmBody().differences(request(incoming), request(recorded))
    assert difference.path == path
