"""A tiny OpenAI-compatible chat server on 127.0.0.1 that follows a script and counts requests.

It speaks just enough of ``POST /v1/chat/completions`` for the real ``ChatOpenAI`` client, and can
answer 429, 500, malformed output or nothing at all (a timeout) on chosen requests.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = tuple[int, str]  # (HTTP status, content)


class ScriptedOpenAIServer:
    """Run with ``with ScriptedOpenAIServer(respond) as server: server.url``."""

    def __init__(self, respond: Callable[[str, int], Reply | float]) -> None:
        """``respond(prompt, n)`` gets the n-th request (from 1) with this prompt.

        It returns (status, content), or a number of seconds to stall before answering 200.
        """
        self.respond = respond
        self.requests: list[str] = []
        self.statuses: list[int] = []
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with outer._lock:
                    outer.requests.append(prompt)
                    outer._seen[prompt] = n = outer._seen.get(prompt, 0) + 1
                action = outer.respond(prompt, n)
                if isinstance(action, int | float) and not isinstance(action, bool):
                    time.sleep(action)
                    action = outer.respond(prompt, 10**6)  # then answer normally
                status, content = action
                with outer._lock:
                    outer.statuses.append(status)
                payload = (
                    {"error": {"message": content, "type": "test", "code": status}}
                    if status != 200
                    else {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "test"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {
                            "prompt_tokens": len(prompt) // 4,
                            "completion_tokens": len(content) // 4,
                            "total_tokens": (len(prompt) + len(content)) // 4,
                        },
                    }
                )
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

        return Handler

    def __enter__(self) -> ScriptedOpenAIServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
