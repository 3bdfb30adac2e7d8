"""The LangGraph server's authentication handler (agents/server_auth.py), called directly."""

import asyncio
from types import SimpleNamespace

import pytest
from langgraph_sdk import Auth

from hopgraph.agents.server_auth import authenticate, only_served_indexes
from hopgraph.core.network import is_loopback


def request_from(client, **headers):
    """A request from ``client``'s address, addressed to 127.0.0.1:2024 unless ``host`` says."""
    headers = {"host": "127.0.0.1:2024", **headers}
    return SimpleNamespace(client=SimpleNamespace(host=client), headers=headers)


def test_without_a_token_only_this_machine_is_served(monkeypatch):
    monkeypatch.delenv("HOPGRAPH_TOKEN", raising=False)
    assert asyncio.run(authenticate(request_from("127.0.0.1"), None)) == {"identity": "local"}
    with pytest.raises(Auth.exceptions.HTTPException) as err:
        asyncio.run(authenticate(request_from("10.1.2.3"), None))
    assert err.value.status_code == 401 and "HOPGRAPH_TOKEN" in err.value.detail


def test_with_a_token_every_request_needs_it(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_TOKEN", "t0ken")
    monkeypatch.setenv("HOPGRAPH_ALLOW_HOSTS", '["box.lan"]')
    remote = request_from("10.1.2.3", host="box.lan:2024")
    ok = asyncio.run(authenticate(remote, "Bearer t0ken"))
    assert ok == {"identity": "token"}
    for header in ("bearer t0ken", "BEARER  t0ken "):  # the scheme is case-insensitive
        assert asyncio.run(authenticate(remote, header)) == ok
    for header in (None, "Bearer nope", "t0ken", "Bearer T0KEN", "Basic t0ken"):
        with pytest.raises(Auth.exceptions.HTTPException) as err:
            asyncio.run(authenticate(request_from("127.0.0.1"), header))
        assert err.value.status_code == 401


def test_runs_may_name_only_served_indexes(monkeypatch, tmp_path):
    monkeypatch.setenv("HOPGRAPH_INDEX", str(tmp_path / "served"))
    served = {"kwargs": {"context": {"index": str(tmp_path / "served")}}}
    assert asyncio.run(only_served_indexes(None, served)) is None
    with pytest.raises(Auth.exceptions.HTTPException) as err:
        asyncio.run(only_served_indexes(None, {"kwargs": {"context": {"index": "/etc"}}}))
    assert err.value.status_code == 403 and "not one this server serves" in err.value.detail


def test_loopback_addresses():
    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.1", "example.org", "::"]))


def test_the_mcp_server_takes_the_same_bearer_tokens():
    from hopgraph.core.network import bearer_matches

    assert bearer_matches(b"Bearer s3cret", "s3cret") and bearer_matches("bearer s3cret", "s3cret")
    for header in (None, b"", b"Bearer", b"Bearer s3cre", b"Token s3cret", "bearer S3CRET"):
        assert not bearer_matches(header, "s3cret")


def test_a_refused_index_is_named_not_its_path(monkeypatch, tmp_path):
    monkeypatch.setenv("HOPGRAPH_INDEX", str(tmp_path / "served"))
    with pytest.raises(Auth.exceptions.HTTPException) as err:
        asyncio.run(only_served_indexes(None, {"kwargs": {"context": {"index": "/etc"}}}))
    assert err.value.status_code == 403 and "served" in err.value.detail
    assert str(tmp_path) not in err.value.detail


@pytest.mark.parametrize("token", [None, "t0ken"])
def test_a_forged_host_gets_421_a_cross_site_origin_403_and_docs_need_the_token(monkeypatch, token):
    # langgraph.json's http.app: its middleware runs before every route of `langgraph dev`
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from hopgraph.agents.server_http import DESCRIBED, LIVENESS, ServerGuard

    if token:
        monkeypatch.setenv("HOPGRAPH_TOKEN", token)
    else:
        monkeypatch.delenv("HOPGRAPH_TOKEN", raising=False)
    monkeypatch.setenv("HOPGRAPH_ALLOW_HOSTS", '["box.lan"]')
    paths = ("/ok", "/info", "/metrics", *DESCRIBED)
    routes = [Route(p, lambda r: PlainTextResponse("ok")) for p in paths]
    app = Starlette(routes=routes, middleware=[Middleware(ServerGuard)])
    client = TestClient(app, base_url="http://127.0.0.1:2024")
    auth = {"authorization": f"Bearer {token}"} if token else {}
    for route in paths:
        forged = client.get(route, headers={"host": "evil.example", **auth})
        assert forged.status_code == 421 and "HOPGRAPH_ALLOW_HOSTS" in forged.json()["hint"]
        cross = client.get(route, headers={"origin": "https://evil.example", **auth})
        assert cross.status_code == 403
        for host in ("127.0.0.1:2024", "localhost", "[::1]:2024", "box.lan:2024"):
            assert client.get(route, headers={"host": host, **auth}).status_code == 200
        bare = client.get(route).status_code
        assert bare == (401 if token and route not in LIVENESS else 200)


def test_a_websocket_from_a_forged_host_or_a_cross_site_page_is_closed_unopened():
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    from hopgraph.core.network import HostGuard

    async def echo(websocket):
        await websocket.accept()
        await websocket.send_text("open")
        await websocket.close()

    app = HostGuard(Starlette(routes=[WebSocketRoute("/ws", echo)]), "127.0.0.1")
    client = TestClient(app, base_url="http://127.0.0.1:8766")
    local = {"host": "127.0.0.1:8766"}  # the test client's websockets say "testserver"
    with client.websocket_connect("/ws", headers=local) as ws:
        assert ws.receive_text() == "open"
    for headers in ({"host": "evil.example"}, {**local, "origin": "https://evil.example"}):
        with (
            pytest.raises(WebSocketDisconnect) as closed,
            client.websocket_connect("/ws", headers=headers),
        ):
            pass
        assert closed.value.code == 1008


def test_a_request_with_two_host_headers_is_refused_whatever_their_order():
    """Starlette reads the last Host header, a dict of them the last too, a proxy the first:
    a request that names two hosts is refused before any of them reads it (issue 73)."""
    from hopgraph.core.network import HostGuard

    reached = []

    async def app(scope, receive, send):
        reached.append(scope)

    guard = HostGuard(app, "127.0.0.1")
    for hosts in ([b"evil.example", b"127.0.0.1"], [b"127.0.0.1", b"evil.example"]):
        sent = []

        async def send(message, sent=sent):
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": "/",
                 "headers": [(b"host", h) for h in hosts]}  # fmt: skip
        asyncio.run(guard(scope, None, send))
        assert sent[0]["status"] == 400 and b"2 Host headers" in sent[1]["body"]
    assert not reached
    one = {"type": "http", "method": "GET", "path": "/", "headers": [(b"host", b"127.0.0.1")]}
    asyncio.run(guard(one, None, None))
    assert reached
