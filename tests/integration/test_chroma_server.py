"""The same retrieval through a real Chroma server (`chroma run`) as through the embedded store."""

import chromadb
import pytest

from hopgraph.core.errors import IndexStateError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Index, add_documents, build_graphs, build_index, delete_documents
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.tools import make_retriever

pytestmark = pytest.mark.integration
QUERIES = ["Who is the sibling of the actress who played Susan Walker?", "Mach number physicist"]


def ranked(path):
    with Index.open(path) as idx:
        return [
            [(h.id, round(h.score, 4)) for h in make_retriever(m, idx).retrieve(q, 8)]
            for m in ("dense", "hybrid")
            for q in QUERIES
        ]


def test_server_and_embedded_give_the_same_results(tmp_path, chroma_server, sample_docs):
    url, _ = chroma_server
    docs = sample_docs[:80]
    build_index(docs, tmp_path / "embedded", IndexSettings(), show_progress=False)
    build_index(docs, tmp_path / "served", IndexSettings(chroma_url=url), show_progress=False)
    assert not any((tmp_path / "served").glob("chroma-*"))  # vectors live on the server
    assert ranked(tmp_path / "served") == ranked(tmp_path / "embedded")

    # add + delete through the server, then compare with a fresh embedded build of the result
    add_documents(tmp_path / "served", sample_docs[80:100], show_progress=False)
    delete_documents(tmp_path / "served", [d.id for d in docs[:10]])
    final = sample_docs[10:100]
    build_index(final, tmp_path / "fresh", IndexSettings(), show_progress=False)
    assert ranked(tmp_path / "served") == ranked(tmp_path / "fresh")

    client = chromadb.HttpClient(host="127.0.0.1", port=int(url.rsplit(":", 1)[1]))
    assert len(client.list_collections()) == 1  # replaced generations were dropped


def test_partitions_on_a_server_are_written_checked_and_dropped(
    tmp_path, chroma_server, sample_docs
):
    from hopgraph.graph_store.index.check import check_index
    from tests.unit.graph_store.stores.test_chroma_parts import partition

    url, _ = chroma_server
    client = chromadb.HttpClient(host="127.0.0.1", port=int(url.rsplit(":", 1)[1]))
    before = {c.name for c in client.list_collections()}
    index = tmp_path / "served"
    build_index(sample_docs[:30], index, IndexSettings(chroma_url=url), show_progress=False)
    location = partition(index, 3)  # what a cluster's build writes: NAME-p000 ... on the server
    names = {c.name for c in client.list_collections()} - before
    assert names == {part.collection for part in location.each()}
    assert check_index(index) == []
    add_documents(index, sample_docs[30:35], show_progress=False)
    delete_documents(index, [d.id for d in sample_docs[:5]])
    assert check_index(index) == []
    with Index.open(index) as idx:
        assert idx.vectors.count() == len(idx.chunks)
    build_index(sample_docs[:30], index, IndexSettings(chroma_url=url), show_progress=False,
                replace=True)  # fmt: skip
    assert len({c.name for c in client.list_collections()} - before) == 1  # the parts dropped


def test_server_gone_is_a_clear_error(tmp_path, chroma_server, sample_docs):
    url, proc = chroma_server
    build_index(
        sample_docs[:5], tmp_path / "idx", IndexSettings(chroma_url=url), show_progress=False
    )
    proc.terminate()
    proc.wait(timeout=20)
    from hopgraph.tools import make_retriever

    with Index.open(tmp_path / "idx") as idx:
        assert make_retriever("bm25", idx).retrieve(sample_docs[0].title, 2)
        # dense search reads the index's own vector table (docs/scaling.md): it keeps answering
        assert make_retriever("dense", idx).retrieve(sample_docs[0].title, 2)
        with pytest.raises(IndexStateError, match="not reachable"):  # Chroma itself
            idx.vectors.query(idx.embed_query(sample_docs[0].title), 2)


def test_graphs_on_a_server_are_built_atomically(tmp_path, chroma_server, sample_docs):
    url, _ = chroma_server
    path = tmp_path / "served"
    build_index(sample_docs[:40], path, IndexSettings(chroma_url=url), show_progress=False)
    build_graphs(path, GraphSettings(embed_triples=True), show_progress=False)
    with Index.open(path) as idx:
        assert idx.search_triples("Who played Susan Walker?", 2)
        triples = len(idx.knowledge_graph.triples)
    client = chromadb.HttpClient(host="127.0.0.1", port=int(url.rsplit(":", 1)[1]))
    names = {c.name for c in client.list_collections()}
    assert len(names) == 2 and any(n.endswith("-triples") for n in names)  # old ones dropped

    def boom(*args, **kwargs):
        raise RuntimeError("extraction crashed")

    import hopgraph.graph_store.index.graph_build as graph_build

    original = graph_build.build_knowledge_graph
    graph_build.build_knowledge_graph = boom
    try:
        with pytest.raises(RuntimeError):
            build_graphs(path, GraphSettings(semantic_k=2, embed_triples=True), False)
    finally:
        graph_build.build_knowledge_graph = original
    assert {c.name for c in client.list_collections()} == names  # live collections untouched
    with Index.open(path) as idx:
        assert len(idx.knowledge_graph.triples) == triples
        assert idx.manifest.graph["settings"]["semantic_k"] == 5
