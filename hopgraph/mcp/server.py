"""`hopgraph mcp`: the retrievers, ``ask`` and index stats as an MCP server (stdio or HTTP).

Tools take typed, validated arguments (their JSON schemas come from the signatures). Bad input
and failures come back as MCP tool errors (``isError``) with the message a CLI user would see;
the server keeps serving. ``ask`` needs an LLM (``HOPGRAPH_LLM_*``); without one it answers
with an error saying what to set, and the retrievers still work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import Field, ValidationError

from hopgraph.agents.registry import DEFAULT_METHOD, agent_methods
from hopgraph.core.errors import HopgraphError, public_text
from hopgraph.core.network import (
    MAX_K,
    MAX_QUESTION,
    HostGuard,
    bearer_matches,
    check_exposure,
    checked_k,
    checked_text,
    parse_host_port,
    request_logger,
    send_json,
)
from hopgraph.graph_store import LiveIndex
from hopgraph.graph_store.documents.filters import JSON_HELP
from hopgraph.tools.shared.expand import EXPAND_HELP
from hopgraph.tools.shared.registry import (
    DEFAULT_PRESET,
    Preset,
    served_methods,
)

METHOD_HELP = "retrieval method"
PRESET_HELP = "tuned: our best settings on dev (default); paper: each method as its paper has it"
AskMethod = Literal[tuple(agent_methods())]  # type: ignore[valid-type]  # the registry's

log = logging.getLogger("hopgraph.mcp")

WORKERS = 4
"""Requests served at once, each on a worker thread: one waiting on an LLM holds no other
(tests/integration/test_mcp.py, an ``ask`` stalled 3 s). A huge query's CPU work shares the
one interpreter: beside a 1 MB query a small one stays under a second (0.74 s in one CI run on a
busy machine). The index's caches are safe to share (graph_store.index.reader)."""
T = TypeVar("T")

INSTRUCTIONS = (
    "hopgraph retrieves evidence for multi-hop questions from one indexed corpus. Use "
    "`retrieve` for passages (gnn_ret follows links between passages; hybrid is plain search) "
    "and `ask` for an answer with cited passages (several LLM calls)."
)


def build_server(
    live: LiveIndex,
    host: str = "127.0.0.1",
    port: int = 8000,
    methods: Sequence[str] | None = None,
) -> FastMCP:
    """Return an MCP server exposing ``live``; the caller runs it and closes the index.

    Each request answers from the newest committed generation (LiveIndex.current): a write
    committed while the server runs is seen by the next request, never half-way through one.
    ``methods``: the retrievers ``retrieve`` offers (default: those the index runs,
    :func:`served_methods`).
    """
    server = Server(
        "hopgraph", instructions=INSTRUCTIONS, host=host, port=port, log_level="WARNING"
    )
    workers = anyio.CapacityLimiter(WORKERS)

    async def in_worker(work: Callable[[], T]) -> T:
        """Run ``work`` on a worker thread: the event loop keeps serving other requests."""
        return await anyio.to_thread.run_sync(work, limiter=workers)

    async def retrieve(
        # no MAX_QUESTION: a long text is a query too (a passage to find the like of); beside
        # a 1 MB one other clients' queries stay under a second (tests/integration/test_mcp.py)
        query: Annotated[str, Field(min_length=1, description="question or keywords")],
        method: str = "gnn_ret",  # typed below: the methods this index runs
        # strict: JSON's true is not the number 1 (pydantic's lax mode would read it so)
        k: Annotated[int, Field(ge=1, le=MAX_K, strict=True, description="passages to return")] = 5,
        preset: Annotated[Preset, Field(description=PRESET_HELP)] = DEFAULT_PRESET,
        # any JSON object: the retriever checks it as the CLI does (graph_store filters), in
        # the CLI's words instead of pydantic's three errors for one value
        where: Annotated[dict[str, Any] | None, Field(description=JSON_HELP)] = None,
        expand: Annotated[str | None, Field(description=EXPAND_HELP)] = None,
    ) -> list[dict[str, Any]]:
        """Return the k best passages for a query, with scores and why each was retrieved."""
        from hopgraph.tools import make_retriever
        from hopgraph.tools.shared.expand import Expansion, expand_hits

        def work() -> list[dict[str, Any]]:
            with _as_tool_error(live.directory), live.reading() as index:
                expansion = Expansion.parse(expand) if expand else None
                hits = make_retriever(method, index, preset=preset).retrieve(query, k, where)
                if expansion is not None:
                    hits = expand_hits(index, hits, expansion)
                return [h.to_dict() for h in hits]

        return await in_worker(work)

    # The methods this index runs: the standalone ones, and those with trained weights here.
    offered = tuple(methods) if methods is not None else served_methods(live.current())
    retrieve.__annotations__["method"] = Annotated[
        Literal[offered], Field(description=METHOD_HELP)  # type: ignore[valid-type]
    ]
    server.tool()(retrieve)

    @server.tool()
    async def ask(
        question: Annotated[
            str, Field(min_length=1, max_length=MAX_QUESTION, description="a standalone question")
        ],
        method: Annotated[AskMethod, Field(description="answering method")] = DEFAULT_METHOD,
        preset: Annotated[Preset, Field(description=PRESET_HELP)] = DEFAULT_PRESET,
    ) -> dict[str, Any]:
        """Answer a question from the corpus, citing passages, with the steps and LLM usage.

        With no LLM configured on the server: an extractive answer (the passages' sentences
        that answer, at most three, each citing its passage), the passages a
        retriever ranks first with their answering sentence, and why no answer was written (as
        `hopgraph ask`).
        """
        from hopgraph.agents.evidence import answer_alone
        from hopgraph.agents.run import run_agent
        from hopgraph.core.llm import SETUP_HINT, choose_chat

        def work() -> dict[str, Any]:
            with _as_tool_error(live.directory), live.reading() as index:
                chat = choose_chat()
                if chat is None:
                    reply = answer_alone(index, method, question, 5, preset)
                    return {
                        "answer": reply["answer"]["text"],
                        "extractive": reply["answer"],
                        "method": reply["method"],
                        "evidence": reply["evidence"],
                        "llm": f"no LLM is configured on this server ({SETUP_HINT})",
                    }
                result = run_agent(method, question, index, chat, preset=preset)
                cited = [{k: c[k] for k in ("id", "title", "text")} for c in result.citations]
                return {
                    "answer": result.answer,
                    "citations": cited,
                    "steps": result.steps,
                    "usage": dict(result.usage),
                }

        return await in_worker(work)

    @server.tool()
    def index_stats() -> dict[str, Any]:
        """Describe the index: counts, embedding model, whether graphs are built."""
        with _as_tool_error(live.directory):
            index = live.current()
        manifest = index.manifest
        return {
            "index": index.directory.name,  # its name, not where it lies on the server
            "generation": manifest.generation,
            "counts": manifest.counts,
            "model": manifest.settings.model,
            "graphs": manifest.graph["counts"] if manifest.graph else None,
        }

    return server


