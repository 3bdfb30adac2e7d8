"""A long-running reader follows writes: a real subprocess writer adds and deletes while a reader
loop keeps retrieving through a LiveIndex, with no errors, and sees each commit afterwards."""

import json
import os
import subprocess
import sys

import pytest

from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Document, LiveIndex, build_graphs, build_index
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.tools import make_retriever

pytestmark = pytest.mark.integration

METHODS = ("bm25", "dense", "hybrid", "gnn_ret")


def test_readers_keep_answering_during_writes_and_follow_each_commit(tmp_path):
    docs = [
        Document(f"d{i}", f"Place {i}", f"Place {i} lies in region {i % 23} near river {i % 7}.")
        for i in range(2000)
    ]
    index = tmp_path / "idx"
    build_index(docs, index, IndexSettings(model="hashing"), show_progress=False)
    build_graphs(index, GraphSettings(embed_triples=False), show_progress=False)
    new = [
        {"id": f"z{i}", "title": "Zebra", "text": f"A zebra quagga note {i}."} for i in range(50)
    ]
    (tmp_path / "new.jsonl").write_text("".join(json.dumps(d) + "\n" for d in new))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cli = [sys.executable, "-m", "hopgraph.cli"]
    script = (
        f"{' '.join(cli)} add {tmp_path / 'new.jsonl'} --index {index} -q && "
        f"{' '.join(cli)} delete d0 d1 d2 --index {index}"
    )
    writer = subprocess.Popen(script, shell=True, env=env)  # our own command line
    errors: list[str] = []
    calls = 0
    with LiveIndex(index) as live:
        while writer.poll() is None or calls < 1000:
            idx = live.current()  # once per request, as the servers do
            for method in METHODS:
                try:
                    make_retriever(method, idx).retrieve("zebra quagga in region 3", 3)
                except Exception as err:  # any error a reader would see counts
                    errors.append(f"{method}: {err!r}")
                calls += 1
        assert writer.returncode == 0
        assert errors == [] and calls >= 1000
        idx = live.current()
        assert live.reopened >= 1
        assert {h.doc_id for h in make_retriever("bm25", idx).retrieve("zebra quagga", 3)} <= {
            f"z{i}" for i in range(50)
        }
        assert not {"d0", "d1", "d2"} & idx.doc_ids and len(idx.doc_ids) == 2047
