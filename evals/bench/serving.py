"""Serving processes on one index: start `hopgraph mcp` over HTTP, call it, read its memory.

``python -m hopgraph.evals.bench.serving --index DIR`` starts two MCP servers on the index, warms
each with dense and gnn_ret queries (so each has mapped what a query reads), and reports each
one's memory from ``/proc/PID/smaps_rollup``: RSS (every resident page, shared ones included),
PSS (shared pages divided among the processes that map them) and the shared and private parts.
The sum of the two PSS figures counts the pages they share once: the vector table, the IVF files
and the graph arrays are memory-mapped, so the second server adds only its private memory
(the chunk table, its Python objects). The scale benchmark runs it per size (``--phase serve``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

REQUEST_TIMEOUT = timedelta(seconds=600)


def free_port() -> int:
    """Return a TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mcp(index: Path, port: int, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `hopgraph mcp --index INDEX --http 127.0.0.1:PORT` and wait until it listens."""
    server = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "mcp", "--index", str(index),
         "--http", f"127.0.0.1:{port}"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the MCP server stopped: {server.stderr.read()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.2)
    server.kill()
    raise RuntimeError("the MCP server did not listen within 600 s")


def stop(server: subprocess.Popen) -> str:
    """Stop a server; return what it printed."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    return server.stdout.read() + server.stderr.read()


def call_tool(port: int, tool: str, arguments: dict[str, Any]) -> Any:
    """Call one tool of the MCP server on ``port`` (a session of its own); return its JSON."""
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> Any:
        client = httpx.AsyncClient(timeout=httpx.Timeout(30, read=600))
        async with (
            client,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (
                read,
                write,
                _,
            ),
            ClientSession(read, write, read_timeout_seconds=REQUEST_TIMEOUT) as session,
        ):
            await session.initialize()
            result = await session.call_tool(tool, arguments)
        if result.isError:
            raise RuntimeError(result.content[0].text)
        if result.structuredContent is not None:
            content = result.structuredContent
            return content.get("result", content)
        return json.loads(result.content[0].text)

    return asyncio.run(main())


def memory(pid: int) -> dict[str, float]:
    """Return a process's RSS, PSS, shared and private memory in MB (/proc/PID/smaps_rollup)."""
    fields = {}
    text = Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="utf-8")
    for line in text.splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) / 1024
    shared = fields.get("Shared_Clean", 0) + fields.get("Shared_Dirty", 0)
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"rss_mb": fields["Rss"], "pss_mb": fields["Pss"], "shared_mb": shared,
            "private_mb": private}  # fmt: skip


def serving_memory(index: Path, queries: list[str], servers: int = 2) -> dict[str, Any]:
    """Start ``servers`` MCP servers on ``index``, warm each, and return their memory."""
    started = []
    try:
        for _ in range(servers):
            port = free_port()
            started.append((port, start_mcp(index, port)))
            for query in queries:
                for method in ("dense", "gnn_ret"):
                    call_tool(port, "retrieve", {"query": query, "method": method, "k": 10})
        each = [memory(server.pid) for _, server in started]
    finally:
        for _, server in started:
            stop(server)
    return {
        "servers": each,
        "pss_total_mb": sum(m["pss_mb"] for m in each),
        "rss_total_mb": sum(m["rss_mb"] for m in each),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure the serving memory of an index; print JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.serving",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--query", action="append", default=[], help="repeatable")
    args = parser.parse_args(argv)
    queries = args.query or ["Where was the castle built?", "river bridge"]
    print(json.dumps(serving_memory(args.index, queries, args.servers), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
