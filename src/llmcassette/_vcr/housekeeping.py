"""Requests SDKs make for themselves, which a cassette neither records nor answers.

DSPy fetches litellm's model price list (3 MB of JSON from GitHub) once per process, inside
whichever test first calls a model. Recorded, it made that test's cassette 3 MB larger, and
replaying the tests in another order (``-k``, pytest-xdist) left it unplayed in one test's
cassette and missing from another's. Such requests go out as if no cassette were in use
(vcrpy's ignored requests): with no network the SDK falls back to its bundled copy, as it
does without a cassette.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from llmcassette._vcr.redaction_hook import run_hooks

#: Paths of the housekeeping requests: litellm's model price list, which litellm and DSPy
#: fetch from GitHub.
HOUSEKEEPING_PATHS = ("/model_prices_and_context_window.json",)
#: Where litellm and DSPy fetch that list from when the environment moves it.
COST_MAP_VARIABLE = "LITELLM_MODEL_COST_MAP_URL"


def is_housekeeping(uri: str) -> bool:
    """Whether ``uri`` is a request an SDK makes for itself, not for the code under test."""
    return urlsplit(uri).path.endswith(HOUSEKEEPING_PATHS) or uri == os.environ.get(
        COST_MAP_VARIABLE
    )


class SkipHousekeeping:
    """A ``before_record_request`` that drops housekeeping requests (vcrpy then neither
    records nor answers them), then runs the user's hook."""

    def __init__(self, user_hook: Any = None) -> None:
        self.user_hook = user_hook

    def __call__(self, request: Any) -> Any:
        if is_housekeeping(request.uri):
            return None
        return run_hooks(self.user_hook, request)
