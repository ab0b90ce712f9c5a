"""llmcassette's stand-ins for httpx and httpx2 transports while a cassette is in use.

vcrpy's own httpx stubs read a whole response before the caller sees a byte. These
replace them (vcrpy is told to skip its ``httpx`` and ``httpx2`` patchers and to apply
these as ``custom_patches``) but keep vcrpy's cassette, matching and record-mode logic:
the same ``can_play_response_for`` / ``play_response`` / ``append`` calls its stubs make.

vcrpy gives a custom patch its cassette by building a subclass of it for each cassette,
unless the patch already holds one. The stand-ins are objects that bind to the transport
like a method does; ``bound_patches`` gives each cassette copies holding it, when its
patches are applied (``llmcassette._vcr.fixes``): a copy costs far less than a class.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

from llmcassette import _eventstream as wire
from llmcassette._vcr import (
    clients,
    compat,
    deferred,
    fault_plan,
    lookup,
    open_cassettes,
    overlap,
    save_policy,
    stub_clients,
)
from llmcassette._vcr.bridge import incoming_request
from llmcassette._vcr.mismatch import RAISED, CassetteMismatch
from llmcassette._vcr.persister import shown_file
from llmcassette.cassette import events, eventstream
from llmcassette.errors import (
    FaultError,
    IncompleteStreamError,
    IncompleteStreamWarning,
    OverridesError,
)
from llmcassette.faults import placeholders
from llmcassette.matching.report import Context
from llmcassette.sessions import current_session
from llmcassette.transport import clock, fault_responses, integrity, lm15
from llmcassette.transport.pace import Pace
from llmcassette.transport.recorded import META_KEY
from llmcassette.transport.recording import Ending, recording_stream
from llmcassette.transport.replay import (
    check_integrity,
    event_pieces,
    headers_delay,
    replay_response,
    stopped_reading,
)
from llmcassette.transport.timing import event_times, times_of_sizes

# How many requests a cassette has been asked for (for "call #3" in mismatch reports).
_CALLS = "_llmcassette_calls"
#: Set on a cassette that refused a request (a mismatch), even one the caller caught.
REFUSED = "_llmcassette_refused"


def calls_made(cassette: Any) -> int:
    """How many requests ``cassette`` has taken so far, through llmcassette's httpx stubs
    and vcrpy's own (requests, aiohttp...)."""
    calls = cassette.__dict__
    return int(calls.get(_CALLS, 0)) + int(calls.get(fault_plan.STUB_CALLS, 0))


def refused(cassette: Any, mismatch: CassetteMismatch) -> None:
    """Keep the first request ``cassette`` refused: should the code under test catch the
    mismatch, what it left unplayed is reported with it (``unused.unused_error``)."""
    cassette.__dict__.setdefault(REFUSED, mismatch)


# vcrpy patcher groups these replace.
REPLACED_PATCHERS = compat.CLIENT_LIBRARIES


def _header_items(headers: Any) -> list[tuple[str, str]]:
    """``multi_items()`` of httpx ``Headers``: ``(name in lower case, value)`` pairs.

    httpx decodes every header once to choose an encoding, then again for each item: a few
    microseconds on every request and response. Headers all in ASCII (the usual case) are
    decoded here in one pass, the same way.
    """
    raw = headers.raw
    if all(name.isascii() and value.isascii() for name, value in raw):
        return [(name.decode("ascii").lower(), value.decode("ascii")) for name, value in raw]
    items: list[tuple[str, str]] = headers.multi_items()
    return items


def _joined(pairs: list[tuple[str, str]]) -> Iterable[tuple[str, str]]:
    """The pairs with a repeated name's values joined with ", ", as ``Headers.items()``."""
    out: dict[str, str] = {}
    for name, value in pairs:
        out[name] = out[name] + ", " + value if name in out else value
    return out.items()


