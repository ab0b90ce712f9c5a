"""Warnings issued inside a client's HTTP call, kept from breaking the call.

Where warnings are errors (``-W error``, or pytest's ``filterwarnings = ["error"]``, which
pydantic-ai's suite sets), a warning issued inside the transport becomes an exception
inside the client's HTTP call. An SDK takes it for a connection failure and retries, and
the test then fails on a later request, with an error that says nothing of the warning.
Such a warning is kept with the cassette and raised, as itself, when the cassette exits.
"""

from __future__ import annotations

from typing import Any

from llmcassette import _warning_site

_KEPT = "_llmcassette_deferred_warning"


def warn(cassette: Any, warning: Warning, stacklevel: int = 1) -> None:
    """``warnings.warn(warning)`` (pointing at the test under pytest: ``_warning_site``);
    when the filters turn it into an error, the first such error is kept for
    ``raise_kept`` instead of raised here."""
    try:
        _warning_site.warn(warning, stacklevel=stacklevel + 1)
    except Warning as raised:
        if raised is not warning or cassette is None:
            raise
        cassette.__dict__.setdefault(_KEPT, raised)


def raise_kept(cassette: Any) -> None:
    """Raise the warning ``warn`` kept for ``cassette``, if any (once)."""
    kept = cassette.__dict__.pop(_KEPT, None)
    if kept is not None:
        raise kept
