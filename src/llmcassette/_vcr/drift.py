"""Replay vcrpy-recorded cassettes as vcrpy would, and report their body drift.

vcrpy matched on method and URL only, so a legacy cassette (``.yaml``/``.json``, or a
``.jsonl`` whose header says ``converted_from``) was never checked against the bodies its
tests send. When no interaction matches with the body, ``legacy_replay`` looks the request
up with vcrpy's default ``match_on``; every body difference of the interaction it plays is
a ``LegacyCassetteDriftWarning`` (``drift="warn"``), or nothing (``"off"``). With
``"strict"`` it plays nothing and the usual mismatch follows. Cassettes llmcassette recorded
itself are never looked up this way.
"""

from __future__ import annotations

import warnings
from typing import Any

from vcr.matchers import requests_match

from llmcassette._vcr.persister import LEGACY_ATTRIBUTE
from llmcassette.errors import LegacyCassetteDriftWarning
from llmcassette.matching.jsondiff import shorten_pair
from llmcassette.matching.normalize import MatchConfig
from llmcassette.matching.report import compare
from llmcassette.transport.recorded import session_of

#: The drift warnings of the test running now (the pytest plugin reads and clears it).
DRIFTED: list[LegacyCassetteDriftWarning] = []
# A test that drifts on every call of a loop should not hold every warning in memory.
DRIFTED_LIMIT = 100
_VALUE_WIDTH = 60


def drift_mode(cassette: Any) -> str:
    """The cassette's ``drift`` setting (``"warn"`` unless the persister says otherwise)."""
    return str(getattr(getattr(cassette, "_persister", None), "drift", "warn"))


def legacy_replay(
    cassette: Any,
    filtered: Any,
    url_matchers: tuple[Any, ...],
    config: MatchConfig,
    label: str | None,
) -> Any | None:
    """The response of the first unplayed legacy interaction matching ``filtered`` on
    vcrpy's default ``match_on``, counted as played, with its drift reported; else None.

    The caller holds the lookup lock.
    """
    mode = drift_mode(cassette)
    if mode == "strict":
        return None
    repeats = cassette.allow_playback_repeats
    for position, (recorded_request, response) in enumerate(cassette.data):
        file = getattr(recorded_request, LEGACY_ATTRIBUTE, None)
        count = cassette.play_counts[position]
        if file is None or not (count == 0 or repeats) or session_of(response) != label:
            continue
        if not requests_match(filtered, recorded_request, url_matchers):
            continue
        if count == 0 and position < cassette._loaded_count:
            cassette._played_interactions.append((recorded_request, response))
        cassette.play_counts[position] += 1
        if mode == "warn":
            _report(file, compare(filtered, recorded_request, config))
        return response
    return None


def _report(file: str, differences: tuple[Any, ...]) -> None:
    for difference in differences:
        recorded, incoming = shorten_pair(difference.recorded, difference.incoming, _VALUE_WIDTH)
        warning = LegacyCassetteDriftWarning(file, difference.path, recorded, incoming)
        if len(DRIFTED) < DRIFTED_LIMIT:
            DRIFTED.append(warning)
        # stacklevel: the warning's location would be inside the HTTP stub either way.
        warnings.warn(warning, stacklevel=2)