class InterceptedMethod:
    """A transport's ``handle_request``: replay from the cassette or record while passing through.

    One object per transport method and settings; ``bound_to`` copies it for each cassette.
    """

    def __init__(
        self,
        library: Any,
        original: Any,
        pace: Pace,
        incomplete_streams: str,
        context: Context,
        overrides: Any = None,
        cassette: Any = None,
    ) -> None:
        self.library = library
        self.original = original  # the transport method as it was before any cassette
        self.pace = pace
        self.incomplete_streams = incomplete_streams
        self.context: Context = context  # where the cassette is used, for mismatch hints
        self.overrides = overrides
        self.cassette = cassette

    def bound_to(self, cassette: Any) -> InterceptedMethod:
        """This stand-in for ``cassette``."""
        return type(self)(
            self.library,
            self.original,
            self.pace,
            self.incomplete_streams,
            self.context,
            self.overrides,
            cassette,
        )

    def _routed(self) -> InterceptedMethod:
        """The stand-in of the cassette this request belongs to (``open_cassettes.receiver``):
        this one, or the same method's stand-in of the cassette its task or thread opened
        when a nested cassette of another task is the one patched now."""
        owner = open_cassettes.receiver(self.cassette)
        if owner is self.cassette:
            return self
        for patch in getattr(owner, "custom_patches", ()) or ():
            if isinstance(patch[2], InterceptedMethod) and patch[2].original is self.original:
                return patch[2]
        return self  # a cassette without llmcassette's stand-ins: vcrpy's rule, the last one

    def __get__(self, transport: Any, owner: type | None = None) -> Any:
        # Stored on the transport class in place of the method, it binds like one.
        if transport is None:
            return self
        return functools.partial(self.handle, transport)

    def __call__(self, transport: Any, request: Any) -> Any:
        # Called through the class, ``HTTPTransport.handle_request(transport, request)``.
        return self.handle(transport, request)

    def __repr__(self) -> str:
        name = getattr(self.original, "__qualname__", self.original)
        return f"<llmcassette stand-in for {name}>"

    def _vcr_request(self, request: Any, body: bytes) -> Any:
        headers = _joined(_header_items(request.headers))
        return incoming_request(request.method, str(request.url), body, headers)

    def _refuse(self, vcr_request: Any) -> None:
        call = self.cassette.__dict__.get(_CALLS, 0)
        mismatch = CassetteMismatch.for_request(self.cassette, vcr_request, call, self.context)
        refused(self.cassette, mismatch)
        raise mismatch

    def _recorded_response(
        self, vcr_request: Any, client: clients.LiveClient | None = None
    ) -> tuple[Any, Any]:
        """The recorded response to replay (or None to go to the network and record), and
        the request as the cassette will store it when the lookup already filtered it.

        Raises ``CassetteMismatch`` when the request is not in the cassette and may not be
        recorded.
        """
        cassette = self.cassette
        decision = lookup.decide(cassette, vcr_request, client)
        if isinstance(decision, lookup.Replay):
            return decision.response, None
        if isinstance(decision, lookup.Record):
            return None, decision.request
        if isinstance(decision, lookup.Refuse):
            self._refuse(vcr_request)
        # vcrpy's answer: ``decide`` already gave llmcassette's (the cassette's methods would
        # ask it again).
        if lookup.vcrpy_can_play(cassette, vcr_request):
            return lookup.vcrpy_play(cassette, vcr_request), None
        if cassette.write_protected and cassette.filter_request(vcr_request):
            self._refuse(vcr_request)
        return None, None

    def _finisher(
        self,
        vcr_request: Any,
        filtered: Any,
        response: Any,
        started: float,
        client: clients.LiveClient | None = None,
    ) -> Any:
        cassette = self.cassette
        headers_time = time.monotonic() - started
        session = current_session()  # of the caller: the stream may be read elsewhere
        number = None if client is None else client.bound
        headers: dict[str, list[str]] = {}
        for name, value in _header_items(response.headers):
            headers.setdefault(name, []).append(value)

        def header(name: str) -> str | None:
            # Headers.get again: each call decodes and compares every header; this reads
            # the dict just built, and joins repeated values with ", " as it does.
            values = headers.get(name)
            return None if values is None else ", ".join(values)

        content_type = header("content-type")
        # Bedrock's binary frames (litellm signs and sends them over httpx) are told by
        # their content-type alone; a text stream also by its URI and first byte (finish).
        frames = eventstream.is_eventstream(content_type)
        encoding = header("content-encoding")
        encoded = encoding is not None and encoding.lower() != "identity"
        declared_length = header("content-length")
        # Not the response itself: its stream holds this function, and a reference back
        # would make every recorded response a cycle that only the garbage collector frees.
        status = {"code": response.status_code, "message": response.reason_phrase}

        def finish(chunks: list[tuple[float, bytes]], ending: Ending) -> None:
            body = b"".join([chunk for _, chunk in chunks])
            # A compressed body is told by its content-type and URI alone (its first byte
            # is not the text's); the cassette writer tells it again from the decoded text.
            kind = events.stream_kind(content_type, vcr_request.uri, None if encoded else body)
            if kind is None and frames:
                kind = eventstream.KIND
            # The events of a text stream, cut once for the verdict and the timing; the
            # sizes of a Bedrock stream's frames.
            pieces = sizes = None
            if kind == eventstream.KIND:
                sizes = None if encoded else list(map(len, wire.split_frames(body)))
                verdict = None if encoded else integrity.judge_eventstream(body)
            else:
                pieces = events.split_body(kind, body) if not encoded else None
                verdict = integrity.judge(kind, pieces, vcr_request.uri)
            end_extra: dict[str, Any] = {}
            if not ending.complete and ending.error is None:
                # Closed by the caller: SDKs stop at a stream's terminator without reading
                # the chunked encoding's last empty chunk. Everything arrived if the stream
                # ended properly, or if a declared length was met.
                if kind is not None and not encoded:
                    ending.complete = verdict is True
                elif declared_length is not None and declared_length.isdigit():
                    ending.complete = int(declared_length) == len(body)
            if not ending.complete:
                end_extra["cut_short"] = True
                if ending.error_name:
                    end_extra["error"] = ending.error_name
            times = None
            if pieces is not None:
                times = event_times(pieces, [(t, len(chunk)) for t, chunk in chunks])
            elif sizes is not None:
                times = times_of_sizes(sizes, [(t, len(chunk)) for t, chunk in chunks])
            problem = None
            if ending.error is not None:
                problem = f"the connection broke mid-stream ({ending.error_name})"
            elif ending.complete and isinstance(verdict, str):
                problem = verdict
                end_extra["cut_short"] = True
            if problem is not None:
                end_extra["incomplete"] = problem
                uri = _shown_uri(cassette, vcr_request)
                if not _report_incomplete(self.incomplete_streams, uri, problem, ending, cassette):
                    return
            stored_headers = headers
            if body:
                body, stored_headers = placeholders.escape_body(body, headers)
            recorded = {
                "status": dict(status),
                "headers": stored_headers,
                "body": {"string": body},
                META_KEY: {
                    "stream": kind,
                    "event_times": times,
                    "response_extra": {"t": round(headers_time, 4)},
                    "end_extra": end_extra,
                    "session": session,
                    "client": number,
                },
            }
            if filtered is None:
                cassette.append(vcr_request, recorded)
            else:
                _append_filtered(cassette, filtered, recorded)
                answered = (status["code"], body, headers)
                overlap.note(cassette, filtered, session, started, answered, number)

        return finish

    def _lookup(
        self, request: Any, body: bytes, client: clients.LiveClient | None = None
    ) -> tuple[Any, Any, Any, float, Any]:
        """Restore the read request body; the vcrpy request, the response to replay (or
        None to record), the request as it will be stored (when already filtered), how long
        to wait before replaying, and the fault answer (None when no fault is involved)."""
        request.stream = self.library.ByteStream(body)
        cassette = self.cassette
        calls = cassette.__dict__
        calls[_CALLS] = calls.get(_CALLS, 0) + 1
        vcr_request = self._vcr_request(request, body)
        answer = fault_plan.answer(cassette, vcr_request, self.overrides)
        if answer is not None and answer.record:
            if cassette.write_protected:
                self._refuse(vcr_request)
            self._no_fault_when_recording(answer)
            return vcr_request, None, None, 0.0, None
        if answer is not None and not answer.lookup:
            recorded = answer.response
        else:
            recorded, filtered = self._recorded_response(vcr_request, client)
            if recorded is None:
                self._no_fault_when_recording(answer)
                return vcr_request, None, filtered, 0.0, None
            if answer is not None:
                answer = fault_plan.Answer(recorded, answer.fault, answer.where)
        fault = None if answer is None else answer.fault
        if recorded is not None and not (fault is not None and fault.status is not None):
            uri = functools.partial(_shown_uri, self.cassette, vcr_request)
            incomplete = check_integrity(recorded, uri, self.incomplete_streams, vcr_request.uri)
            if incomplete is not None:
                deferred.warn(self.cassette, incomplete, stacklevel=4)
        if fault is not None and fault.delay is not None:
            return vcr_request, recorded, None, fault.delay, answer
        delay = 0.0 if recorded is None else headers_delay(recorded, self.pace)
        return vcr_request, recorded, None, delay, answer

    def _no_fault_when_recording(self, answer: Any) -> None:
        if answer is not None and answer.fault is not None:
            raise FaultError(
                shown_file(self.cassette),
                answer.where,
                f"{answer.fault.describe()} changes a recorded response, but this request "
                "is being recorded (no recorded interaction answers it)",
                "record the cassette first, then add the fault",
            )

    def _replay(
        self,
        request: Any,
        vcr_request: Any,
        recorded: Any,
        answer: Any,
        sent_at: float,
        *,
        is_async: bool,
    ) -> Any:
        """The replayed response, with the answer's fault carried out (raises a failure);
        ``sent_at`` is when the request was sent (``clock.now()``)."""
        library = self.library
        fault = None if answer is None else answer.fault
        if fault is not None and fault.fail is not None:
            raise fault_responses.failure_for(library, fault, request)
        if fault is not None and fault.status is not None:
            recorded = fault_responses.error_response(fault, recorded, request.url.path)
        where = "the replayed interaction" if answer is None else answer.where
        shape = fault_responses.shape(
            library,
            recorded,
            fault,
            request,
            vcr_request,
            cassette=functools.partial(shown_file, self.cassette),
            where=where,
        )
        past_the_end = None
        if shape is None and self.incomplete_streams != "ignore" and stopped_reading(recorded):
            past_the_end = functools.partial(self._read_past_recording, vcr_request, recorded)
        return replay_response(
            library,
            recorded,
            request,
            self.pace,
            is_async=is_async,
            shape=shape,
            past_the_end=past_the_end,
            sent_at=sent_at,
        )

    def _read_past_recording(self, vcr_request: Any, recorded: Any) -> None:
        """The caller reads on where the recording stops: the code stopped reading this
        response when it was recorded, so what came next was never stored. Ending here
        would hand over a partial answer as whole: an error or a warning, as
        ``incomplete_streams`` says."""
        uri = _shown_uri(self.cassette, vcr_request)
        pieces = len(event_pieces(recorded)[0])
        problem = (
            f"the code stopped reading this response after {pieces} "
            f"{'piece' if pieces == 1 else 'pieces'} when it was recorded, and now reads on: "
            "the cassette does not hold what came next"
        )
        if self.incomplete_streams == "error":
            raise IncompleteStreamError(uri, problem, shown_file(self.cassette))
        deferred.warn(self.cassette, IncompleteStreamWarning(f"{uri}: {problem}"), stacklevel=3)

    def _note_failed(self, filtered: Any, error: BaseException, started: float) -> None:
        """A request being recorded failed before any response (``save_policy``)."""
        if filtered is not None:  # None: a request the cassette leaves alone
            save_policy.note_failed(self.cassette, filtered, error, time.monotonic() - started)

    def _pass_through(
        self,
        vcr_request: Any,
        filtered: Any,
        response: Any,
        started: float,
        client: clients.LiveClient | None = None,
        *,
        is_async: bool,
    ) -> Any:
        """Give the caller the live response, recording its stream as it is read."""
        finish = self._finisher(vcr_request, filtered, response, started, client)
        response.stream = recording_stream(
            self.library, response.stream, started, finish, is_async=is_async
        )
        return response

    def _answer_mismatch(self, request: Any, mismatch: CassetteMismatch) -> Any:
        """What a client gets for a request the cassette cannot answer: the mismatch raised
        once, never retried with backoff by the SDK that sent the request.

        The Stainless SDKs (openai, anthropic, ...) retry a transport error two more times
        with backoff and hide it behind ``APIConnectionError("Connection error.")``. The
        ones on httpx2 let their own errors through untouched: the mismatch is raised as
        one of them too (``sdk_error_class``). The older ones on httpx retry any exception,
        but never a response with ``x-should-retry: false``, whose body they put in the
        ``APIStatusError`` they raise: that response, holding the report, is returned.
        """
        if _RETRYING_SDK_HEADER not in request.headers:
            raise mismatch
        if self.library.__name__ != "httpx":
            mismatch.__class__ = sdk_error_class(str(request.headers.get("user-agent", "")))
            raise mismatch
        error = {"message": str(mismatch), "type": "llmcassette_mismatch", "code": mismatch.code}
        return self.library.Response(
            MISMATCH_STATUS,
            headers={"content-type": "application/json", "x-should-retry": "false"},
            content=json.dumps({"error": error}).encode("utf-8"),
            request=request,
        )

    def handle(self, transport: Any, request: Any) -> Any:
        routed = self._routed()
        if routed is not self:
            return routed.handle(transport, request)
        body = b"".join(request.stream)
        client = clients.live_client(self.cassette, transport)  # each SDK client: a transport
        try:
            with _SHOWN_IN_REPORT:
                vcr_request, recorded, filtered, delay, answer = self._lookup(request, body, client)
        except CassetteMismatch as mismatch:
            return self._answer_mismatch(request, mismatch)
        if recorded is not None or answer is not None:
            sent_at = clock.now()
            if delay > 0:
                clock.wait(delay)
            with _SHOWN_IN_REPORT:
                return self._replay(request, vcr_request, recorded, answer, sent_at, is_async=False)
        started = time.monotonic()
        try:
            response = self.original(transport, request)
        except Exception as error:
            self._note_failed(filtered, error, started)
            raise
        return self._pass_through(vcr_request, filtered, response, started, client, is_async=False)


