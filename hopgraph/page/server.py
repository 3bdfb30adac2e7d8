"""`hopgraph ui`: a small web application over one index: search, compare, evidence graph, index.

Server-rendered page (hopgraph/page/html.py: HTML, CSS and a little vanilla JS, no external assets)
over a JSON API:

- ``GET /api/methods``: the retrievers the index runs, each with its one-line description, and
  an example question about the index's first document;
- ``GET /api/search?q=&method=&k=&where=&expand=``: the ranked passages with title, section,
  text (also split into prose and highlighted code), score and provenance (the CLI's errors
  come back as ``{"error", "hint"}``, status 400);
- ``GET /api/graph?q=&method=&k=&gold=``: the evidence graph (nodes, edges, and its SVG as
  `hopgraph explain` draws it, each passage named by its section);
- ``GET /api/index``: documents, counts, generation, graph statistics and what `check` says,
  with the figures also as worded tables (hopgraph/page/formatting.py);
- ``GET /api/ask?q=&method=&k=``: an agent's steps as they happen, then its answer
  (server-sent events; hopgraph/page/answers.py), or evidence alone when no LLM is configured.

It reads a :class:`LiveIndex`, so every request answers from the newest committed generation.
Security is the other servers': on a loopback address no token is needed; elsewhere every request
needs ``Authorization: Bearer TOKEN`` or the cookie that ``/login?code=…`` sets (the command
prints that one-time URL). Replies name the index by its folder name, never by a server path:
an error is ``{"error", "hint"}`` with any path cleaned (core.errors.public_reply), status 400
for bad input or a damaged index, 413 for a question over MAX_QUESTION characters, 500 for a
fault of the server (logged with its traceback).
"""

from __future__ import annotations

import hmac
import html
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from hopgraph.core.errors import HopgraphError, TooLargeError, public_reply
from hopgraph.core.network import (
    MAX_REQUEST_LINE,
    HostGuard,
    bearer_matches,
    check_exposure,
    parse_host_port,
    request_logger,
)
from hopgraph.graph_store import Index, LiveIndex

from . import answers
from .formatting import example_question
from .html import FAVICON, PAGE

log = logging.getLogger("hopgraph.page")

COOKIE = "hopgraph_token"
WORKERS = 4
"""Requests served at once on worker threads (a slow method does not hold the page)."""
Handler = Callable[[Index, Request], Any]


