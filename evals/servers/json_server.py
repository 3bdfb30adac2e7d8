"""A local JSON-over-HTTP test server: the part the scripted LLM and the embeddings server share.

A subclass answers each ``POST`` body with :meth:`LocalJSONServer.answer`; this class binds
127.0.0.1 (port 0: a free one), serves on a thread while used as a context manager, writes the
JSON reply, and ignores a client that gave up before the reply was written.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, Any, dict[str, str]]
"""(HTTP status, JSON payload, extra headers)."""


class LocalJSONServer:
    """Run with ``with Subclass(...) as server: server.url`` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, port: int = 0) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> Answer:
        """Return the reply to one request's JSON body."""
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload, headers = outer.answer(body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

        return Handler

    def __enter__(self) -> Any:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
