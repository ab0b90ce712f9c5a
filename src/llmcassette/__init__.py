"""llmcassette: trustworthy recorded LLM traffic for vcrpy and pytest-recording."""

from ._version import __version__
from .errors import (
    CassetteFormatError,
    CassetteVersionError,
    IncompleteStreamError,
    IncompleteStreamWarning,
    LlmCassetteError,
    SecretLeakError,
)
from .format import FORMAT_VERSION
from .setup import configure, use_cassette

__all__ = [
    "FORMAT_VERSION",
    "CassetteFormatError",
    "CassetteVersionError",
    "IncompleteStreamError",
    "IncompleteStreamWarning",
    "LlmCassetteError",
    "SecretLeakError",
    "__version__",
    "configure",
    "use_cassette",
]
