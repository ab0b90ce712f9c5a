"""llmcassette: trustworthy recorded LLM traffic for vcrpy and pytest-recording."""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    CassetteExpiredError,
    CassetteExpiredWarning,
    CassetteFormatError,
    CassetteVersionError,
    ErrorResponseNotRecordedWarning,
    IncompleteStreamError,
    IncompleteStreamWarning,
    LlmCassetteError,
    SecretLeakError,
    UnusedInteractionsError,
)
from .format import FORMAT_VERSION
from .setup import configure, use_cassette

if TYPE_CHECKING:
    from .mismatch import CassetteMismatch


def __getattr__(name: str) -> Any:
    # CassetteMismatch subclasses a vcrpy class: import vcrpy only when it is asked for.
    if name == "CassetteMismatch":
        from .mismatch import CassetteMismatch

        return CassetteMismatch
    raise AttributeError(f"module 'llmcassette' has no attribute {name!r}")


__all__ = [
    "FORMAT_VERSION",
    "CassetteExpiredError",
    "CassetteExpiredWarning",
    "CassetteFormatError",
    "CassetteMismatch",
    "CassetteVersionError",
    "ErrorResponseNotRecordedWarning",
    "IncompleteStreamError",
    "IncompleteStreamWarning",
    "LlmCassetteError",
    "SecretLeakError",
    "UnusedInteractionsError",
    "__version__",
    "configure",
    "use_cassette",
]
