"""The LangChain and LlamaIndex retrievers as a library user leans on them (issue 74, Deliver 1):
a path, an ``Index`` or a ``LiveIndex``; per-call ``k`` and ``where``; ``search_kwargs``;
LlamaIndex ``MetadataFilters``; errors in the CLI's words; rank and provenance in metadata."""

from __future__ import annotations

import json
import shutil

import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

import hopgraph
from hopgraph.cli import main
from hopgraph.core.errors import HopgraphError, IndexStateError, InputError
from hopgraph.graph_store import Document, Index, LiveIndex, add_documents
from hopgraph.tools import HopgraphLlamaIndexRetriever, HopgraphRetriever, retrieval_tools
from hopgraph.tools.shared.registry import served_methods
from tests.unit.tools.test_langchain_retriever import QUESTION, docs_dir  # noqa: F401

OR = FilterCondition.OR
NEW = Document("zeppelins.md", "Zeppelins", "A zeppelin is a rigid airship named after its maker.")


@pytest.fixture
def cli(capsys):
    def ids(index, *where: str, k: int = 5) -> list[str]:
        argv = ["retrieve", QUESTION, "--index", str(index), "--method", "bm25", "-k", str(k)]
        for test in where:
            argv += ["--where", test]
        assert main([*argv, "--json"]) == 0
        return [h["id"] for h in json.loads(capsys.readouterr().out)]

    return ids


@pytest.fixture
def copy(docs_dir, tmp_path):  # noqa: F811
    shutil.copytree(docs_dir, tmp_path / "idx")
    return tmp_path / "idx"


def test_retrievers_from_a_path_or_a_live_index_see_a_later_add(copy):
    by_path = HopgraphRetriever(index=str(copy), method="bm25", k=1)
    live = LiveIndex(copy)
    llama = HopgraphLlamaIndexRetriever(index=live, method="bm25", k=1)
    tools = {t.name: t for t in retrieval_tools(copy)}
    assert all(d.metadata["doc_id"] != NEW.id for d in by_path.invoke("rigid airship zeppelin"))
    add_documents(copy, [NEW], show_progress=False)
    assert by_path.invoke("rigid airship zeppelin")[0].metadata["doc_id"] == NEW.id
    assert llama.retrieve("rigid airship zeppelin")[0].node.ref_doc_id == NEW.id
    found = tools["retrieve_bm25"].invoke({"query": "rigid airship zeppelin", "k": 1})
    assert "zeppelin" in found.lower()
    live.close()
    with Index.open(copy) as pinned:  # an Index answers from the generation it opened
        fixed = HopgraphRetriever(index=pinned, method="bm25", k=1)
        add_documents(copy, [Document("more.md", "More", "Zeppelin zeppelin airship.")], False)
        assert fixed.invoke("zeppelin airship")[0].metadata["doc_id"] == NEW.id


def test_k_and_where_per_call_and_in_search_kwargs_are_the_clis(docs_dir, cli):  # noqa: F811
    retriever = HopgraphRetriever(index=docs_dir, method="bm25")
    assert len(retriever.invoke(QUESTION, k=2)) == 2
    signals = cli(docs_dir, "section~=Signals", k=3)
    assert len(signals) == 3
    per_call = retriever.invoke(QUESTION, k=3, where={"section": {"$has": "Signals"}})
    assert [d.metadata["id"] for d in per_call] == signals
    kept = HopgraphRetriever(
        index=docs_dir,
        method="bm25",
        search_kwargs={"k": 3, "filter": {"section": {"$has": "Signals"}}},
    )
    assert [d.metadata["id"] for d in kept.invoke(QUESTION)] == signals
    scoped = HopgraphRetriever(
        index=docs_dir, method="bm25", where={"section": {"$has": "Signals"}}
    )
    narrowed = scoped.invoke(QUESTION, k=3, where={"source": {"$ne": "deploy"}})
    assert [d.metadata["id"] for d in narrowed] == cli(
        docs_dir, "section~=Signals", "source!=deploy", k=3
    )  # a call's filter narrows the retriever's, never replaces it
    ranked = kept.invoke(QUESTION)
    assert [d.metadata["rank"] for d in ranked] == [1, 2, 3]
    assert all(d.metadata["provenance"][-1]["method"] == "bm25" for d in ranked)


