"""What a cassette keeps when it is saved: no error responses unless asked, nothing of a
failed test, and in record mode ``all`` only what this run recorded.

A response with status >= 400 received while recording reached the code under test as it
came, but is left out of the cassette (``record_errors=True`` keeps it): an outage or a rate
limit of the day should not become the answer every later replay gives. The pytest plugin
also discards everything a failed test recorded (``record_failed=True`` keeps it).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from llmcassette import _warning_site
from llmcassette.errors import ErrorResponseNotRecordedWarning, FailedRequestNotRecordedWarning

ERROR_STATUS = 400
_FAILED = "_llmcassette_failed_requests"


def new_interactions(cassette: Any) -> list[tuple[Any, Any]]:
    """The interactions recorded since the cassette was loaded (vcrpy appends them last)."""
    return list(cassette.data[getattr(cassette, "_loaded_count", 0) :])


def recorded_nothing(cassette: Any) -> bool:
    """Whether no request went out through the cassette since it was loaded: nothing new
    (a response with an error status counts until the save drops it), none that failed
    before its answer."""
    return not new_interactions(cassette) and not cassette.__dict__.get(_FAILED)


def _status(response: Any) -> int:
    try:
        return int(response["status"]["code"])
    except (KeyError, TypeError, ValueError):
        return 0


def drop_error_responses(cassette: Any) -> list[tuple[str, str, int]]:
    """Remove the new interactions whose status is >= 400, warn once, return what went.

    Does nothing when the cassette's persister is not llmcassette's or has
    ``record_errors`` set. When nothing new is left the cassette is no longer dirty, so an
    existing file stays as it is (a re-recording that only got errors keeps the old one).
    """
    if len(cassette.data) <= getattr(cassette, "_loaded_count", 0):
        return []  # nothing new (every replay): nothing to look at
    from llmcassette._vcr.persister import Persister

    persister = getattr(cassette, "_persister", None)
    if not isinstance(persister, Persister) or persister.record_errors:
        return []
    fresh = new_interactions(cassette)
    kept = [pair for pair in fresh if _status(pair[1]) < ERROR_STATUS]
    if len(kept) == len(fresh):
        return []
    dropped = [
        (str(request.method), str(request.uri), _status(response))
        for request, response in fresh
        if _status(response) >= ERROR_STATUS
    ]
    cassette.data[getattr(cassette, "_loaded_count", 0) :] = kept
    if not kept:
        cassette.dirty = False
    _warn(cassette, dropped)
    return dropped


def keep_only_this_run(cassette: Any) -> None:
    """In record mode ``all``, save exactly the interactions this run recorded.

    vcrpy 9 keeps every loaded interaction that no new one matches, ahead of the new ones
    (comparing each old request with each new one: quadratic), and vcrpy 8 keeps them all:
    either way a re-recording that makes fewer calls leaves stale interactions that fail
    the next replay as unused. A run that recorded nothing new (a failed test, only error
    responses) leaves the file as it is.
    """
    if not cassette.dirty:
        return
    from vcr.record_mode import RecordMode

    if cassette.record_mode != RecordMode.ALL:
        return
    loaded = cassette._loaded_count
    if not loaded:
        return
    del cassette.data[:loaded]
    cassette._loaded_count = 0
    cassette._played_interactions = []
    cassette.play_counts = Counter()


def _warn(cassette: Any, dropped: list[tuple[str, str, int]]) -> None:
    from llmcassette._vcr.persister import shown_file

    counts = Counter(dropped)
    lines = "\n".join(
        f"  {method} {uri} -> {status}" + (f" ({n} times)" if n > 1 else "")
        for (method, uri, status), n in counts.items()
    )
    keep = "record_errors=True (vcr_config, the vcr marker, or llmcassette.use_cassette)"
    if getattr(getattr(cassette, "_persister", None), "context", None) == "run":
        keep = (
            "llmcassette.use_cassette(..., record_errors=True) in the program instead of "
            "llmcassette run, which takes no such option"
        )
    _warning_site.warn(
        ErrorResponseNotRecordedWarning(
            f"{shown_file(cassette) or 'the cassette'}: error responses received while "
            f"recording were not saved (the code under test saw them):\n{lines}\n"
            f"  to keep them: {keep}"
        ),
        stacklevel=4,
    )


def discard_new(cassette: Any) -> int:
    """Make vcrpy skip saving: the file on disk, if any, stays byte-identical.

    Returns how many new interactions are thrown away.
    """
    count = len(new_interactions(cassette))
    cassette.dirty = False
    cassette.drop_unused_requests = False  # would force a save of the played subset
    return count


# asyncio's and trio's cancellations are BaseExceptions; KeyboardInterrupt and the like are
# no request's failure.
_CANCELLATIONS = frozenset({"CancelledError", "Cancelled"})


def note_failed(cassette: Any, request: Any, error: BaseException, seconds: float) -> None:
    """A request being recorded failed before any response (``error``, after ``seconds``):
    ``warn_failed`` names it when the cassette closes, unless a later call answers it."""
    cancelled = type(error).__name__ in _CANCELLATIONS
    if not (cancelled or isinstance(error, Exception)):
        return
    what = "cancelled" if cancelled else type(error).__name__
    failed = cassette.__dict__.setdefault(_FAILED, [])
    failed.append((request, f"{what} after {seconds:.2f} s"))


def warn_failed(cassette: Any) -> None:
    """Warn, once, of the failed requests that no interaction recorded since answers (an
    SDK's retry that got its answer is one)."""
    failed = cassette.__dict__.pop(_FAILED, [])
    if not failed:
        return
    from llmcassette._vcr import lookup
    from llmcassette._vcr.persister import shown_file
    from llmcassette.matching.index import request_key
    from llmcassette.matching.normalize import MatchConfig

    matcher = lookup.body_matcher(cassette)
    config = matcher.config if matcher is not None else MatchConfig()
    answered = {request_key(request, config) for request, _ in cassette.data}
    left = [
        (str(request.method), str(request.uri), what)
        for request, what in failed
        if request_key(request, config) not in answered
    ]
    if left:
        warning = FailedRequestNotRecordedWarning(shown_file(cassette) or "the cassette", left)
        _warning_site.warn(warning, stacklevel=4)
