"""Joining a cluster on loopback stays on loopback, whenever Ray was imported."""

from __future__ import annotations

import logging
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


def test_a_token_without_token_mode_is_refused_before_anything_is_joined(
    monkeypatch, capsys, tmp_path
):
    from hopgraph.cli import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "title": "A", "text": "a text"}\n', encoding="utf-8")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "abc123")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    argv = ["index", str(corpus), "--index", str(tmp_path / "idx"), "--model", "hashing"]
    assert main([*argv, "--cluster", "192.0.2.1:6379"]) == 2
    assert not (tmp_path / "idx").exists()  # nothing written
    err = capsys.readouterr().err
    assert "RAY_AUTH_TOKEN is set but RAY_AUTH_MODE is 'not set'" in err
    assert "export RAY_AUTH_MODE=token" in err and "Traceback" not in err


def test_a_token_in_token_mode_or_no_token_passes(monkeypatch):
    from hopgraph.graph_store.cluster.connect import check_token_mode

    monkeypatch.setenv("RAY_AUTH_TOKEN", "abc123")
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    check_token_mode()
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    monkeypatch.delenv("RAY_AUTH_MODE")
    check_token_mode()


def test_rays_messages_go_to_a_file_named_once_on_stderr_never_stdout(capsys, monkeypatch):
    pytest.importorskip("ray")
    from ray._private import worker

    from hopgraph.graph_store.cluster import messages
    from hopgraph.graph_store.cluster.messages import messages_file, ray_messages_to_file

    monkeypatch.setattr(messages, "_handlers", {})
    monkeypatch.setattr(worker, "print_to_stdstream", worker.print_to_stdstream)  # put back after
    for name in ("ray.serve", "hopgraph.ray"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "handlers", list(logger.handlers))
        monkeypatch.setattr(logger, "propagate", logger.propagate)

    path = ray_messages_to_file()
    logging.getLogger("ray.serve").handlers.clear()  # as Serve's start does
    assert ray_messages_to_file() == path == messages_file()  # said once a process
    said = capsys.readouterr()
    assert said.err.count("Ray's messages: ") == 1 and str(path) in said.err
    # what Ray's error listener prints after a node is lost, through the one function it uses
    lost = "The node with node id abc and address 10.0.0.2 has been marked dead"
    worker.print_to_stdstream({"lines": [lost, "state dump"], "pid": "raylet", "is_err": False},
                              ignore_prefix=False)  # fmt: skip
    logging.getLogger("ray.serve").info("Deploying new version of Deployment(name='Shard')")
    said = capsys.readouterr()
    assert said.out == "" and said.err == ""
    written = path.read_text(encoding="utf-8")
    assert f"(raylet) {lost}" in written and "(raylet) state dump" in written
    assert "Deploying new version" in written


def test_a_server_stops_with_a_clear_error_once_its_head_stops_answering():
    import socket
    import threading
    import time

    from hopgraph.graph_store.cluster.connect import watch_head

    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    said: list = []
    called = threading.Event()

    def lost(err):
        said.append(err)
        called.set()

    stop = watch_head(f"127.0.0.1:{port}", seconds=0.4, every=0.05, lost=lost)
    try:
        time.sleep(0.6)  # the head answers: nothing happens
        assert not called.is_set()
        listening.close()  # the head gone: refused from now on
        assert called.wait(5)
    finally:
        stop.set()
    [err] = said
    assert f"127.0.0.1:{port} has not answered for 0.4 s" in err.message
    assert "ray status" in (err.hint or "") and "start the server again" in (err.hint or "")


def test_a_driver_joins_its_own_hosts_node_or_says_there_is_none(monkeypatch):
    """Ray picks the node to join among the raylets `ps` lists, the head's first; a driver
    names its own address (the one it reaches the head from), and where no node runs at it the
    error says how to start one."""
    import types

    from hopgraph.core.errors import InputError
    from hopgraph.graph_store.cluster import connect

    assert connect.own_address("127.0.0.1", 9) == "127.0.0.1"
    joined = {}

    def init(**kwargs):
        joined.update(kwargs)
        own = kwargs["_node_ip_address"]
        raise RuntimeError(f"No node info found matching attributes: '{own}'")

    fake = types.SimpleNamespace(
        init=init, exceptions=types.SimpleNamespace(RayError=type("RayError", (Exception,), {}))
    )
    monkeypatch.setattr(connect, "reachable", lambda host, port: None)
    monkeypatch.setattr(connect, "require_ray", lambda: None)
    monkeypatch.setattr(connect, "ray_module", lambda: fake)
    monkeypatch.setattr(connect, "own_address", lambda host, port: "192.0.2.7")
    with pytest.raises(InputError) as err, connect.connected("192.0.2.1:6379"):
        pass
    assert joined["address"] == "192.0.2.1:6379" and joined["_node_ip_address"] == "192.0.2.7"
    assert "no node of the Ray cluster at 192.0.2.1:6379 runs on this host at 192.0.2.7" in str(
        err.value
    )
    assert "ray start --address 192.0.2.1:6379 --node-ip-address 192.0.2.7" in err.value.hint


def test_a_local_cluster_that_will_not_start_is_a_clear_error(monkeypatch):
    """Ray's node failing to start (here: its raylet's error, as Ray raises it) is named, with
    where Ray's logs are and what the node needs, and nothing runs on."""
    import errno
    import types

    from hopgraph.core.errors import DiskFullError, InputError
    from hopgraph.graph_store.cluster import connect

    failure = [RuntimeError("Failed to start the raylet: it exited with code 1")]

    def init(**kwargs):
        raise failure[0]

    fake = types.SimpleNamespace(init=init)
    monkeypatch.setattr(connect, "require_ray", lambda: None)
    monkeypatch.setattr(connect, "ray_module", lambda: fake)
    with pytest.raises(InputError) as err, connect.connected("local"):
        pytest.fail("the write ran without a cluster")
    assert "a Ray cluster could not start on this machine for --cluster local" in err.value.message
    assert "RuntimeError: Failed to start the raylet" in err.value.message
    assert "ray/session_latest/logs" in err.value.hint and "Nothing was written" in err.value.hint
    failure[0] = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(DiskFullError), connect.connected("local"):
        pytest.fail("the write ran without a cluster")
