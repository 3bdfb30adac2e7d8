"""Triple embeddings are built only for the methods that search triples (GEAR's)."""

from hopgraph.agents.registry import needs_triple_vectors
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
