"""The LangGraph server's authentication handler (agents/server_auth.py), called directly."""

import asyncio
from types import SimpleNamespace

import pytest
from langgraph_sdk import Auth

from hopgraph.agents.server_auth import authenticate, only_served_indexes
from hopgraph.core.network import is_loopback


def request_from(host):
    return SimpleNamespace(client=SimpleNamespace(host=host))


def test_without_a_token_only_this_machine_is_served(monkeypatch):
    monkeypatch.delenv("HOPGRAPH_TOKEN", raising=False)
    assert asyncio.run(authenticate(request_from("127.0.0.1"), None)) == {"identity": "local"}
    with pytest.raises(Auth.exceptions.HTTPException) as err:
        asyncio.run(authenticate(request_from("10.1.2.3"), None))
    assert err.value.status_code == 401 and "HOPGRAPH_TOKEN" in err.value.detail


def test_with_a_token_every_request_needs_it(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_TOKEN", "t0ken")
    ok = asyncio.run(authenticate(request_from("10.1.2.3"), "Bearer t0ken"))
    assert ok == {"identity": "token"}
    for header in ("bearer t0ken", "BEARER  t0ken "):  # the scheme is case-insensitive
        assert asyncio.run(authenticate(request_from("10.1.2.3"), header)) == ok
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
