"""Where the encoder runs: --device / HOPGRAPH_DEVICE and CPU worker processes."""

import os

import pytest

from graph_store import embedding
from hopgraph.cli import main
from hopgraph.core.errors import HopgraphError, InputError


def test_auto_takes_the_best_device_present_and_a_missing_one_is_an_error(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert embedding.resolve_device("auto") == "cpu"
    with pytest.raises(HopgraphError, match="device 'cuda' is not available"):
        embedding.resolve_device("cuda")
    with pytest.raises(InputError, match="unknown device 'tpu'"):
        embedding.resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert embedding.resolve_device("auto") == "cuda"


def test_load_embedder_reads_the_device_and_processes_of_this_run(monkeypatch):
    made = []
    monkeypatch.setattr(embedding, "_load", lambda *args: made.append(args) or args)
    monkeypatch.delenv("HOPGRAPH_DEVICE", raising=False)
    monkeypatch.delenv("HOPGRAPH_EMBED_PROCESSES", raising=False)
    embedding.load_embedder("m", 16)
    monkeypatch.setenv("HOPGRAPH_DEVICE", "cpu")
    monkeypatch.setenv("HOPGRAPH_EMBED_PROCESSES", "4")
    embedding.load_embedder("m", 16)
    assert made == [("m", 16, "auto", 1), ("m", 16, "cpu", 4)]
    monkeypatch.setenv("HOPGRAPH_EMBED_PROCESSES", "many")
    with pytest.raises(InputError, match="HOPGRAPH_EMBED_PROCESSES must be a positive"):
        embedding.load_embedder("m", 16)


def test_cli_device_options_set_the_run_environment(monkeypatch, tmp_path, corpus_file):
    monkeypatch.delenv("HOPGRAPH_DEVICE", raising=False)
    monkeypatch.delenv("HOPGRAPH_EMBED_PROCESSES", raising=False)
    argv = ["index", str(corpus_file), "--index", str(tmp_path / "i"), "--model", "hashing"]
    assert main([*argv, "-q", "--device", "cpu", "--processes", "2"]) == 0
    assert os.environ["HOPGRAPH_DEVICE"] == "cpu" and os.environ["HOPGRAPH_EMBED_PROCESSES"] == "2"
