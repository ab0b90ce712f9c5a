"""The vcrpy internals llmcassette relies on, checked once when vcrpy is first used.

llmcassette plugs into vcrpy's seams (serializer, persister, matchers, ``custom_patches``)
and, where vcrpy has no seam, reads a few of its private attributes: a cassette's play
counts and hooks, the context manager's patch generator, the transport methods vcrpy saved
before patching; and it relies on vcrpy applying a custom patch that holds its cassette
as it is. A vcrpy release that renames one of them must fail loudly, naming the
version, rather than send every request down a silently different path. Every private name
used anywhere in ``llmcassette._vcr`` is listed here.

``configure`` calls ``check()`` before anything else. Importing this module imports vcrpy:
do it inside functions that run once a cassette is configured, never while pytest loads
plugins (that would stop pytest-recording from registering ``vcr.matchers`` for
assertion rewriting).
"""

from __future__ import annotations

import functools
import importlib.util
import types
from typing import Any

import vcr
import vcr.errors
import vcr.patch
from vcr.cassette import Cassette, CassetteContextDecorator
from vcr.request import HeadersDict, Request

from llmcassette.errors import IncompatibleVcrpyError

# The oldest vcrpy the test suite runs against (nox -s vcrpy_lowest), and the pin in
# pyproject.toml.
LOWEST_SUPPORTED = (8, 5, 0)

# Attributes a vcrpy Cassette has once constructed, public and private, that llmcassette reads.
CASSETTE_ATTRIBUTES = (
    "_path",
    "_persister",
    "_serializer",
    "_match_on",
    "_before_record_request",
    "_before_record_response",
    "_played_interactions",
    "_loaded_count",
    "data",
    "play_counts",
    "dirty",
    "rewound",
    "record_mode",
    "custom_patches",
    "allow_playback_repeats",
)
CASSETTE_METHODS = ("can_play_response_for", "play_response", "append", "write_protected")
# CassetteContextDecorator keeps the open cassette and its patch generator in these
# (name-mangled) attributes; llmcassette.fixes closes the generator when a save raises.
# It merges its options by calling ``_args_getter``, which llmcassette.unused replaces
# for the length of a block.
CONTEXT_ATTRIBUTES = (
    "_CassetteContextDecorator__cassette",
    "_CassetteContextDecorator__finish",
    "_args_getter",
)
VCR_ATTRIBUTES = ("_custom_patches", "before_record_request", "persister")
# The transport methods llmcassette replaces: (class, method, is_async). vcrpy saves each
# one before patching, as ``vcr.patch._Httpx<Short>Transport_<method>`` (``_Httpx2...``
# for httpx2), and llmcassette's stand-ins call that saved original.
TRANSPORT_METHODS = (
    ("HTTPTransport", "handle_request", False),
    ("AsyncHTTPTransport", "handle_async_request", True),
    ("WSGITransport", "handle_request", False),
    ("ASGITransport", "handle_async_request", True),
    ("MockTransport", "handle_request", False),
    ("MockTransport", "handle_async_request", True),
)
CLIENT_LIBRARIES = ("httpx", "httpx2")


def saved_name(library: str, class_name: str, method: str) -> str:
    """vcrpy's name for the saved original: ``_Httpx2AsyncHttpTransport_handle_async_request``."""
    prefix = "_Httpx2" if library == "httpx2" else "_Httpx"
    short = class_name.replace("Transport", "")
    for upper, title in (("HTTP", "Http"), ("WSGI", "Wsgi"), ("ASGI", "Asgi")):
        short = short.replace(upper, title)
    return f"{prefix}{short}Transport_{method}"


