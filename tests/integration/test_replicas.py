"""Replicas: two server processes (MCP and ui) read one index directory while a writer commits.

Each server follows the generations (graph_store/index/live.py) and keeps answering during
the write: the generation folders are immutable and the manifest is the only file a commit replaces.
"""

import json
import subprocess
import sys
import threading

import httpx
import pytest

from hopgraph.evals.bench.serving import call_tool, free_port, start_mcp, stop
from tests.integration.conftest import wait_until_up

pytestmark = pytest.mark.integration

NEW = {
    "id": "zanzibar-light",
    "title": "Zanzibar lighthouse",
    "text": "The Zanzibar lighthouse keeper Amina Salum kept the lamp for forty years.",
}
QUERY = "Zanzibar lighthouse keeper"


def hopgraph(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hopgraph.cli", *argv],
                          capture_output=True, text=True, check=False, timeout=600)  # fmt: skip


def start_ui(index, port):
    server = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "ui", "--index", str(index),
         "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def up():
        try:
            return httpx.get(f"http://127.0.0.1:{port}/api/methods", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until_up(up, server, "the ui server", lambda: server.stderr.read())
    return server


def test_two_servers_follow_a_writer_and_answer_throughout(tmp_path):
    index = tmp_path / "idx"
    from hopgraph.cli.commands.demo import sample_dir

    built = hopgraph("index", str(sample_dir() / "corpus.jsonl"), "--index", str(index),
                     "--model", "hashing", "-q")  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert hopgraph("graph", "build", "--index", str(index)).returncode == 0
    mcp_port, ui_port = free_port(), free_port()
    mcp, ui = start_mcp(index, mcp_port), start_ui(index, ui_port)
    try:

        def from_mcp(method):
            hits = call_tool(mcp_port, "retrieve", {"query": QUERY, "method": method, "k": 3})
            return [h["id"] for h in hits]

        def from_ui(method):
            params = {"q": QUERY, "method": method, "k": 3}
            reply = httpx.get(f"http://127.0.0.1:{ui_port}/api/search", params=params, timeout=60)
            assert reply.status_code == 200, reply.text
            return [h["id"] for h in reply.json()["hits"]]

        before = call_tool(mcp_port, "index_stats", {})["generation"]
        for method in ("bm25", "dense", "gnn_ret"):
            assert NEW["id"] not in from_mcp(method) + from_ui(method)
        failures, stop_reading = [], threading.Event()

        def keep_reading():  # both replicas answer while the writer works and commits
            while not stop_reading.is_set():
                for ask in (from_mcp, from_ui):
                    try:
                        assert len(ask("dense")) == 3
                    except Exception as err:  # every failure is reported
                        failures.append(repr(err))

        reader = threading.Thread(target=keep_reading)
        reader.start()
        new = tmp_path / "new.jsonl"
        new.write_text(json.dumps(NEW) + "\n", encoding="utf-8")
        try:
            added = hopgraph("add", str(new), "--index", str(index), "-q")
        finally:
            stop_reading.set()
            reader.join(timeout=120)
        assert added.returncode == 0, added.stderr
        assert not failures, failures[:3]
        assert call_tool(mcp_port, "index_stats", {})["generation"] == before + 1
        for method in ("bm25", "dense", "gnn_ret"):
            assert from_mcp(method)[0] == NEW["id"], method
            assert from_ui(method)[0] == NEW["id"], method
    finally:
        logged = stop(mcp) + stop(ui)
    assert "Traceback" not in logged
