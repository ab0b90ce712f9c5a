"""A mismatch shows each side as the request holds it, even where matching reads an empty
value as absent (``empty_is_absent``): ``recorded {}``, not ``recorded (absent)``.

Found on agno's telemetry (helper round 5): the cassette held ``"data": {}`` and the
message said the recorded request had no ``data`` at all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from vcr.request import Request

from llmcassette.matching.jsondiff import Missing
from llmcassette.matching.normalize import MatchConfig
from llmcassette.matching.report import compare


def request(body: dict[str, Any]) -> Request:
    headers = {"content-type": "application/json"}
    return Request("POST", "https://api.example/v1/run", json.dumps(body), headers)


@pytest.mark.parametrize(
    ("recorded", "incoming", "path", "shown"),
    [
        ({"data": {}}, {"data": {"learnings": False}}, "body.data", ({}, {"learnings": False})),
        ({"tools": []}, {"tools": [{"name": "f"}]}, "body.tools", ([], [{"name": "f"}])),
        ({"a": {"b": {}}}, {"a": {"b": {"c": 1}}}, "body.a", ({"b": {}}, {"b": {"c": 1}})),
        ({"n": 1}, {"n": 1, "extra": 2}, "body.extra", (Missing, 2)),  # truly absent
    ],
)
def test_each_side_is_shown_as_the_request_holds_it(
    recorded: dict[str, Any], incoming: dict[str, Any], path: str, shown: tuple[Any, Any]
) -> None:
    (difference,) = compare(request(incoming), request(recorded), MatchConfig())
    assert difference.path == path
    if shown[0] is Missing:
        assert isinstance(difference.recorded, Missing)
    else:
        assert difference.recorded == shown[0]
    assert difference.incoming == shown[1]
    if shown[0] == {}:
        assert difference.describe() == f"{path}: recorded {{}}, incoming {shown[1]!r}"


def test_a_placeholder_in_the_recorded_url_is_a_difference_as_the_lookup_sees_it() -> None:
    # The lookup matches the URL as it is (both sides redacted); the report filled the
    # placeholder as it does in a body, found no difference, and called the request
    # "recorded 1 such call, all played already" beside "0 played" (red team, round 2).
    recorded = Request("GET", "https://api.example/v1/verify/<REDACTED:jwt>/x", None, {})
    incoming = Request("GET", "https://api.example/v1/verify/other/x", None, {})
    (difference,) = compare(incoming, recorded, MatchConfig())
    assert difference.path == "url.path"
    # in a body, a recorded placeholder still accepts the live value
    body = compare(
        request({"password": "hunter2"}),
        request({"password": "<REDACTED:password>"}),
        MatchConfig(),
    )
    assert body == ()