def _version() -> tuple[int, ...]:
    parts = []
    for piece in str(getattr(vcr, "__version__", "0")).split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def missing() -> list[str]:
    """What llmcassette needs that the installed vcrpy lacks (empty when all is there)."""
    absent: list[str] = []
    cassette = Cassette("llmcassette-compat-check")
    absent += [f"Cassette.{name}" for name in CASSETTE_ATTRIBUTES if not hasattr(cassette, name)]
    absent += [f"Cassette.{name}" for name in CASSETTE_METHODS if not hasattr(Cassette, name)]
    context = CassetteContextDecorator(Cassette, dict)
    absent += [
        f"CassetteContextDecorator.{n}" for n in CONTEXT_ATTRIBUTES if n not in vars(context)
    ]
    if not hasattr(CassetteContextDecorator, "_patch_generator"):
        absent.append("CassetteContextDecorator._patch_generator")
    config = vcr.VCR()
    absent += [f"VCR.{name}" for name in VCR_ATTRIBUTES if not hasattr(config, name)]
    for library in CLIENT_LIBRARIES:
        if importlib.util.find_spec(library) is not None:
            for class_name, method, _ in TRANSPORT_METHODS:
                name = saved_name(library, class_name, method)
                if not hasattr(vcr.patch, name):
                    absent.append(f"vcr.patch.{name}")
    owner = vcr.errors.CannotOverwriteExistingCassetteException
    if not hasattr(vcr.errors, "_message") and not hasattr(owner, "_get_message"):
        absent.append(
            "vcr.errors._message (or CannotOverwriteExistingCassetteException._get_message)"
        )
    request = Request("GET", "http://localhost/", b"", {})
    if not isinstance(request.headers, HeadersDict):
        absent.append("Request.headers as a HeadersDict")
    if not hasattr(request, "_to_dict"):
        absent.append("Request._to_dict")
    # Last: the probe builds vcrpy's patches, which needs what is listed above.
    if not absent and not _applies_a_bound_patch_as_it_is():
        absent.append("CassettePatcherBuilder applying a custom patch that holds its cassette")
    return absent


class _Patched:
    attribute: object = None


def _applies_a_bound_patch_as_it_is() -> bool:
    """Whether vcrpy applies a custom patch that already holds its cassette as it is: it
    builds a subclass of the others for each cassette, and llmcassette binds its stand-ins
    itself (``stubs.bound_patches``)."""
    probe = types.SimpleNamespace(cassette=None)
    cassette = Cassette(
        "llmcassette-compat-check", custom_patches=((_Patched, "attribute", probe),)
    )
    probe.cassette = cassette
    *_, ours = vcr.patch.CassettePatcherBuilder(cassette).build()  # custom patches go last
    with ours:
        return _Patched.attribute is probe


@functools.cache
def check() -> None:
    """Raise ``IncompatibleVcrpyError`` naming the vcrpy version when it does not fit (once)."""
    installed = _version()
    absent = [] if installed < LOWEST_SUPPORTED else missing()
    if installed < LOWEST_SUPPORTED or absent:
        version, lowest = (".".join(map(str, v)) for v in (installed, LOWEST_SUPPORTED))
        raise IncompatibleVcrpyError(version, absent, lowest)


# vcrpy's patcher groups (``skip_patchers`` names) for other libraries, and the module each
# one needs.
_PATCHED_MODULES = {
    "requests": "requests",
    "boto3": "botocore",
    "urllib3": "urllib3",
    "httplib2": "httplib2",
    "tornado": "tornado",
    "aiohttp": "aiohttp",
}


@functools.cache
def installed(module: str) -> bool:
    """Whether ``module`` can be imported, looked up once per process."""
    return importlib.util.find_spec(module) is not None


def absent_patchers() -> tuple[str, ...]:
    """vcrpy's patcher groups whose library is not installed.

    vcrpy tries to import each library on every cassette it enters, and an import that
    fails searches ``sys.path`` again each time: about a millisecond per cassette. Leaving
    such a group out (``skip_patchers``) patches what the failed import would have: nothing.
    """
    return tuple(group for group, module in _PATCHED_MODULES.items() if not installed(module))


@functools.cache
def skips_patchers() -> bool:
    """Whether this vcrpy can be told to leave out its own httpx stubs (``skip_patchers``,
    vcrpy 9.4.2 and newer). Older releases apply ``custom_patches`` after their own stubs,
    so llmcassette's stand-ins replace them just the same."""
    return hasattr(vcr.VCR(), "skip_patchers")


def patch_mismatch_message(wrap: Any) -> None:
    """Replace the function vcrpy builds its "Can't overwrite existing cassette" text with by
    ``wrap(original)``: ``vcr.errors._message`` in vcrpy 9, the exception's static
    ``_get_message`` before. Both take ``(cassette, request, ...)`` first."""
    if hasattr(vcr.errors, "_message"):
        vcr.errors._message = wrap(vcr.errors._message)
        return
    owner = vcr.errors.CannotOverwriteExistingCassetteException
    owner._get_message = staticmethod(wrap(owner._get_message))


def saved_original(library: str, class_name: str, method: str) -> Any:
    """The transport method as it was before any cassette patched it (vcrpy saved it)."""
    return getattr(vcr.patch, saved_name(library, class_name, method))
