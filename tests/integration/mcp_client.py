"""Ask an MCP server over HTTP, from whichever network namespace this process runs in.

    python -m tests.integration.mcp_client URL TOKEN EXPECTED.json SECONDS

EXPECTED.json maps method → question → the top 10 ids one process gives. One session asks
every (method, question) once, then, for SECONDS more, gnn_ret's questions over and over.
Prints one JSON line: asked, wrong (a top 10 not the expected), errors (a failed call, with the
first message), and the first wrong answer. Run by tests/integration/test_hosts.py in another
host's namespace, so the queries cross the namespaces' bridge.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any


async def ask(url: str, token: str, expected: dict[str, dict[str, list[str]]], seconds: float):
    """Ask every question once per method, then gnn_ret's for ``seconds``; count what failed."""
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    tally: dict[str, Any] = {"asked": 0, "wrong": 0, "errors": 0, "first_error": None}
    http = httpx.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx.Timeout(30, read=300)
    )

    async def one(session: ClientSession, method: str, question: str, top: list[str]) -> None:
        tally["asked"] += 1
        try:
            result = await session.call_tool(
                "retrieve", {"query": question, "method": method, "k": 10}
            )
        except Exception as err:  # a failed call is what the test counts
            tally["errors"] += 1
            tally["first_error"] = tally["first_error"] or repr(err)
            return
        if result.isError:
            tally["errors"] += 1
            tally["first_error"] = tally["first_error"] or result.content[0].text
            return
        ids = [h["id"] for h in result.structuredContent["result"]]
        if ids != top:
            tally["wrong"] += 1
            tally.setdefault("first_wrong", {"method": method, "question": question, "ids": ids})

    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write, read_timeout_seconds=timedelta(seconds=300)) as session,
    ):
        await session.initialize()
        for method, tops in expected.items():
            for question, top in tops.items():
                await one(session, method, question, top)
        tally["first_pass"] = dict(tally)
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            for question, top in expected["gnn_ret"].items():
                await one(session, "gnn_ret", question, top)
    return tally


if __name__ == "__main__":
    url, token, expected_file, seconds = sys.argv[1:5]
    expected = json.loads(Path(expected_file).read_text(encoding="utf-8"))
    print(json.dumps(asyncio.run(ask(url, token, expected, float(seconds)))), flush=True)