class UIApp:
    """The routes over one live index, with the token (None: loopback only)."""

    def __init__(
        self,
        live: LiveIndex,
        token: str | None = None,
        bound: str = "127.0.0.1",
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.live, self.token = live, token
        self.bound, self.allowed_hosts = bound, tuple(allowed_hosts)
        self.login_code = secrets.token_urlsafe(24) if token else None
        self.workers = anyio.CapacityLimiter(WORKERS)

    def app(self) -> HostGuard:
        """Return the ASGI application, behind the host and origin check (core.network)."""
        routes = [
            Route("/", self.page),
            Route("/login", self.login),
            Route("/favicon.ico", favicon),
            Route("/api/methods", self.api(self.methods)),
            Route("/api/search", self.api(self.search)),
            Route("/api/graph", self.api(self.graph)),
            Route("/api/index", self.api(self.index_view)),
            Route("/api/ask", answers.endpoint(self)),
        ]
        page = Starlette(routes=routes)
        return HostGuard(page, self.bound, self.allowed_hosts, self.token is not None)

    # -- security -----------------------------------------------------------------------------

    @staticmethod
    def refused() -> Response:
        """Answer a request without the token."""
        return _refused()

    def allowed(self, request: Request) -> bool:
        """Tell whether a request carries the token (always, without one: loopback only)."""
        if self.token is None:
            return True
        if bearer_matches(request.headers.get("authorization"), self.token):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return hmac.compare_digest(cookie.encode(), self.token.encode())

    async def login(self, request: Request) -> Response:
        """Trade the one-time code the command printed for the token cookie, then go home."""
        code = request.query_params.get("code", "")
        if self.login_code is None or not hmac.compare_digest(code, self.login_code):
            return _refused()
        self.login_code = None  # one time
        response = RedirectResponse("/", status_code=303)
        assert self.token is not None
        response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
        return response

    async def page(self, request: Request) -> Response:
        """Serve the page (its data comes from the API)."""
        if not self.allowed(request):
            return _refused()
        name = html.escape(self.live.directory.name)
        return HTMLResponse(PAGE.replace("{index_name}", name))

    def api(self, work: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Wrap a handler: the token check, a worker thread, errors as the CLI words them."""

        async def endpoint(request: Request) -> Response:
            if not self.allowed(request):
                return _refused()
            started = time.perf_counter()
            response = await answered(request)
            params = " ".join(
                f"{k}={len(v)} chars" if k == "q" else f"{k}={v[:40]}"
                for k, v in request.query_params.items()
            )
            ms = 1000 * (time.perf_counter() - started)
            log.info("%s %s: %d in %.0f ms", request.url.path, params, response.status_code, ms)
            return response

        async def answered(request: Request) -> Response:
            def run() -> Any:
                with self.live.reading() as index:
                    return work(index, request)

            try:
                return JSONResponse(await anyio.to_thread.run_sync(run, limiter=self.workers))
            except Exception as err:
                status = 400 if isinstance(err, HopgraphError) else 500
                status = 413 if isinstance(err, TooLargeError) else status
                reply = public_reply(err, self.live.directory)
                return JSONResponse(reply, status_code=status)

        return endpoint

    # -- the API ------------------------------------------------------------------------------

    def methods(self, index: Index, request: Request) -> dict[str, Any]:
        """List the retrievers this index runs, with their descriptions."""
        from hopgraph.tools import RETRIEVERS
        from hopgraph.tools.shared.registry import served_methods

        return {
            "index": index.directory.name,
            "example": example_question(index),
            "agents": answers.ask_methods(),
            "methods": [
                {"name": m, "description": RETRIEVERS[m].description} for m in served_methods(index)
            ],
        }

    def search(self, index: Index, request: Request) -> dict[str, Any]:
        """Rank passages for ``q`` with ``method``: the CLI's `retrieve`, as JSON."""
        from .queries import run_search

        return run_search(index, request.query_params, served=self.methods(index, request))

    def graph(self, index: Index, request: Request) -> dict[str, Any]:
        """Return the evidence graph of a search (nodes, edges, SVG)."""
        from .queries import run_graph

        return run_graph(index, request.query_params, served=self.methods(index, request))

    def index_view(self, index: Index, request: Request) -> dict[str, Any]:
        """Describe the index: documents, counts, generation, graphs, check."""
        from .queries import describe_index

        return describe_index(index)


async def favicon(request: Request) -> Response:
    """Serve the page's icon (no token needed: it holds nothing of the index)."""
    return Response(FAVICON, media_type="image/x-icon", headers={"cache-control": "max-age=86400"})


def _refused() -> Response:
    return JSONResponse(
        {"error": "unauthorized", "hint": "send Authorization: Bearer <HOPGRAPH_TOKEN>, or open "
         "the one-time URL `hopgraph ui` printed"},
        status_code=401,
        headers={"www-authenticate": "Bearer"},
    )  # fmt: skip


def serve(
    directory: Path,
    http: str,
    token: str | None,
    opener: Callable[[Path, str | None], Index] = Index.open,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve the page at ``http`` until Ctrl-C (``opener``: how a generation is opened).

    ``allowed_hosts``: names besides loopback and the bound address a request may use (HostGuard).
    """
    host, port = parse_host_port(http, "127.0.0.1:8766")
    check_exposure(http, host, token)
    import uvicorn

    request_logger(log.name)
    with LiveIndex(directory, opener=opener) as live:
        ui = UIApp(live, token, host, allowed_hosts)
        where = f"http://{http}/"
        if ui.login_code:
            print(f"hopgraph ui on {where} (token required); open once: "
                  f"{where}login?code={ui.login_code}", flush=True)  # fmt: skip
        else:
            print(f"hopgraph ui on {where} (loopback only; Ctrl-C stops)", flush=True)
        # h11 with room for a long question: httptools (uvicorn's default here) and h11's own
        # limit answer one with a plain-text 400 the page cannot read; the API says 413 in JSON
        uvicorn.run(ui.app(), host=host, port=port, log_level="warning", http="h11",
                    h11_max_incomplete_event_size=MAX_REQUEST_LINE)  # fmt: skip