class AsyncInterceptedMethod(InterceptedMethod):
    """A transport's ``handle_async_request``, the async twin of ``InterceptedMethod``."""

    async def handle(self, transport: Any, request: Any) -> Any:
        routed = self._routed()
        if routed is not self:
            return await routed.handle(transport, request)
        body = b"".join([part async for part in request.stream])
        client = clients.live_client(self.cassette, transport)
        try:
            with _SHOWN_IN_REPORT:
                vcr_request, recorded, filtered, delay, answer = self._lookup(request, body, client)
        except CassetteMismatch as mismatch:
            return self._answer_mismatch(request, mismatch)
        if recorded is not None or answer is not None:
            sent_at = clock.now()
            if delay > 0:
                await clock.wait_async(delay)
            with _SHOWN_IN_REPORT:
                return self._replay(request, vcr_request, recorded, answer, sent_at, is_async=True)
        started = time.monotonic()
        try:
            response = await self.original(transport, request)
        except BaseException as error:  # a timeout, a refused connection, a cancelled task
            self._note_failed(filtered, error, started)
            raise
        return self._pass_through(vcr_request, filtered, response, started, client, is_async=True)


def _append_filtered(cassette: Any, filtered: Any, response: dict[str, Any]) -> None:
    """vcrpy's ``Cassette.append`` for a request the lookup already filtered.

    ``append`` would run ``before_record_request`` (a deep copy and redaction) a second time
    and deep-copy a response dict that was just built for the cassette.
    """
    recorded = cassette._before_record_response(response)
    if recorded is None:
        return
    cassette.data.append((filtered, recorded))
    cassette.dirty = True


