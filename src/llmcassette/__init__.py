"""llmcassette: trustworthy recorded LLM traffic for vcrpy and pytest-recording."""

from typing import TYPE_CHECKING

from llmcassette._version import __version__
from llmcassette.cassette import FORMAT_VERSION
from llmcassette.errors import (
    CassetteExpiredError,
    CassetteExpiredWarning,
    CassetteFormatError,
    CassetteLockError,
    CassetteVersionError,
    ConcurrentIdenticalRequestsWarning,
    ConfigError,
    ErrorResponseNotRecordedWarning,
    FailedRequestNotRecordedWarning,
    FaultError,
    FixtureCallsWarning,
    HealError,
    IncompatibleVcrpyError,
    IncompleteStreamError,
    IncompleteStreamWarning,
    LegacyCassetteDriftWarning,
    LlmCassetteError,
    LlmCassetteWarning,
    OverlappingCassettesError,
    OverridesError,
    PlaceholderError,
    SecretLeakError,
    UnusedInteractionsError,
)
from llmcassette.sessions import current_session, session

if TYPE_CHECKING:
    from llmcassette._vcr.fault_plan import check_unused
    from llmcassette._vcr.install import configure, use_cassette
    from llmcassette._vcr.mismatch import CassetteMismatch


def __getattr__(name: str) -> object:
    # Imported on first use: the command line (``llmcassette convert``, one process per
    # call) needs none of the set-up of a cassette.
    if name in ("configure", "use_cassette"):
        from llmcassette._vcr import install

        return getattr(install, name)
    # These import vcrpy, which must not be imported while pytest loads plugins (it would
    # stop pytest-recording from registering vcr.matchers for assertion rewriting).
    if name == "CassetteMismatch":
        from llmcassette._vcr.mismatch import CassetteMismatch

        return CassetteMismatch
    if name == "check_unused":
        from llmcassette._vcr.fault_plan import check_unused

        return check_unused
    raise AttributeError(f"module 'llmcassette' has no attribute {name!r}")


__all__ = [
    "FORMAT_VERSION",
    "CassetteExpiredError",
    "CassetteExpiredWarning",
    "CassetteFormatError",
    "CassetteLockError",
    "CassetteMismatch",
    "CassetteVersionError",
    "ConcurrentIdenticalRequestsWarning",
    "ConfigError",
    "ErrorResponseNotRecordedWarning",
    "FailedRequestNotRecordedWarning",
    "FaultError",
    "FixtureCallsWarning",
    "HealError",
    "IncompatibleVcrpyError",
    "IncompleteStreamError",
    "IncompleteStreamWarning",
    "LegacyCassetteDriftWarning",
    "LlmCassetteError",
    "LlmCassetteWarning",
    "OverlappingCassettesError",
    "OverridesError",
    "PlaceholderError",
    "SecretLeakError",
    "UnusedInteractionsError",
    "__version__",
    "check_unused",
    "configure",
    "current_session",
    "session",
    "use_cassette",
]
