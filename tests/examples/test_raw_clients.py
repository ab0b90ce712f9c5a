"""Example cassettes recorded through raw httpx2 and httpx clients."""

from __future__ import annotations

import json

import httpx
import httpx2
import pytest


@pytest.mark.vcr
def test_ndjson_stream_with_httpx2(base_url: str) -> None:
    with (
        httpx2.Client() as http,
        http.stream(
            "POST",
            f"{base_url}/api/chat",
            json={"model": "llama3", "messages": [{"role": "user", "content": "Hi there"}]},
        ) as response,
    ):
        objects = [json.loads(line) for line in response.iter_lines() if line]
    assert objects[-1]["done"] is True
    assert "".join(o["message"]["content"] for o in objects) == "You said: Hi there"


@pytest.mark.vcr
async def test_gzip_json_with_async_httpx(base_url: str) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.get(
            f"{base_url}/v1/models", headers={"authorization": "Bearer sk-example"}
        )
    assert response.status_code == 200
    assert response.json()["object"] == "list"
