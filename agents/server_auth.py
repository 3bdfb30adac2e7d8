"""Authentication of the LangGraph server (``langgraph.json``'s ``auth``).

With the ``token`` setting (``HOPGRAPH_TOKEN``), every request must carry
``Authorization: Bearer <token>`` (else 401); without one, only requests from this machine
(loopback) are answered, wherever the server listens. A run whose ``context.index`` is not on
the server's allow-list is refused with 403 before it starts (agents.server.allowed_index, which
the run checks again).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph_sdk import Auth

from hopgraph.core.errors import HopgraphError
from hopgraph.core.network import bearer_matches, is_loopback
from hopgraph.core.settings import settings

from .server import allowed_index

auth = Auth()


@auth.authenticate
async def authenticate(request: Any, authorization: str | None) -> Auth.types.MinimalUserDict:
    """Check the bearer token when one is set; without one, serve this machine only.

    The host and origin were checked before (agents/server_http.py: 421 / 403).
    """
    secret = settings().token
    if secret is None:
        client = getattr(request, "client", None)
        if client is None or not is_loopback(client.host):
            raise Auth.exceptions.HTTPException(
                status_code=401,
                detail="this server has no token, so it answers this machine only: start it "
                "with HOPGRAPH_TOKEN set and send Authorization: Bearer <token>",
            )
        return {"identity": "local"}
    if not bearer_matches(authorization, secret.get_secret_value()):
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="unauthorized: send Authorization: Bearer <HOPGRAPH_TOKEN>"
        )
    return {"identity": "token"}


@auth.on.threads.create_run
async def only_served_indexes(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Refuse a run whose context names an index the server does not serve."""
    context = (value.get("kwargs") or {}).get("context") or {}
    index = context.get("index") if isinstance(context, dict) else None
    if index is not None:
        try:
            # resolving a path asks the file system: not on the event loop (langgraph dev's
            # blocking-call guard turned a relative path into an HTTP 500)
            await asyncio.to_thread(allowed_index, str(index))
        except HopgraphError as err:
            raise Auth.exceptions.HTTPException(status_code=403, detail=str(err)) from err
