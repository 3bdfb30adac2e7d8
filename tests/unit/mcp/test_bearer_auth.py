"""MCP over HTTP with a token: one Authorization header, with the token, or 401."""

import asyncio

from hopgraph.mcp.server import BearerAuth

TOKEN = "s3cret-token"


def status(headers: list[tuple[bytes, bytes]]) -> int:
    """Send one HTTP request through BearerAuth; return the status it answered with."""
    sent: list[dict] = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    asyncio.run(BearerAuth(app, TOKEN)(scope, None, send))
    return sent[0]["status"]


def test_the_token_passes_and_anything_else_is_refused():
    right = (b"authorization", f"Bearer {TOKEN}".encode())
    assert status([right]) == 200
    assert status([]) == 401
    assert status([(b"authorization", b"Bearer wrong")]) == 401


def test_two_authorization_headers_are_refused_whichever_is_right():
    """A proxy and the server could each read another of two: neither is taken."""
    right = (b"authorization", f"Bearer {TOKEN}".encode())
    wrong = (b"authorization", b"Bearer wrong")
    assert status([wrong, right]) == 401
    assert status([right, wrong]) == 401
    assert status([right, right]) == 401
