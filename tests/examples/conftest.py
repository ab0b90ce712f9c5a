"""The project's example cassettes: recorded into ``cassettes/`` by ``nox -s record``.

In the normal test run (pytest-recording's record mode ``none``) the provider is not started
and every request is answered from the committed cassettes. When recording, the bundled
local provider runs on a free port; requests are stored under one stable origin,
``http://llm.local``, so the cassettes do not depend on the port of the day.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmcassette.testing import LocalProvider

ROOT = Path(__file__).resolve().parents[2]
STABLE_ORIGIN = "http://llm.local"
_LOCAL_ORIGIN = re.compile(r"^http://127\.0\.0\.1:\d+")


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    return str(ROOT / "cassettes" / request.node.path.stem)


def _stable_origin(request: Any) -> Any:
    request.uri = _LOCAL_ORIGIN.sub(STABLE_ORIGIN, request.uri)
    if "host" in request.headers:
        request.headers["host"] = "llm.local"
    return request


@pytest.fixture
def vcr_config() -> dict[str, Any]:
    return {"before_record_request": _stable_origin}


@pytest.fixture
def base_url(record_mode: str) -> Iterator[str]:
    """The provider's URL while recording; an address nobody listens on while replaying."""
    if record_mode == "none":
        yield "http://127.0.0.1:9"
        return
    with LocalProvider() as provider:
        yield provider.url
