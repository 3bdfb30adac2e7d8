"""Triple embeddings are built only for the methods that search triples (GEAR's)."""

import pytest

from hopgraph.agents.registry import needs_triple_vectors
from hopgraph.core.errors import IndexStateError
from hopgraph.core.settings import IndexSettings
from hopgraph.evals.runner import eval_index
from tests.conftest import DOCS, write_jsonl


def test_only_gears_methods_need_triple_vectors():
    assert needs_triple_vectors(["gear"]) and needs_triple_vectors(["bm25", "sync_ge"])
    assert needs_triple_vectors(["naive_ge"])
    assert not needs_triple_vectors(
        ["bm25", "dense", "gnn_ret", "iier", "rgnn_ret", "tog2", "grag"]
    )


def test_eval_builds_triple_vectors_when_a_method_first_needs_them(tmp_path):
    (tmp_path / "data").mkdir()
    write_jsonl(tmp_path / "data" / "corpus.jsonl", DOCS)
    settings = IndexSettings(model="hashing")
    where = tmp_path / "idx"
    with eval_index(tmp_path / "data", settings, where, False, None, True) as idx:
        assert idx.manifest.graph["settings"]["embed_triples"] is False
        assert idx.manifest.graph["triples_embedded"] == 0
    with eval_index(tmp_path / "data", settings, where, False, None, True, True) as idx:
        assert idx.manifest.graph["settings"]["embed_triples"] is True
        assert len(idx.triple_matrix) == len(idx.knowledge_graph.triples) > 0


def test_graph_build_leaves_triples_out_until_a_gear_method_first_runs(
    tmp_path, capsys, monkeypatch
):
    from hopgraph.cli import main
    from hopgraph.graph_store import Document, Index, add_documents, build_graphs, build_index
    from hopgraph.graph_store.index.graph_build import GraphSettings
    from hopgraph.graph_store.index.lock import write_lock
    from hopgraph.tools import make_retriever

    path = tmp_path / "idx"
    docs = [Document(d["id"], d["title"], d["text"]) for d in DOCS]
    build_index(docs[:5], path, IndexSettings(model="hashing"), show_progress=False)
    info = build_graphs(path, GraphSettings(), show_progress=False)
    assert info["settings"]["embed_triples"] is False and info["triples_embedded"] == 0
    with Index.open(path) as idx:
        monkeypatch.setenv("HOPGRAPH_WAIT", "0")  # no wait (test_first_use_waits.py waits)
        with write_lock(path):  # another write holds the index: the reader says what to run
            with pytest.raises(IndexStateError, match="no triple vectors yet") as err:
                make_retriever("naive_ge", idx)
            assert "hopgraph graph triples" in err.value.hint
        generation = idx.generation
        hits = make_retriever("naive_ge", idx).retrieve("Where was Larry Alcala educated?", 3)
        assert hits and idx.generation == generation + 1  # embedded once, as a write
        assert len(idx.triple_matrix) == len(idx.knowledge_graph.triples) > 0
    assert "embedding" in capsys.readouterr().err
    add_documents(path, docs[5:], show_progress=False)  # a write keeps them current
    with Index.open(path) as idx:
        assert idx.manifest.graph["settings"]["embed_triples"] is True
        assert len(idx.triple_matrix) == len(idx.knowledge_graph.triples)
    assert main(["graph", "triples", "--index", str(path), "--quiet"]) == 0
    assert "embedded already" in capsys.readouterr().out


def test_the_triple_table_keeps_chromas_vectors_through_writes_and_readers_skip_chroma(
    tmp_path, monkeypatch
):
    import numpy as np

    from hopgraph.graph_store import (
        Document,
        Index,
        add_documents,
        build_graphs,
        build_index,
        delete_documents,
    )
    from hopgraph.graph_store.index.graph_build import GraphSettings
    from hopgraph.graph_store.index.stored_vectors import stored_vectors

    path = tmp_path / "idx"
    docs = [Document(d["id"], d["title"], d["text"]) for d in DOCS]
    build_index(docs[:4], path, IndexSettings(model="hashing"), show_progress=False)
    build_graphs(path, GraphSettings(embed_triples=True), show_progress=False)
    add_documents(path, docs[4:], show_progress=False)  # new triples embedded, old ones kept
    delete_documents(path, [docs[0].id])
    with Index.open(path) as idx:
        ids = [t.id for t in idx.knowledge_graph.triples]
        in_chroma = stored_vectors(idx.location.triples())
        expected = np.stack([in_chroma[i] for i in ids])
        assert idx.manifest.files["triple_vectors"].startswith(f"g{idx.generation:06d}/")

        def no_chroma(*args, **kwargs):
            raise AssertionError("a reader opened Chroma")

        monkeypatch.setattr(
            "hopgraph.graph_store.stores.vdb_chroma.ChromaVectorStore.__init__", no_chroma
        )
        np.testing.assert_allclose(idx.triple_matrix, expected, atol=1e-6)
        [(best, score)] = idx.search_triples(idx.knowledge_graph.triples[3].text, k=1)
        assert best == idx.knowledge_graph.triples[3] and score == pytest.approx(1.0, abs=1e-5)


def test_an_index_written_before_the_triple_table_reads_chroma_until_its_next_write(tmp_path):
    import numpy as np

    from hopgraph.graph_store import Document, Index, add_documents, build_graphs, build_index
    from hopgraph.graph_store.index.graph_build import GraphSettings
    from hopgraph.graph_store.stores.manifest import read_manifest

    path = tmp_path / "idx"
    docs = [Document(d["id"], d["title"], d["text"]) for d in DOCS]
    build_index(docs[:4], path, IndexSettings(model="hashing"), show_progress=False)
    build_graphs(path, GraphSettings(embed_triples=True), show_progress=False)
    with Index.open(path) as idx:
        table = idx.triple_matrix
        before = {t.id: row for t, row in zip(idx.knowledge_graph.triples, table, strict=True)}
    manifest = read_manifest(path)  # as an index written before the table: Chroma holds them
    del manifest.files["triple_vectors"]
    manifest.chroma_files = {}
    manifest.write(path)
    with Index.open(path) as idx:
        np.testing.assert_allclose(idx.triple_matrix, table, atol=1e-6)
    add_documents(path, docs[4:], show_progress=False)  # the old triples' vectors from Chroma
    with Index.open(path) as idx:
        assert "triple_vectors" in idx.manifest.files
        ids = [t.id for t in idx.knowledge_graph.triples]
        after = dict(zip(ids, idx.triple_matrix, strict=True))
    assert len(after) > len(before) and before.keys() <= after.keys()
    for triple_id, row in before.items():
        np.testing.assert_allclose(after[triple_id], row, atol=1e-6)
