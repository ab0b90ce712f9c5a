"""The transport reads httpx headers as httpx does, without its per-header decoding cost."""

from __future__ import annotations

import httpx
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette._vcr.stubs import _header_items, _joined

NAMES = st.sampled_from(
    ["Host", "X-Request-Id", "x-request-id", "Set-Cookie", "Accept", "X-É".encode(), b"X-\xc9"]
)
VALUES = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    st.binary(max_size=8).filter(lambda b: b"\r" not in b and b"\n" not in b),
    st.text(max_size=6)
    .map(lambda t: t.encode("utf-8", "surrogatepass"))
    .filter(lambda b: b"\r" not in b and b"\n" not in b and b"\x00" not in b),
)


@pytest.mark.parametrize("library", [httpx, httpx2])
@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(pairs=st.lists(st.tuples(NAMES, VALUES), max_size=8))
def test_header_items_are_httpx_own(library: object, pairs: list[tuple[object, object]]) -> None:
    headers = library.Headers(pairs)  # type: ignore[attr-defined]
    assert _header_items(headers) == headers.multi_items()
    assert list(_joined(_header_items(headers))) == list(headers.items())


def test_ascii_headers_take_the_direct_way() -> None:
    headers = httpx2.Headers([("Content-Type", "text/event-stream"), ("X-Id", "1"), ("x-id", "2")])
    assert _header_items(headers) == [
        ("content-type", "text/event-stream"),
        ("x-id", "1"),
        ("x-id", "2"),
    ]
    assert dict(_joined(_header_items(headers))) == {
        "content-type": "text/event-stream",
        "x-id": "1, 2",
    }


def test_headers_not_in_ascii_are_decoded_as_httpx_decodes_them() -> None:
    utf8 = httpx2.Headers([("X-Name", "café".encode())])
    latin = httpx2.Headers([("X-Name", b"\xff")])
    assert _header_items(utf8) == [("x-name", "café")]
    assert _header_items(latin) == [("x-name", "ÿ")]
