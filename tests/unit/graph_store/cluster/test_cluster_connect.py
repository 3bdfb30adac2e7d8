"""Joining a cluster on loopback stays on loopback, whenever Ray was imported."""

from __future__ import annotations

import os

import pytest

from hopgraph.graph_store.cluster.connect import SINGLE_HOST, loopback_only


def test_loopback_only_holds_even_after_ray_was_imported(monkeypatch):
    pytest.importorskip("ray")
    from ray._private import ray_constants, services

    # Ray read its one-host setting when first imported (by this or any earlier test)
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    monkeypatch.delenv(SINGLE_HOST, raising=False)
    monkeypatch.setattr(services, "node_ip_address_from_perspective", lambda _=None: "192.0.2.9")
    assert services.resolve_ip_for_localhost("127.0.0.1") == "192.0.2.9"
    with loopback_only():
        assert services.resolve_ip_for_localhost("127.0.0.1") == "127.0.0.1"
        assert os.environ[SINGLE_HOST] == "0"  # what nodes started from here read
    assert ray_constants.ENABLE_RAY_CLUSTER is True
    assert SINGLE_HOST not in os.environ
