"""A POST endpoint on 127.0.0.1 that streams chosen pieces as HTTP chunks, then ends cleanly.

The stream tests use it for bodies a real provider would not send: an SSE stream without
``[DONE]``, a JSON array without its ``]``, Bedrock frames cut before ``messageStop``.
"""

from __future__ import annotations

import http.server
import threading
import time


class ChunkedServer:
    """Answers every POST with ``pieces``, one HTTP chunk each, waits ``linger`` seconds,
    then ends the body cleanly (the last empty chunk). ``url`` is the server's base URL plus
    ``path``; ``pieces`` and ``linger`` may be changed between requests."""

    def __init__(self, content_type: str, pieces: list[bytes], path: str = "") -> None:
        self.content_type = content_type
        self.pieces = pieces
        self.linger = 0.0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-type", server.content_type)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for piece in server.pieces:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                if server.linger:
                    time.sleep(server.linger)
                self.wfile.write(b"0\r\n\r\n")

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.url = self.base + path

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
