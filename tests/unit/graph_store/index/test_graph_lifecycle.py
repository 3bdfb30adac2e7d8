import json
import os

import pytest

from hopgraph.cli import main
from hopgraph.core.errors import IndexStateError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Document, Index, add_documents, build_index, delete_documents
from hopgraph.graph_store.index import graph_build
from hopgraph.graph_store.index.build import build_graphs
from hopgraph.graph_store.index.graph_build import GraphSettings, triples_location
from hopgraph.graph_store.stores.vdb_chroma import ChromaVectorStore
from tests.conftest import DOCS

ALL = [Document(d["id"], d["title"], d["text"]) for d in DOCS]
SETTINGS = GraphSettings(semantic_min_sim=0.1, embed_triples=True)


def make(path, docs):
    build_index(docs, path, IndexSettings(model="hashing", chunk_tokens=16), show_progress=False)
    return build_graphs(path, SETTINGS, show_progress=False)


def snapshot(path):
    with Index.open(path) as idx:
        graph, kg = idx.passage_graph, idx.knowledge_graph
        store = ChromaVectorStore(triples_location(idx.location))
        stored = sorted(store.collection.get(include=[])["ids"])
        store.close()
        return {
            "ids": graph.ids,
            "edges": {k: m.toarray().round(5).tolist() for k, m in graph.edges.items()},
            "entities": kg.entities,
            "triples": [(t.id, t.text, t.chunk_id) for t in kg.triples],
            "stored_triples": stored,
        }


def test_add_then_delete_leaves_graphs_as_a_fresh_build(tmp_path):
    make(tmp_path / "grown", ALL[:3])
    add_documents(tmp_path / "grown", ALL[3:], show_progress=False)
    delete_documents(tmp_path / "grown", ["d1"])
    make(tmp_path / "fresh", ALL[1:])
    grown, fresh = snapshot(tmp_path / "grown"), snapshot(tmp_path / "fresh")
    assert grown == fresh
    assert grown["stored_triples"] == sorted(t[0] for t in grown["triples"])
    assert not any(c.startswith("d1") for t in grown["triples"] for c in [t[2]])
    assert any(sum(map(sum, m)) for m in grown["edges"].values())  # not an empty graph


def test_add_embeds_only_new_triples(tmp_path):
    first = make(tmp_path / "idx", ALL[:3])
    assert first["triples_embedded"] == first["counts"]["triples"] > 0
    add_documents(tmp_path / "idx", ALL[3:], show_progress=False)
    with Index.open(tmp_path / "idx") as idx:
        info = idx.manifest.graph
    assert 0 < info["triples_embedded"] < info["counts"]["triples"]


def test_failed_graph_build_leaves_the_index_intact(tmp_path, monkeypatch):
    make(tmp_path / "idx", ALL)
    before = snapshot(tmp_path / "idx")
    listing = sorted(os.listdir(tmp_path / "idx"))

    def boom(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(graph_build, "build_knowledge_graph", boom)
    with pytest.raises(RuntimeError):
        build_graphs(tmp_path / "idx", GraphSettings(semantic_k=2, embed_triples=True), False)
    with pytest.raises(RuntimeError):  # add/delete update the graphs in the same write
        delete_documents(tmp_path / "idx", ["d2"])
    assert sorted(os.listdir(tmp_path / "idx")) == listing
    assert snapshot(tmp_path / "idx") == before


def test_no_graphs_yet_is_a_clear_error(tmp_path, capsys):
    build_index(ALL, tmp_path / "idx", IndexSettings(model="hashing"), show_progress=False)
    with Index.open(tmp_path / "idx") as idx, pytest.raises(IndexStateError, match="no graphs"):
        _ = idx.passage_graph
    assert main(["graph", "stats", "--index", str(tmp_path / "idx")]) == 2
    assert "hopgraph graph build" in capsys.readouterr().err


def test_graph_cli_build_stats_export(tmp_path, capsys):
    build_index(ALL, tmp_path / "idx", IndexSettings(model="hashing"), show_progress=False)
    idx = str(tmp_path / "idx")
    assert main(["graph", "build", "--index", idx, "--semantic-min-sim", "0.1", "-q"]) == 0
    assert "triples" in capsys.readouterr().out
    assert main(["graph", "stats", "--index", idx, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["chunks"] == 6 and stats["edges"]["entity"] > 0
    assert set(stats["degree"]) == {"structural", "entity", "keyword", "semantic", "link", "all"}
    import networkx as nx

    for kind in ("passages", "knowledge"):
        out = tmp_path / f"{kind}.graphml"
        assert main(["graph", "export", "--index", idx, "--graph", kind, "--out", str(out)]) == 0
        graph = nx.read_graphml(out)
        assert graph.number_of_nodes() > 0 and graph.number_of_edges() > 0
    assert main(["graph", "build", "--index", idx, "--semantic-min-sim", "7"]) == 2
    assert "semantic_min_sim" in capsys.readouterr().err


def test_triples_are_searchable_by_text(tmp_path):
    make(tmp_path / "idx", ALL)
    with Index.open(tmp_path / "idx") as idx:
        found = idx.search_triples("Mountrail County seat Stanley", k=3)
        assert len(found) == 3
        best, score = found[0]
        assert "mountrail county" in best.text and best.chunk_id == "d5"
        assert score >= found[-1][1]


def test_graph_coverage_command_on_a_tiny_dataset(tmp_path, capsys):
    from tests.conftest import write_jsonl

    data = tmp_path / "tiny"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(
        data / "dev.jsonl",
        [
            # d4 mentions Mountrail County, whose page is d5: one entity hop
            {"id": "q1", "question": "?", "gold_ids": ["d4", "d5"], "type": "bridge"},
            # d1 and d6 share nothing, and no two-hop path joins them
            {"id": "q2", "question": "?", "gold_ids": ["d1", "d6"], "type": "comparison"},
        ],
    )
    argv = [
        "graph",
        "coverage",
        "--data",
        str(data),
        "--model",
        "hashing",
        "--json",
        "-q",
        "--semantic-k",
        "0",
    ]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["questions"] == 2
    assert report["by_type"] == {"bridge": 100.0, "comparison": 0.0}
    assert report["passage_graph"]["structural+entity"]["coverage"] == 50.0
