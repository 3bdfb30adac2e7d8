"""Metadata filters: ``retrieve(..., where=...)`` on LLM-free retrievers, the CLI and agents."""

import json

import pytest

from hopgraph.cli import main
from hopgraph.core.errors import InputError
from hopgraph.graph_store import Index, build_graphs, build_index, load_documents
from hopgraph.graph_store.graph_build import GraphSettings
from hopgraph.tools import make_retriever
from tests.conftest import DOCS
from tests.unit.test_index import HASHING

# d1-d3 are about the Philippines, d4-d6 about North Dakota
REGION = {"d1": "ph", "d2": "ph", "d3": "ph", "d4": "nd", "d5": "nd", "d6": "nd"}
QUERY = "Where was Larry Alcala educated? Stanley North Dakota seat"
LLM_FREE = ["bm25", "dense", "hybrid", "gnn_ret", "naive_ge", "iier"]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("where")
    corpus = root / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({**d, "region": REGION[d["id"]], "year": 2020}) + "\n" for d in DOCS)
    )
    build_index(load_documents(corpus), root / "idx", HASHING, show_progress=False)
    build_graphs(root / "idx", GraphSettings(), show_progress=False)
    return root / "idx"


@pytest.mark.parametrize("method", LLM_FREE)
def test_every_retriever_keeps_only_matching_chunks(index_dir, method):
    with Index.open(index_dir) as idx:
        retriever = make_retriever(method, idx)
        plain = retriever.retrieve(QUERY, 6)
        for region in ("ph", "nd"):
            hits = retriever.retrieve(QUERY, 2, where={"region": region})
            assert hits, (method, region)
            assert {REGION[h.doc_id] for h in hits} == {region}
            # the method's own order among the allowed chunks (methods whose ranking does not
            # depend on k), when its full ranking holds them
            allowed = [h.id for h in plain if REGION[h.doc_id] == region]
            if len(allowed) >= len(hits) and method in ("bm25", "gnn_ret"):
                assert [h.id for h in hits] == allowed[: len(hits)]


def test_dense_filters_in_chroma_like_an_exact_scan(index_dir):
    with Index.open(index_dir) as idx:
        dense = make_retriever("dense", idx)
        hits = dense.retrieve("Manila University", 3, where={"region": "ph"})
        exact = dense.exact_top("Manila University", 3, idx.matching({"region": "ph"}))
        assert [h.id for h in hits] == [h.id for h in exact]


def test_fields_compare_as_text_and_unknown_fields_are_named(index_dir):
    with Index.open(index_dir) as idx:
        bm25 = make_retriever("bm25", idx, where={"year": "2020"})
        assert {h.id for h in bm25.retrieve("Stanley", 3)} == {"d5", "d6"}  # BM25 > 0 only
        assert bm25.retrieve("Stanley", 3, where={"doc_id": "d6"})[0].id == "d6"
        assert bm25.retrieve("Stanley", 3, where={"region": "nowhere"}) == []
        with pytest.raises(InputError, match=r"'colour'.*") as err:
            bm25.retrieve("Stanley", 3, where={"colour": "red"})
        assert "region" in str(err.value) and "source" in str(err.value)


def test_cli_retrieve_where(index_dir, capsys):
    argv = ["retrieve", "Stanley", "--index", str(index_dir), "--method", "hybrid", "--json"]
    assert main([*argv, "--where", "region=ph", "--where", "year=2020"]) == 0
    assert {h["doc_id"] for h in json.loads(capsys.readouterr().out)} <= {"d1", "d2", "d3"}
    assert main([*argv, "--where", "region"]) == 2
    assert "not key=value" in capsys.readouterr().err


def test_agent_context_filters_its_retrievers_and_evidence(index_dir):
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from hopgraph.agents.context import AgentContext

    with Index.open(index_dir) as idx:
        ctx = AgentContext(
            index=idx, chat=FakeListChatModel(responses=["x"]), where={"region": "nd"}
        )
        hits = ctx.retriever("gnn_ret").retrieve(QUERY, 3)
        assert {REGION[h.doc_id] for h in hits} == {"nd"}
        assert ctx.allows("d5") and not ctx.allows("d1")
