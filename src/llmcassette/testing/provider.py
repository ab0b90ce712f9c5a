"""`LocalProvider`: a fake LLM provider on localhost (OpenAI, Azure, Anthropic, Gemini...)."""

from __future__ import annotations

import threading
from typing import Any

from llmcassette.testing._server import _Server
from llmcassette.testing._state import ProviderState, QueuedError, ReceivedRequest, StreamBehaviour

__all__ = ["LocalProvider", "ReceivedRequest", "StreamBehaviour"]

# stop() returns within about this long even when clients hold streams open.
_STOP_TIMEOUT = 1.0


class LocalProvider:
    """A deterministic LLM provider speaking the providers' wire formats (llmcassette.testing).

    Use it as a context manager, or call `start()` / `stop()`::

        with LocalProvider() as provider:
            client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test")
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._port = port
        self._state = ProviderState()
        #: Every request received, oldest first.
        self.requests: list[ReceivedRequest] = self._state.requests
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lifecycle = threading.Lock()

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> LocalProvider:
        """Bind and serve in a daemon thread; returns self. Does nothing if already running."""
        with self._lifecycle:
            if self._server is None:
                server = _Server((self.host, self._port), self._state)
                self._port = int(server.server_address[1])
                thread = threading.Thread(
                    target=server.serve, name=f"llmcassette-provider-{self._port}", daemon=True
                )
                thread.start()
                self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop serving and cut every open connection, streams included; idempotent."""
        with self._lifecycle:
            server, thread = self._server, self._thread
            self._server = self._thread = None
        if server is None or thread is None:
            return
        server.stop_serving()
        thread.join()
        server.server_close()
        server.close_connections(_STOP_TIMEOUT)

    def __enter__(self) -> LocalProvider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- addresses --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (known once started)."""
        if self._port == 0:
            raise RuntimeError("LocalProvider has no port yet; call start() first")
        return self._port

    @property
    def url(self) -> str:
        """`http://HOST:PORT`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for `openai.OpenAI(base_url=...)`."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for `anthropic.Anthropic(base_url=...)`."""
        return self.url

    @property
    def ollama_base_url(self) -> str:
        """Base URL for Ollama clients (they append `/api/...`)."""
        return self.url

    @property
    def gemini_base_url(self) -> str:
        """Base URL for google-genai's `HttpOptions(base_url=...)` (it appends `/v1beta/...`,
        or Vertex AI's `/v1beta1/...`)."""
        return self.url

    @property
    def azure_endpoint(self) -> str:
        """`azure_endpoint` for `openai.AzureOpenAI(azure_endpoint=...)` (it appends
        `/openai/deployments/...`)."""
        return self.url

    @property
    def bedrock_endpoint_url(self) -> str:
        """`endpoint_url` for `boto3.client("bedrock-runtime", endpoint_url=...)`."""
        return self.url

    # --- behaviour --------------------------------------------------------------------------

    @property
    def behaviour(self) -> StreamBehaviour:
        """Settings for streamed answers; mutate its fields or assign a new one."""
        return self._state.behaviour

    @behaviour.setter
    def behaviour(self, value: StreamBehaviour) -> None:
        with self._state.lock:
            self._state.behaviour = value

    @property
    def active_streams(self) -> int:
        """How many streamed responses are being written right now."""
        with self._state.lock:
            return self._state.active_streams

    def queue_error(
        self,
        status: int,
        *,
        retry_after: float | None = None,
        body: dict[str, Any] | None = None,
        count: int = 1,
    ) -> None:
        """The next `count` requests get this error (provider-appropriate JSON error body)."""
        with self._state.lock:
            self._state.errors.extend([QueuedError(status, retry_after, body)] * count)

    def reset(self) -> None:
        """Forget received requests and queued errors, and restore the default behaviour."""
        with self._state.lock:
            self._state.requests.clear()
            self._state.errors.clear()
            self._state.behaviour = StreamBehaviour()

    def __repr__(self) -> str:
        where = self.url if self._port else f"{self.host}:?"
        running = "running" if self._server is not None else "stopped"
        return f"<LocalProvider {where} {running}>"
