"""Wire a :class:`Redactor` into vcrpy: ``before_record_request`` and vcrpy's error text."""

from __future__ import annotations

import threading
from typing import Any

from llmcassette.redact.redactor import Redactor

# Set while ``unredacted_body`` runs a cassette's hooks: RedactRequest leaves its step out.
_DEFERRED = threading.local()


def run_hooks(hooks: Any, request: Any) -> Any:
    """Run a vcrpy ``before_record_request`` value (one hook, a list, or None) on ``request``."""
    for hook in hooks if isinstance(hooks, (list, tuple)) else (hooks,) if hooks else ():
        request = hook(request)
        if request is None:
            return None
    return request


class RedactRequest:
    """A ``before_record_request`` that runs the user's hook, then llmcassette's redaction.

    vcrpy applies it to every stored request at load and to every incoming request before
    matching, so recorded (redacted) and live (real key) requests compare equal.
    """

    def __init__(self, redactor: Redactor, user_hook: Any = None) -> None:
        self.redactor = redactor
        self.user_hook = user_hook

    def __call__(self, request: Any) -> Any:
        request = run_hooks(self.user_hook, request)
        if request is None:
            return None
        if getattr(_DEFERRED, "active", False):
            _DEFERRED.redactor = self.redactor
            return self.redactor.vcr_request_head(request)
        return redact(request, self.redactor)


def redact(request: Any, redactor: Redactor) -> Any:
    """``request`` (a copy vcrpy made) through ``redactor``, marked as redacted by it."""
    if getattr(request, "redacted_by", None) is redactor:
        return request  # loaded from a cassette these very rules redacted when writing it
    request = redactor.vcr_request(request)
    # Redaction is the last hook, so the request is stored as it is now: saving the
    # cassette need not redact it again (the fail-closed scan still checks its lines).
    request.redacted_by = redactor
    return request


def unredacted_body(hook: Any, request: Any) -> tuple[Any, Redactor | None]:
    """``hook(request)`` (a cassette's ``before_record_request``) with llmcassette's
    redaction of the body left out (the URI and headers are redacted), and the redactor
    that left it out (None: no redaction ran).

    Redaction is the hook's last step, so ``redact(result, redactor)`` finishes the job.
    The lookup compares a live body before redacting it: a body equal to a recorded one
    holds no secret where matching looks (the recorded one was redacted), and redacting
    a body of megabytes costs more than comparing it.
    """
    _DEFERRED.active, _DEFERRED.redactor = True, None
    try:
        result = hook(request)
    finally:
        _DEFERRED.active = False
    redactor, _DEFERRED.redactor = _DEFERRED.redactor, None
    return result, redactor


_patched = False


def patch_vcr_errors() -> None:
    """Make vcrpy's "Can't play back this request" message show the redacted request.

    vcrpy prints the live request as received (a ``?key=...`` URL, a body with a key);
    the cassette's own ``before_record_request`` (ours) is applied to it first.
    """
    global _patched
    if _patched:
        return
    from llmcassette._vcr import compat

    def wrap(original: Any) -> Any:
        def message(cassette: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            hook = getattr(cassette, "_before_record_request", None)
            if hook is not None and request is not None:
                try:
                    shown = hook(request)
                except Exception:
                    shown = None
                request = shown if shown is not None else _opaque(request)
            return original(cassette, request, *args, **kwargs)

        return message

    compat.patch_mismatch_message(wrap)
    _patched = True


def _opaque(request: Any) -> Any:
    return f"<{getattr(request, 'method', 'request')} (not shown: redaction failed)>"