class _ShownInReport:
    """Keep fault and override errors for the pytest report: SDKs wrap what a transport raises.

    A class, not a ``contextlib.contextmanager``: that builds a generator and a context
    object on every request, and this one holds no state.
    """

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if isinstance(error, (FaultError, OverridesError)):
            RAISED.append(error)  # and the error goes on


_SHOWN_IN_REPORT = _ShownInReport()


# Sent by every Stainless-generated SDK (openai, anthropic, ...): it retries failed calls.
_RETRYING_SDK_HEADER = "x-stainless-retry-count"
# The status of the response that answers such an SDK's unanswerable request: no server
# sends it, so the SDK raises its generic ``APIStatusError`` ("Error code: 460 - ...").
MISMATCH_STATUS = 460


# The base error class of each SDK, by the start of the user-agent it sends.
_SDK_ERRORS = {"anthropic/": ("anthropic", "AnthropicError"), "openai/": ("openai", "OpenAIError")}


_MISMATCH_ALSO: dict[type[Exception], type[CassetteMismatch]] = {}  # one per SDK at most


def sdk_error_class(user_agent: str) -> type[CassetteMismatch]:
    """``CassetteMismatch``, also a subclass of the error class of the SDK that sends
    ``user_agent`` (already imported: it sent the request), so the SDK neither wraps nor
    retries it; plain ``CassetteMismatch`` for any other client."""
    agent = user_agent.lower().removeprefix("async")  # "AsyncOpenAI/Python 3.57.0"
    for prefix, (module_name, class_name) in _SDK_ERRORS.items():
        if not agent.startswith(prefix):
            continue
        base = getattr(sys.modules.get(module_name), class_name, None)
        if not (isinstance(base, type) and issubclass(base, Exception)):
            break
        found = _MISMATCH_ALSO.get(base)
        if found is None:
            namespace = {"__module__": CassetteMismatch.__module__}
            found = type("CassetteMismatch", (CassetteMismatch, base), namespace)
            _MISMATCH_ALSO[base] = found
        return found
    return CassetteMismatch


