"""llmcassette._vcr.compat: an incompatible vcrpy fails loudly, naming its version."""

from __future__ import annotations

import pytest
import vcr
import vcr.patch

from llmcassette import IncompatibleVcrpyError
from llmcassette._vcr import compat


def test_the_installed_vcrpy_has_everything_llmcassette_reads() -> None:
    assert compat.missing() == []
    compat.check()


def test_a_vcrpy_older_than_the_lowest_supported_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vcr, "__version__", "7.0.0")
    with pytest.raises(IncompatibleVcrpyError, match=r"needs vcrpy >= 8\.5\.0, but vcrpy 7\.0\.0"):
        compat.check.__wrapped__()


def test_a_missing_internal_is_named_with_the_vcrpy_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(vcr.patch, "_Httpx2AsyncHttpTransport_handle_async_request")
    monkeypatch.setattr(vcr, "__version__", "99.0.0")
    with pytest.raises(IncompatibleVcrpyError) as raised:
        compat.check.__wrapped__()
    message = str(raised.value)
    assert raised.value.vcrpy_version == "99.0.0"
    assert raised.value.missing == ["vcr.patch._Httpx2AsyncHttpTransport_handle_async_request"]
    assert "vcrpy 99.0.0" in message
    assert "vcr.patch._Httpx2AsyncHttpTransport_handle_async_request" in message


def test_saved_names_follow_vcrpys_spelling() -> None:
    assert compat.saved_name("httpx", "HTTPTransport", "handle_request") == (
        "_HttpxHttpTransport_handle_request"
    )
    assert compat.saved_name("httpx2", "ASGITransport", "handle_async_request") == (
        "_Httpx2AsgiTransport_handle_async_request"
    )
    for library in compat.CLIENT_LIBRARIES:
        for class_name, method, _ in compat.TRANSPORT_METHODS:
            assert callable(compat.saved_original(library, class_name, method))


def test_vcrpy_is_told_to_skip_the_patchers_of_libraries_not_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """vcrpy would try (and fail) to import each of them on every cassette it enters."""
    import importlib.util

    import llmcassette

    installed = {
        group for group in compat._PATCHED_MODULES if group not in compat.absent_patchers()
    }
    for group, module in compat._PATCHED_MODULES.items():
        assert (group in installed) == (importlib.util.find_spec(module) is not None)
    assert {"requests", "urllib3", "aiohttp"} <= installed  # the suite's own clients

    monkeypatch.setattr(compat, "installed", lambda module: module != "tornado")
    my_vcr = llmcassette.configure(vcr.VCR())
    if compat.skips_patchers():
        assert "tornado" in my_vcr.skip_patchers
        assert "requests" not in my_vcr.skip_patchers
