"""Vectors from an OpenAI-compatible embeddings endpoint: a local server started by the test."""

import json
import socket

import numpy as np
import pytest

from hopgraph.cli import main
from hopgraph.evals.servers.embedding_server import EmbeddingServer
from tests.conftest import write_jsonl


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_EMBEDDINGS_MAX_RETRIES", "0")  # failures fail at once
    with EmbeddingServer("hashing", served_as="hash-256") as running:
        yield running


def build(corpus_file, index, url, *extra):
    return main(["index", str(corpus_file), "--index", str(index), "--model", "hash-256",
                 "--embeddings-url", url, "-q", *extra])  # fmt: skip


def ranked(index, capsys, query="Stanley"):
    assert main(["retrieve", query, "--index", str(index), "--method", "dense", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    return [(h["id"], round(h["score"], 4)) for h in hits if h["score"] > 1e-6]  # no ties


def test_an_index_from_an_endpoint_ranks_as_the_model_in_process(
    server, corpus_file, tmp_path, capsys
):
    assert build(corpus_file, tmp_path / "remote", server.url) == 0
    assert main(["index", str(corpus_file), "--index", str(tmp_path / "local"),
                 "--model", "hashing", "-q"]) == 0  # fmt: skip
    capsys.readouterr()
    assert ranked(tmp_path / "remote", capsys) == ranked(tmp_path / "local", capsys)
    manifest = json.loads((tmp_path / "remote" / "manifest.json").read_text())
    assert manifest["settings"]["embeddings_url"] == server.url
    assert manifest["embedder"]["dimension"] == 256


def test_a_rebuild_sends_no_text_twice(server, corpus_file, tmp_path):
    assert build(corpus_file, tmp_path / "idx", server.url) == 0
    sent = server.texts
    assert build(corpus_file, tmp_path / "idx", server.url, "--force") == 0
    assert server.texts == sent


def test_failed_requests_are_retried_with_backoff(server, corpus_file, tmp_path, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_EMBEDDINGS_MAX_RETRIES", "3")
    server.fail_with, server.failures_left = 503, 2
    assert build(corpus_file, tmp_path / "idx", server.url) == 0
    assert server.failures_left == 0


def test_an_endpoint_that_is_down_is_named_and_nothing_is_written(corpus_file, tmp_path, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"  # nobody listens there
    assert build(corpus_file, tmp_path / "idx", url) == 2
    err = capsys.readouterr().err
    assert url in err and "'hash-256'" in err and "Traceback" not in err
    assert not (tmp_path / "idx" / "manifest.json").exists()


def test_another_size_or_another_model_is_refused_before_a_write(
    server, corpus_file, tmp_path, capsys
):
    index = tmp_path / "idx"
    assert build(corpus_file, index, server.url) == 0
    before = (index / "manifest.json").read_bytes()
    more = write_jsonl(tmp_path / "more.jsonl", [{"id": "new", "text": "A new document."}])
    server.dimension = 100
    assert main(["add", str(more), "--index", str(index), "-q"]) == 2
    assert "dimension" in capsys.readouterr().err
    server.dimension = None
    server.scale = np.where(np.arange(256) % 2, 1.0, -1.0)  # same size, other vectors
    assert main(["add", str(more), "--index", str(index), "-q"]) == 2
    err = capsys.readouterr().err
    assert "are not the index's" in err and server.url in err
    assert (index / "manifest.json").read_bytes() == before


def test_a_model_the_server_does_not_serve_is_named(server, corpus_file, tmp_path, capsys):
    assert main(["index", str(corpus_file), "--index", str(tmp_path / "idx"),
                 "--model", "other", "--embeddings-url", server.url, "-q"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "'other'" in err and "404" in err
