"""Fixes to vcrpy behaviour that llmcassette depends on, installed once by ``configure``."""

from __future__ import annotations

import functools
import types
from typing import Any

_installed = False


def install() -> None:
    """Always undo a cassette's HTTP patches when its context exits, even if saving raised;
    leave error responses out of what is saved, and in record mode ``all`` the interactions
    this run did not record (llmcassette._vcr.save_policy); tell the save which interactions
    are new, so that it can add them to a file another process saved meanwhile
    (llmcassette._vcr.persister.saving).

    Wrap vcrpy's aiohttp stub (``aiohttp_stub``) as a cassette's patches are built: it
    notes each request's session, for client numbering, and sends a form as the bytes
    aiohttp sends (vcrpy keeps a ``FormData`` as the body, which cannot be saved).

    vcrpy's ``CassetteContextDecorator.__exit__`` saves, then closes the generator that
    holds the patches; when the save raises (llmcassette refuses to overwrite a cassette it
    cannot read, or to write one that would leak a secret) the patches stay installed until
    the garbage collector frees the context, and later code talks to the cassette instead of
    the network.

    Raise, at a clean exit, a warning the filters made an error inside a request
    (``llmcassette._vcr.deferred``), where it would have broken the client's HTTP call.

    Answer the lookups of vcrpy's own stubs (requests, urllib3, boto3, aiohttp...) with
    llmcassette's (``vcrpy_lookups.answer_vcrpy_stubs``): a vcrpy cassette replayed through them
    drifts as through httpx instead of failing on its body.

    Keep the patches other threads read in place while vcrpy's own stubs send
    (``_no_reset_windows``): their requests are recorded too.

    Refuse a cassette opened while only cassettes of other tasks or threads are open
    (``open_cassettes.opened``): the patches are the whole process's. And take a
    cassette's patches off in the order the cassettes were opened (``open_cassettes.close``),
    even when a nested one opened in another task closes last.

    And bind llmcassette's stand-ins to the cassette whose patches are being applied
    (``stubs.bound_patches``). vcrpy would build a subclass of each one for every cassette:
    creating classes made up a quarter of setting up a small cassette. Its overrides
    sidecar is read then too, as the pytest plugin reads it before a test: not by the first
    request, which may run on an event loop where a blocking call is an error to some suites,
    and a bad sidecar fails before the block runs.
    """
    global _installed
    if _installed:
        return
    from vcr.cassette import CassetteContextDecorator

    # Imported here, once: every cassette's exit and patching need them.
    from llmcassette._vcr import aiohttp_stub
    from llmcassette._vcr.deferred import raise_kept
    from llmcassette._vcr.fault_plan import plan_of
    from llmcassette._vcr.open_cassettes import close, opened
    from llmcassette._vcr.persister import Persister, saving
    from llmcassette._vcr.save_policy import (
        drop_error_responses,
        keep_only_this_run,
        new_interactions,
        warn_failed,
    )
    from llmcassette._vcr.stubs import bound_patches

    original_exit = CassetteContextDecorator.__exit__

    def __exit__(self: Any, *exc_info: Any) -> Any:
        cassette = getattr(self, "_CassetteContextDecorator__cassette", None)
        # The patches come off here, below, in the order the cassettes were opened
        # (``open_cassettes.close``): vcrpy's own exit finds nothing left to finish.
        finish = getattr(self, "_CassetteContextDecorator__finish", None)
        if cassette is not None and finish is not None:
            self._CassetteContextDecorator__finish = iter(())
        try:
            if cassette is not None:
                drop_error_responses(cassette)  # responses >= 400 are not saved unless asked
                warn_failed(cassette)  # requests that failed before any response
                keep_only_this_run(cassette)  # record_mode="all" saves this run's calls only
                # what the save adds if another process saved the file meanwhile
                with saving(new_interactions(cassette)):
                    result = original_exit(self, *exc_info)
            else:
                result = original_exit(self, *exc_info)
        finally:
            self._CassetteContextDecorator__finish = None
            if finish is not None:
                unpatch = functools.partial(next, finish, None)
                if cassette is not None:
                    close(cassette, unpatch)
                else:
                    unpatch()
        if cassette is not None and not any(exc_info):
            raise_kept(cassette)  # a warning that was an error inside a request
        return result

    original_patch_generator = CassetteContextDecorator._patch_generator

    def _patch_generator(self: Any, cassette: Any) -> Any:
        # Before any patch: a cassette of another task still open, or a bad sidecar,
        # leaves nothing to undo.
        with opened(cassette) as patched:
            cassette.custom_patches = bound_patches(cassette.custom_patches, cassette)
            if isinstance(getattr(cassette, "_persister", None), Persister):
                plan_of(cassette)
            aiohttp_stub.install()  # vcrpy imports aiohttp now: so does this, once
            patches = original_patch_generator(self, cassette)
            try:
                entered = next(patches)  # the patches go on
            finally:
                patched()  # other cassettes may open (on top) from here
            try:
                yield entered
            except GeneratorExit:  # closed unfinished (collected): the patches come off first
                patches.close()
                raise
            yield from patches  # vcrpy's exit: the patches come off

    from llmcassette._vcr.vcrpy_lookups import answer_vcrpy_stubs

    CassetteContextDecorator.__exit__ = __exit__
    CassetteContextDecorator._patch_generator = _patch_generator
    answer_vcrpy_stubs()
    _no_reset_windows()
    _installed = True


def _no_reset_windows() -> None:
    """Keep the patches other threads read in place while vcrpy's own stubs send.

    vcrpy's ``VCRConnection`` (requests, urllib3, boto3, http.client) opens a
    ``force_reset()`` window around building and using its real connection: it puts the
    original of every patched attribute back, for the whole process, until the request is
    sent. Another thread's request in that window got a real connection class from its pool
    (``ConnectionCls``), or httpx's real transport, and went out unrecorded (in replay, to
    the network); a pooled connection made then stayed unrecorded for good. Agents that fan
    out over threads (Strands Agents' graphs, a ``ThreadPoolExecutor`` of boto3 calls) lost
    recordings that way.

    The window now restores module-level names only (``http.client.HTTPSConnection``,
    ``urllib3.connection.HTTPConnection``, ...): the real classes need those, since some
    reach their base class by the module's name (CPython's ``HTTPSConnection.__init__``
    calls ``super(HTTPSConnection, self)``). Class attributes (a pool's ``ConnectionCls``,
    a transport's ``handle_request``) are what live code in other threads reads, and
    nothing in the window does: the stubs build the real connection from the class they
    saved at import and talk to it directly.
    """
    import vcr.patch

    every_patcher = getattr(vcr.patch, "reset_patchers", None)
    if every_patcher is None:
        return

    def module_names_only() -> Any:
        for patcher in every_patcher():
            getter = getattr(patcher, "getter", None)  # mock.patch.object's target
            if getter is None or isinstance(getter(), types.ModuleType):
                yield patcher

    # force_reset() looks reset_patchers up by name each time it opens a window.
    vcr.patch.reset_patchers = module_names_only