class ArgumentError(ToolError):
    """A call with an argument its tool does not have."""


class Server(FastMCP):
    """FastMCP whose argument errors read as the CLI's and whose requests log one line each.

    FastMCP's own records (a multi-line box per request) are kept from WARNING up; each tool
    call is one line of ``hopgraph.mcp`` at INFO: the tool, its method and k, the query's
    length (never its text), the outcome and the time taken.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; arguments its schema refuses come back named, with what is allowed."""
        started, outcome = time.perf_counter(), "ok"
        try:
            self._known_arguments(name, arguments)
            return await super().call_tool(name, arguments)
        except ToolError as err:
            refused = isinstance(err, ArgumentError) or isinstance(err.__cause__, ValidationError)
            outcome = "refused" if refused else "failed"
            if isinstance(err.__cause__, ValidationError):
                raise ToolError(argument_errors(name, err.__cause__.errors())) from None
            raise
        finally:
            ms = 1000 * (time.perf_counter() - started)
            log.info("%s %s: %s in %.0f ms", name, _described(arguments), outcome, ms)

    def _known_arguments(self, name: str, arguments: dict[str, Any]) -> None:
        """Refuse an argument the tool does not have (a misspelt ``topk`` is not ignored)."""
        tool = self._tool_manager.get_tool(name)
        allowed = (tool.parameters.get("properties") or {}) if tool is not None else None
        unknown = sorted(set(arguments) - set(allowed)) if allowed is not None else []
        if unknown:
            raise ArgumentError(
                f"{name}: unknown argument{'s' if unknown[1:] else ''} "
                f"{', '.join(map(repr, unknown))} (its arguments: {', '.join(allowed)}; "
                f"tools/list gives every argument of {name})"
            )


def _described(arguments: dict[str, Any]) -> str:
    """Describe a call's arguments for the log: names and small values, a text's length only."""
    parts = []
    for name, value in arguments.items():
        if isinstance(value, str) and name in ("query", "question"):
            parts.append(f"{name}={len(value)} chars")
        elif isinstance(value, str | int | float | bool) and len(str(value)) <= 40:
            parts.append(f"{name}={value}")
        else:
            parts.append(f"{name}=…")
    return " ".join(parts)