def _shown_uri(cassette: Any, request: Any) -> str:
    """The URI of a live request as a message may show it: through the cassette's
    ``before_record_request`` (llmcassette's redaction: a ``?key=`` is not printed)."""
    try:
        shown = cassette._before_record_request(copy.deepcopy(request))
    except Exception:
        shown = None
    # None: the user's hook drops this request; an error: redaction failed. Neither shows it.
    return str(shown.uri) if shown is not None else "<request URI not shown>"


def _report_incomplete(policy: str, uri: str, problem: str, ending: Ending, cassette: Any) -> bool:
    """Warn about or refuse a stream that was cut short; returns whether to record it."""
    if policy == "ignore":
        return True
    path = str(getattr(cassette, "_path", "")) or None
    if policy == "warn":
        deferred.warn(cassette, IncompleteStreamWarning(f"{uri}: {problem}"), stacklevel=2)
        return True
    if ending.error is None:  # a broken connection already raises the client's own error
        raise IncompleteStreamError(uri, problem, path)
    return False


INCOMPLETE_STREAM_POLICIES = ("warn", "error", "ignore")


def patches(
    pace: Pace, incomplete_streams: str = "warn", overrides: Any = None, context: Context = "vcr"
) -> Iterator[tuple[Any, str, Any]]:
    """vcrpy ``custom_patches`` triples for every installed httpx flavour
    (``configure`` has checked ``incomplete_streams``); ``context`` is where the cassette
    is used (``"pytest"``, ``"use_cassette"``, ``"vcr"``), for the hints of mismatches.
    Each stand-in is bound to a cassette when it is applied (``bound_patches``). Then
    lm15's transports (``llmcassette.transport.lm15``), rerouted through httpx."""
    for library, target, method, kind, original in _transport_methods():
        stand_in = kind(library, original, pace, incomplete_streams, context, overrides)
        yield target, method, stand_in
    # lm15 (DSPy's default engine) sends over its own sockets: through httpx instead.
    yield from lm15.patches()
    # The urllib3 pool of each request vcrpy's own stubs send, for client numbering.
    yield from stub_clients.patches()


