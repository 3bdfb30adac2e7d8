"""Where the encoder runs: --device / HOPGRAPH_DEVICE and CPU worker processes."""

import pytest

from hopgraph.cli import main
from hopgraph.core.errors import HopgraphError, InputError
from hopgraph.graph_store.embedding import embedders as embedding


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
    with pytest.raises(InputError, match=r"embed_processes \(env HOPGRAPH_EMBED_PROCESSES\)"):
        embedding.load_embedder("m", 16)


def test_cli_device_options_are_the_runs_settings(monkeypatch, tmp_path, corpus_file):
    from hopgraph.core.settings import settings
    from hopgraph.graph_store.index import writes

    monkeypatch.delenv("HOPGRAPH_DEVICE", raising=False)
    monkeypatch.delenv("HOPGRAPH_EMBED_PROCESSES", raising=False)
    seen, real = [], writes.embed_chunks

    def spy(chunks, embedder, show):
        seen.append((settings().device, settings().embed_processes))
        return real(chunks, embedder, show)

    monkeypatch.setattr(writes, "embed_chunks", spy)
    argv = ["index", str(corpus_file), "--index", str(tmp_path / "i"), "--model", "hashing"]
    assert main([*argv, "-q", "--device", "cpu", "--processes", "2"]) == 0
    assert seen == [("cpu", 2)]
    assert settings().device == "auto"  # the flags end with the run