def test_metadata_filters_are_read_as_the_clis_where(docs_dir, cli):  # noqa: F811
    signals = MetadataFilters(
        filters=[MetadataFilter(key="section", value="Signals", operator=FilterOperator.CONTAINS)]
    )
    llama = HopgraphLlamaIndexRetriever(index=docs_dir, method="bm25", k=3, filters=signals)
    assert [n.node.node_id for n in llama.retrieve(QUESTION)] == cli(
        docs_dir, "section~=Signals", k=3
    )
    both = MetadataFilters(
        filters=[
            signals,
            MetadataFilter(key="source", value="deploy", operator=FilterOperator.NE),
        ],
        condition=FilterCondition.AND,
    )
    llama = HopgraphLlamaIndexRetriever(index=docs_dir, method="bm25", k=3, filters=both)
    expected = cli(docs_dir, "section~=Signals", "source!=deploy", k=3)
    assert [n.node.node_id for n in llama.retrieve(QUESTION)] == expected


def _equal(key: str, value: str) -> MetadataFilter:
    return MetadataFilter(key=key, value=value)


@pytest.mark.parametrize(
    ("filters", "said"),
    [
        (MetadataFilters(filters=[MetadataFilter(key="year", value=3, operator=FilterOperator.GT)]),
         "operator '>' on 'year' is not one hopgraph's filters have"),
        (MetadataFilters(filters=[_equal("a", "x"), _equal("b", "y")], condition=OR),
         "condition 'or'"),
        (MetadataFilters(filters=[_equal("a", "x"), _equal("a", "y")]),
         "'a' is tested by $eq twice"),
    ],
)  # fmt: skip
def test_a_filter_hopgraph_cannot_read_is_named(docs_dir, filters, said):  # noqa: F811
    with pytest.raises(InputError) as caught:
        HopgraphLlamaIndexRetriever(index=docs_dir, method="bm25", filters=filters)
    assert said in caught.value.message


def test_malformed_input_is_one_line_in_the_clis_words(docs_dir, tmp_path):  # noqa: F811
    retriever = HopgraphRetriever(index=docs_dir, method="bm25")
    with pytest.raises(HopgraphError) as caught:
        retriever.invoke(QUESTION, k=0)
    assert "must be a positive whole number, got 0" in caught.value.message
    with pytest.raises(InputError) as caught:
        retriever.invoke(QUESTION, topk=3)  # misspelt: named, never ignored
    assert "unknown argument(s) 'topk'" in caught.value.message
    with pytest.raises(InputError) as caught:
        retriever.invoke(QUESTION, where={"title": {"$near": "x"}})
    assert "unknown operator '$near'" in caught.value.message
    with pytest.raises(InputError) as caught:
        HopgraphRetriever(index=docs_dir, search_kwargs={"score_threshold": 0.5})
    assert "unknown argument(s) 'score_threshold'" in caught.value.message
    for wrong in (5, None):
        with pytest.raises(InputError) as caught:
            HopgraphLlamaIndexRetriever(index=wrong)
        assert "is not an index" in caught.value.message
    with pytest.raises(IndexStateError):
        HopgraphRetriever(index=str(tmp_path / "nothing-here"))


def test_tools_default_to_what_the_index_serves_and_the_seams_are_hopgraphs(docs_dir):  # noqa: F811
    with Index.open(docs_dir) as index:
        served = served_methods(index)
    assert [t.name for t in retrieval_tools(docs_dir)] == [f"retrieve_{m}" for m in served]
    assert hopgraph.HopgraphRetriever is HopgraphRetriever
    assert hopgraph.HopgraphLlamaIndexRetriever is HopgraphLlamaIndexRetriever
    assert hopgraph.retrieval_tools is retrieval_tools