@functools.cache
def _transport_methods() -> tuple[tuple[Any, type, str, type[InterceptedMethod], Any], ...]:
    """``(library, transport class, method name, stand-in class, original method)`` for
    each transport method to replace, found once per process (every cassette needs them)."""
    found = []
    for library_name in REPLACED_PATCHERS:
        if not compat.installed(library_name):
            continue
        library = importlib.import_module(library_name)
        for class_name, method, is_async in compat.TRANSPORT_METHODS:
            target = getattr(library, class_name, None)
            if target is None:
                continue
            kind = AsyncInterceptedMethod if is_async else InterceptedMethod
            original = compat.saved_original(library_name, class_name, method)
            found.append((library, target, method, kind, original))
    return tuple(found)


def is_ours(patch: tuple[Any, ...]) -> bool:
    """Whether a ``custom_patches`` entry was installed by llmcassette."""
    return (
        isinstance(patch[2], InterceptedMethod)
        or lm15.is_ours(patch[2])
        or stub_clients.is_ours(patch[2])
    )


def bound_patches(patches: Iterable[tuple[Any, ...]], cassette: Any) -> tuple[tuple[Any, ...], ...]:
    """A cassette's ``custom_patches`` with llmcassette's stand-ins bound to it; vcrpy
    applies a patch that holds its cassette as it is, and subclasses the others."""
    return tuple(
        (patch[0], patch[1], patch[2].bound_to(cassette))
        if isinstance(patch[2], InterceptedMethod)
        else patch
        for patch in patches
    )
