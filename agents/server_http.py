"""The LangGraph server's own HTTP layer (``langgraph.json``'s ``http.app``): checks before routes.

``langgraph dev`` runs this app's middleware before every route, its own included (the auth
handler, agents/server_auth.py, sees only the API's routes and can answer 401 or 403 only):

- DNS rebinding: a request must name a loopback host or one of the ``allow_hosts`` setting
  (``HOPGRAPH_ALLOW_HOSTS``), else 421; a browser's cross-site request gets 403
  (core.network.HostGuard, the page's and the MCP server's rule);
- with the ``token`` setting, every route but the bare liveness check (``/ok``) is behind it:
  the API's description (``/docs``, ``/openapi.json``), ``/info`` and ``/metrics`` too, which
  LangGraph's auth handler never sees (a CORS preflight, which carries no credentials, passes).
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware

from hopgraph.core.network import HostGuard, bearer_matches, send_json
from hopgraph.core.settings import settings

DESCRIBED = ("/docs", "/openapi.json")
"""The routes that describe the API: served only with the token when one is set."""
LIVENESS = ("/ok",)
"""The one route served without the token when one is set: it says the server is up, no more."""


class ServerGuard:
    """ASGI middleware: the host and origin check, then the token on every route but ``/ok``."""

    def __init__(self, app: Any) -> None:
        """Wrap ``app`` with the settings of the server's start."""
        chosen = settings()
        self.token = chosen.token.get_secret_value() if chosen.token else None
        self.app = HostGuard(app, "", chosen.allow_hosts)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Refuse what HostGuard refuses, and the description without the token."""
        guarded = scope.get("path") not in LIVENESS and scope.get("method") != "OPTIONS"
        if scope.get("type") == "http" and self.token and guarded:
            headers = dict(scope.get("headers", []))
            if not bearer_matches(headers.get(b"authorization"), self.token):
                detail = "unauthorized: send Authorization: Bearer <HOPGRAPH_TOKEN>"
                await send_json(send, 401, {"detail": detail}, (b"www-authenticate", b"Bearer"))
                return
        await self.app(scope, receive, send)


app = Starlette(middleware=[Middleware(ServerGuard)])