def argument_errors(tool: str, errors: Sequence[Any]) -> str:
    """Say which arguments of ``tool`` were wrong and what each allows (pydantic's errors)."""
    problems = []
    for error in errors:
        name = ".".join(str(part) for part in error["loc"]) or "the arguments"
        if error["type"] == "missing":
            problems.append(f"{name} is required")
        elif name in SAME_WORDS:  # as the CLI and the Python seams say it
            problems.append(SAME_WORDS[name](error))
        else:
            problems.append(f"{name} {_allowed(error)} (got {error.get('input')!r})")
    return f"{tool}: " + "; ".join(problems) + f" (tools/list gives every argument of {tool})"


def _checked_words(check: Callable[[Any], object]) -> Callable[[Any], str]:
    """Return what says an argument's error as ``check`` (the CLI's parser) says it."""

    def words(error: Any) -> str:
        try:
            check(error.get("input"))
        except HopgraphError as err:
            return err.message
        return f"{'.'.join(map(str, error['loc']))} {_allowed(error)} (got {error.get('input')!r})"

    return words


def _method_words(error: Any) -> str:
    expected = (error.get("ctx") or {}).get("expected", "")
    return f"unknown method {error.get('input')!r} (one of {expected})"


SAME_WORDS: dict[str, Callable[[Any], str]] = {
    "k": _checked_words(checked_k),
    "query": _checked_words(checked_text),
    "method": _method_words,
}
"""Arguments whose errors read as every other surface's (core.network's checks)."""


def _allowed(error: Any) -> str:
    """Say what an argument allows, from a pydantic error's type and context."""
    kind, context = error["type"], error.get("ctx") or {}
    if kind == "literal_error":
        return f"must be one of {context['expected']}"
    if kind in ("less_than_equal", "less_than"):
        return f"must be at most {context.get('le', context.get('lt'))}"
    if kind in ("greater_than_equal", "greater_than"):
        return f"must be at least {context.get('ge', context.get('gt'))}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind in ("string_type", "dict_type", "bool_type", "bool_parsing", "list_type"):
        wanted = {"string": "text", "dict": "an object", "bool": "true or false", "list": "a list"}
        return f"must be {wanted[kind.split('_')[0]]}"
    message = str(error.get("msg", "is not allowed"))
    return message[:1].lower() + message[1:]


@contextmanager
def _as_tool_error(root: Path) -> Iterator[None]:
    """Turn errors into MCP tool errors: the message (and hint) a CLI user would see.

    They name no server path (``root``: the index folder, named by its name;
    core.errors.public_reply).
    """
    try:
        yield
    except ToolError:
        raise
    except Exception as err:
        raise ToolError(public_text(err, root)) from err


def serve(
    live: LiveIndex, http: str | None, token: str | None = None, allowed_hosts: Sequence[str] = ()
) -> None:
    """Serve over stdio, or over streamable HTTP at ``http`` ("HOST:PORT", path /mcp).

    Over HTTP with a ``token``, every request must carry ``Authorization: Bearer TOKEN`` (else
    401); without one the server binds only to a loopback address. Either way a request must
    name a loopback host, the bound address or one of ``allowed_hosts`` (else 421), and a
    cross-site one is refused (403; core.network.HostGuard).
    """
    request_logger(log.name)
    if http is None:
        build_server(live).run("stdio")
        return
    host, port = parse_host_port(http)
    check_exposure(http, host, token)
    import uvicorn

    logging.getLogger("mcp.server.streamable_http").addFilter(NormalDisconnects())
    guard = "bearer token required" if token else "no token: loopback only"
    print(f"hopgraph MCP server on http://{http}/mcp ({guard}; Ctrl-C stops)", flush=True)
    app = build_server(live, host, port).streamable_http_app()
    guarded = HostGuard(BearerAuth(app, token) if token else app, host, allowed_hosts, bool(token))
    uvicorn.run(guarded, host=host, port=port, log_level="warning")


class NormalDisconnects(logging.Filter):
    """Drop the traceback mcp logs when a client ends its session (its stream is closed).

    A client that disconnects closes the stream the server writes events to; mcp logs the
    resulting ClosedResourceError as an ERROR with a traceback, for every normal disconnect.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record but a closed stream's."""
        import anyio

        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError)


class BearerAuth:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>``, else 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Answer 401 to an HTTP request without the token; pass everything else on."""
        if scope["type"] == "http":
            given = [v for k, v in scope.get("headers", []) if k == b"authorization"]
            # one header, that one right: of two, a proxy and the app could each read another
            if len(given) != 1 or not bearer_matches(given[0], self.token):
                error = "unauthorized: send Authorization: Bearer <HOPGRAPH_TOKEN>"
                await send_json(send, 401, {"error": error}, (b"www-authenticate", b"Bearer"))
                return
        await self.app(scope, receive, send)
