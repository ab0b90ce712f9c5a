"""Install llmcassette's serializer, persister and matchers on a ``vcr.VCR`` object."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, get_args, overload
from urllib.parse import urlsplit

from llmcassette._vcr import serializer
from llmcassette.errors import ConfigError

if TYPE_CHECKING:
    import datetime
    from typing import TypeAlias

    import vcr as vcrpy

    from llmcassette.config import ExpiredAction, RedactionConfig
    from llmcassette.faults import Overrides
    from llmcassette.matching.normalize import MatchConfig, MatchOptions
    from llmcassette.matching.report import Context
    from llmcassette.redact import Redactor
    from llmcassette.transport.pace import Pace

    #: ``pace=``: ``"instant"``, ``"recorded"``, or a scale of the recorded delays (``0.1``).
    PaceOption: TypeAlias = Literal["instant", "recorded"] | float | Pace

# vcrpy is imported inside the functions: importing it while pytest loads plugins would stop
# pytest-recording from registering vcr.matchers for assertion rewriting.

# vcrpy's default match_on plus the semantic body matcher.
DEFAULT_MATCH_ON = ("method", "scheme", "host", "port", "path", "query", "llm_body")

#: vcrpy's record modes (``vcr.record_mode.RecordMode`` members are accepted too).
RecordModeName = Literal["all", "any", "new_episodes", "none", "once"]
#: ``incomplete_streams=``: what a recorded stream cut short leads to.
IncompleteStreams = Literal["warn", "error", "ignore"]
#: ``drift=``: what a legacy (vcrpy-recorded) cassette's body differences lead to.
DriftMode = Literal["warn", "strict", "off"]

_Function = TypeVar("_Function", bound=Callable[..., Any])


class CassetteContext(Protocol):
    """What ``use_cassette`` returns: a context manager and a decorator (vcrpy's).

    Entered, it gives vcrpy's ``Cassette``; applied to a function (sync, async or a
    generator), it runs each call inside the cassette.
    """

    def __enter__(self) -> Any: ...  # vcrpy's Cassette, which vcrpy does not type

    def __exit__(self, *exc_info: object) -> None: ...

    def __call__(self, function: _Function) -> _Function: ...


def configure(
    my_vcr: vcrpy.VCR,
    *,
    swap_suffix: str | None = None,
    rewrite: bool = False,
    pace: PaceOption = "instant",
    redaction: RedactionConfig | Mapping[str, object] | bool | None = None,
    incomplete_streams: IncompleteStreams = "warn",
    match: MatchConfig | MatchOptions | None = None,
    overrides: Overrides | Mapping[str, object] | None = None,
    record_errors: bool = False,
    max_age: str | float | datetime.timedelta | None = None,
    expired: ExpiredAction | None = None,
    record_mode: RecordModeName | Literal["rewrite"] | None = None,
    context: Context = "vcr",
    drift: DriftMode | None = None,
) -> vcrpy.VCR:
    """Make ``my_vcr`` read and write llmcassette cassettes; returns it.

    Registers the ``jsonl`` serializer and makes it the default, wraps the VCR's persister
    (other serializers still go to it), registers the ``llm_body`` matcher and matches on
    the body by default, and replaces vcrpy's httpx/httpx2 stubs with stream-faithful ones
    (``pace``: ``"instant"``, ``"recorded"`` or a scale of the recorded delays). Options
    passed to ``use_cassette`` still win over these defaults. ``redaction`` (a
    ``RedactionConfig``, a dict layered on ``[tool.llmcassette.redaction]``, or ``False``)
    controls redaction, which is on by default (see docs/redaction.md).
    ``incomplete_streams`` says what happens when a recorded stream ends without its
    terminator or its connection breaks: ``"warn"`` (default), ``"error"`` or ``"ignore"``.
    ``match`` (a ``MatchConfig`` or a dict of its fields: ``ignore``, ``volatile``,
    ``hosts``, ``normalizers``) says what matching leaves out (see docs/matching.md).
    ``overrides`` (the content of an overrides sidecar, see docs/faults.md) patches or
    replaces the recorded interactions with faults.
    ``record_errors`` keeps responses with status >= 400 in the cassette (by default they
    reach the caller but are not saved). ``max_age`` (``"30d"``, ``"12h"``, seconds) and
    ``expired`` (``"warn"``, ``"fail"``, ``"rerecord"``) set cassette expiry, defaulting to
    ``[tool.llmcassette]`` in pyproject.toml; ``record_mode`` is the mode cassettes will be
    used in (default: the VCR's), which ``"rerecord"`` needs to know (see docs/recording.md).
    ``context`` says who uses the VCR, so that a mismatch's hints give the right commands:
    ``"vcr"`` (your own, the default), ``"use_cassette"`` or ``"pytest"`` (the plugin).
    ``drift`` says what a body difference of a vcrpy-recorded cassette leads to: ``"warn"``
    (replay it and warn, the default), ``"strict"`` (a mismatch) or ``"off"`` (replay it
    silently); defaults to ``drift`` in ``[tool.llmcassette]``.

    Every option is checked before the VCR is changed: a value it cannot use raises
    ``ConfigError`` (``OverridesError`` for ``overrides``).
    """
    from vcr import matchers as vcr_matchers

    from llmcassette._vcr import compat
    from llmcassette._vcr import fixes as vcr_fixes
    from llmcassette._vcr import stubs as stream
    from llmcassette._vcr.persister import Persister
    from llmcassette.config import (
        Expiry,
        check_drift,
        project_drift,
        project_expiry,
        project_settings,
        resolve_redaction,
    )
    from llmcassette.faults import Overrides
    from llmcassette.matching import matchers
    from llmcassette.matching.normalize import MatchConfig

    compat.check()
    match_config = MatchConfig.from_options(match)
    project = project_settings()  # pyproject.toml, found and read once for every default
    redaction_config = resolve_redaction(redaction, project=project)
    mode = _record_mode_name(record_mode or my_vcr.record_mode)
    expiry = Expiry.from_options(
        max_age, expired, can_record=mode != "none", defaults=project_expiry(project=project)
    )
    replay_pace = _pace(pace)
    if incomplete_streams not in stream.INCOMPLETE_STREAM_POLICIES:
        raise ConfigError(
            f"incomplete_streams must be one of {', '.join(stream.INCOMPLETE_STREAM_POLICIES)}, "
            f"not {incomplete_streams!r}"
        )
    plan = None if overrides is None else Overrides.parse(overrides, "the `overrides` option")
    drift_mode = (
        check_drift(drift) if drift is not None else project_drift(project=project) or "warn"
    )

    vcr_fixes.install()
    my_vcr.register_serializer(serializer.NAME, serializer)
    my_vcr.serializer = serializer.NAME
    current = my_vcr.persister
    fallback = current.fallback if isinstance(current, Persister) else current
    redactor = _install_request_hooks(my_vcr, match_config, redaction_config)
    persister = Persister(
        fallback,
        swap_suffix=swap_suffix,
        rewrite=rewrite,
        redactor=redactor,
        expiry=expiry,
        record_errors=record_errors,
        serializers=my_vcr.serializers,
    )
    persister.drift = drift_mode
    persister.context = context
    # What tells the drift of a vcrpy cassette under a match_on without llm_body (lookup).
    persister.body_matcher = matchers.LlmBody(match_config)
    my_vcr.register_persister(persister)
    _keep_persister(my_vcr, persister)
    my_vcr.register_matcher("llm_body", persister.body_matcher)
    if not isinstance(my_vcr.matchers.get("body"), matchers.FillingPlaceholders):
        my_vcr.register_matcher("body", matchers.FillingPlaceholders(my_vcr.matchers["body"]))
    if my_vcr.matchers.get("method") is vcr_matchers.method:  # not a suite's own
        my_vcr.register_matcher("method", matchers.method)
    my_vcr.match_on = DEFAULT_MATCH_ON
    if compat.skips_patchers():
        absent = compat.absent_patchers()
        skipped = (*my_vcr.skip_patchers, *stream.REPLACED_PATCHERS, *absent)
        my_vcr.skip_patchers = tuple(dict.fromkeys(skipped))
    others = tuple(p for p in my_vcr._custom_patches if not stream.is_ours(p))
    my_vcr._custom_patches = others + tuple(
        stream.patches(replay_pace, incomplete_streams, plan, context)
    )
    return my_vcr


def _keep_persister(my_vcr: Any, persister: Any) -> None:
    """Make a persister the suite registers after ``configure`` the one ``persister``
    hands vcrpy's serializers to, as one registered before it is (its ``fallback``).

    A suite's own ``pytest_recording_configure`` runs after llmcassette's, and may register
    a persister of its own (simonw's llm plugins do), or name it in ``vcr_config``:
    replacing llmcassette's, it read each vcrpy cassette with the ``jsonl`` serializer
    (every test an error) and would write recordings that nothing redacted or scanned.
    """
    from llmcassette._vcr.persister import Persister

    register = my_vcr.register_persister
    merged = my_vcr.get_merged_config

    def register_persister(new: Any) -> None:
        if isinstance(new, Persister):
            register(new)
        else:
            persister.fallback = new

    def get_merged_config(**kwargs: Any) -> Any:
        # The same persister named in vcr_config (``"persister": ...``), which pytest-
        # recording passes to use_cassette, where vcrpy takes it over the VCR's.
        own = kwargs.get("persister")
        if own is not None and not isinstance(own, Persister):
            persister.fallback = own
            kwargs = {**kwargs, "persister": persister}
        return merged(**kwargs)

    my_vcr.register_persister = register_persister
    my_vcr.get_merged_config = get_merged_config


def _record_mode_name(record_mode: object) -> str:
    """The name of a record mode (a ``RecordMode`` member or its value); ``ConfigError`` if
    it is none of vcrpy's and not pytest-recording's ``"rewrite"``."""
    name = str(getattr(record_mode, "value", record_mode))
    known = (*get_args(RecordModeName), "rewrite")
    if name not in known:
        raise ConfigError(
            f"record_mode={record_mode!r} is not one of {', '.join(map(repr, known))}"
        )
    return name


def _pace(pace: object) -> Pace:
    from llmcassette.transport.pace import Pace

    try:
        return Pace.parse(pace)
    except ValueError as error:
        raise ConfigError(str(error)) from None


class HostAliases:
    """A ``before_record_request`` that rewrites aliased origins, then runs the user's hook.

    vcrpy applies it to recorded and incoming requests alike, so a cassette recorded
    against one base URL replays against another (and is stored under the canonical one).
    The ``host`` header follows the URL: otherwise it would keep the live port, and
    recording a deterministic server again would change every cassette.
    """

    def __init__(self, config: MatchConfig, user_hook: object = None) -> None:
        self.config = config
        self.user_hook = user_hook

    def __call__(self, request: Any) -> Any:
        rewritten = self.config.rewrite_origin(request.uri)
        if rewritten != request.uri:
            request.uri = rewritten
            if "host" in request.headers:
                request.headers["host"] = urlsplit(rewritten).netloc
        from llmcassette._vcr.redaction_hook import run_hooks

        return run_hooks(self.user_hook, request)


def _install_request_hooks(
    my_vcr: vcrpy.VCR, match: MatchConfig, redaction: RedactionConfig
) -> Redactor | None:
    """Wrap llmcassette's steps around every ``before_record_request`` the VCR will use:
    its own, and the one a cassette's options bring (``vcr_config``, a marker), which vcrpy
    takes instead of the VCR's. In order: leave out SDK housekeeping requests, rewrite
    aliased hosts, the user's hook, then redact. Returns the redactor (None: redaction off),
    for the persister."""
    from llmcassette._vcr import redaction_hook
    from llmcassette._vcr.housekeeping import SkipHousekeeping
    from llmcassette.redact import Redactor

    redactor = Redactor(redaction) if redaction.enabled else None

    def around(user_hook: Any) -> Any:
        hook = HostAliases(match, user_hook) if match.hosts else user_hook
        hook = SkipHousekeeping(hook)
        return hook if redactor is None else redaction_hook.RedactRequest(redactor, hook)

    my_vcr.before_record_request = around(_own_hook(my_vcr.before_record_request))
    # A cassette's own hook replaces the VCR's in vcrpy's merged config: wrap it too.
    merged = getattr(my_vcr.get_merged_config, "_llmcassette_original", my_vcr.get_merged_config)

    def get_merged_config(**options: Any) -> dict[str, Any]:
        for name in ("before_record_request", "before_record"):  # vcrpy's old name too
            if name in options:
                own = _own_hook(options.pop(name))
                options["before_record_request"] = around(own)
                break
        config: dict[str, Any] = merged(**options)
        return config

    get_merged_config._llmcassette_original = merged  # type: ignore[attr-defined]
    my_vcr.get_merged_config = get_merged_config
    if redactor is not None:
        redaction_hook.patch_vcr_errors()
    return redactor


def _own_hook(hook: Any) -> Any:
    """The user's hook inside a chain llmcassette built (configure() again), else ``hook``."""
    from llmcassette._vcr.housekeeping import SkipHousekeeping
    from llmcassette._vcr.redaction_hook import RedactRequest

    for ours in (RedactRequest, SkipHousekeeping, HostAliases):
        if isinstance(hook, ours):
            hook = hook.user_hook
    return hook


def _ensure_jsonl_suffix(path: str | os.PathLike[str]) -> str:
    path = os.fspath(path)
    if os.path.splitext(path)[1]:
        return path
    return path + serializer.SUFFIX


@overload
def use_cassette(path: _Function, /) -> _Function: ...


@overload
def use_cassette(
    path: str | os.PathLike[str] | None = None,
    *,
    record_mode: RecordModeName = "once",
    pace: PaceOption = "instant",
    redaction: RedactionConfig | Mapping[str, object] | bool | None = None,
    incomplete_streams: IncompleteStreams = "warn",
    match: MatchConfig | MatchOptions | None = None,
    overrides: Overrides | Mapping[str, object] | None = None,
    record_errors: bool = False,
    max_age: str | float | datetime.timedelta | None = None,
    expired: ExpiredAction | None = None,
    drift: DriftMode | None = None,
    **options: object,
) -> CassetteContext: ...


def use_cassette(
    path: str | os.PathLike[str] | _Function | None = None,
    *,
    record_mode: RecordModeName = "once",
    pace: PaceOption = "instant",
    redaction: RedactionConfig | Mapping[str, object] | bool | None = None,
    incomplete_streams: IncompleteStreams = "warn",
    match: MatchConfig | MatchOptions | None = None,
    overrides: Overrides | Mapping[str, object] | None = None,
    record_errors: bool = False,
    max_age: str | float | datetime.timedelta | None = None,
    expired: ExpiredAction | None = None,
    drift: DriftMode | None = None,
    **options: object,
) -> CassetteContext | _Function:
    """Record to / replay from an llmcassette cassette, as a context manager or decorator.

    ``path`` gets a ``.jsonl`` suffix when it has none. It works on sync and async
    functions; used as a bare decorator the cassette is named after the function.
    ``pace`` sets how fast replayed streams deliver their events: ``"instant"`` (default),
    ``"recorded"``, or a number that scales the recorded delays (``0.1`` is ten times faster).
    ``redaction``, ``incomplete_streams``, ``match``, ``overrides``, ``record_errors``,
    ``max_age``, ``expired`` and ``drift`` are as for :func:`configure`; a value they cannot use
    raises ``ConfigError`` at once. In a replay mode the block (or call) fails at exit with
    ``UnusedInteractionsError`` when recorded interactions were not played, as under
    pytest; ``allow_unused=True`` allows it. Other keyword arguments are vcrpy
    ``use_cassette`` options, which vcrpy checks (they differ between vcrpy releases).
    """
    return _use_cassette(
        path,
        "use_cassette",
        record_mode,
        options,
        pace=pace,
        redaction=redaction,
        incomplete_streams=incomplete_streams,
        match=match,
        overrides=overrides,
        record_errors=record_errors,
        max_age=max_age,
        expired=expired,
        drift=drift,
    )


def shown_redacted(cassette: Any, text: str) -> str:
    """``text`` (a traceback of the program ``llmcassette run`` runs) as the cassette's
    redaction leaves it (``Redactor.shown``); as it is when redaction is off."""
    redactor = getattr(getattr(cassette, "_persister", None), "redactor", None)
    if redactor is None or not redactor.config.enabled:
        return text
    return str(redactor.shown(text))


def use_cassette_for_run(
    path: str | os.PathLike[str], record_mode: RecordModeName
) -> CassetteContext:
    """``use_cassette`` as ``llmcassette run`` opens it around a program: a mismatch's hints
    name ``run``'s options, not ``use_cassette``'s, which its user cannot pass."""
    return cast("CassetteContext", _use_cassette(path, "run", record_mode, {}))


def _use_cassette(
    path: str | os.PathLike[str] | _Function | None,
    context: Context,
    record_mode: RecordModeName,
    options: dict[str, object],
    **configured: Any,
) -> CassetteContext | _Function:
    import vcr as vcrpy

    my_vcr = configure(
        vcrpy.VCR(path_transformer=_ensure_jsonl_suffix),
        record_mode=record_mode,
        context=context,
        **configured,
    )
    # This VCR opens its cassettes in this mode only: in "none" nothing is ever saved.
    my_vcr.persister.replay_only = record_mode == "none"
    from llmcassette._vcr.unused import checked_use_cassette

    # Replaying must play every recorded interaction, as under pytest (allow_unused=True
    # allows fewer).
    cassette: CassetteContext | _Function = checked_use_cassette(
        my_vcr, path, record_mode=record_mode, **options
    )
    return cassette
