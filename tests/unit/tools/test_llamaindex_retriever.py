"""HopgraphLlamaIndexRetriever gives hits as NodeWithScore, in a query engine, offline."""

from __future__ import annotations

import asyncio
import importlib
import socket
import sys

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode

from hopgraph.core.errors import InputError, UnknownMethodError
from hopgraph.graph_store import Index, build_graphs, build_index, load_documents
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.tools import HopgraphLlamaIndexRetriever, make_retriever
from tests.docs_fixture import write_docs
from tests.unit.graph_store.index.test_index import HASHING

QUESTION = "How do I connect a signal receiver?"
SIGNALS = {"section": {"$has": "Signals"}}


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory):
    """A folder of .md and .rst pages (front matter, sections), indexed with graphs."""
    root = tmp_path_factory.mktemp("docs")
    settings = HASHING.model_copy(update={"chunk_tokens": 40})
    build_index(load_documents(write_docs(root / "docs")), root / "idx", settings, False)
    build_graphs(root / "idx", GraphSettings(), show_progress=False)
    return root / "idx"


@pytest.fixture
def no_network(monkeypatch):
    """Record (and refuse) every name lookup and connection: LlamaIndex must not download."""
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def test_nodes_carry_the_hits_text_id_metadata_and_score_sync_and_async(docs_dir):
    with Index.open(docs_dir) as idx:
        retriever = HopgraphLlamaIndexRetriever(index=idx, method="bm25", k=3, where=SIGNALS)
        nodes = retriever.retrieve(QUESTION)
        again = asyncio.run(retriever.aretrieve(QUESTION))
        hits = make_retriever("bm25", idx).retrieve(QUESTION, 3, SIGNALS)
    assert hits and [n.node_id for n in nodes] == [h.id for h in hits] == [n.node_id for n in again]
    for rank, (item, hit) in enumerate(zip(nodes, hits, strict=True), start=1):
        assert item.score == hit.score
        assert item.node.get_content() == hit.text
        assert item.node.ref_doc_id == hit.doc_id
        assert item.node.metadata == {
            **hit.metadata,
            "id": hit.id,
            "doc_id": hit.doc_id,
            "title": hit.title,
            "method": "bm25",
            "rank": rank,
            "score_kind": "bm25",
            "raw_score": hit.own_score,
            "provenance": hit.to_dict()["provenance"],
        }
        assert "Signals" in item.node.metadata["section"]
        for_the_llm = item.node.get_content(metadata_mode=MetadataMode.LLM)
        assert f"section: {hit.metadata['section']}" in for_the_llm
        assert "position: " not in for_the_llm  # bookkeeping stays out of the prompt
        assert "provenance: " not in for_the_llm and "rank: " not in for_the_llm


def test_expand_widens_the_nodes_as_it_widens_the_hits(docs_dir):
    with Index.open(docs_dir) as idx:
        plain = HopgraphLlamaIndexRetriever(index=idx, method="bm25", k=2).retrieve(QUESTION)
        wide = HopgraphLlamaIndexRetriever(index=idx, method="bm25", k=2, expand="section")
        widened = wide.retrieve(QUESTION)
    assert plain[0].node_id == widened[0].node_id
    assert len(widened[0].get_content()) >= len(plain[0].get_content())


def test_a_query_engine_answers_from_the_hits_offline(docs_dir, no_network):
    with Index.open(docs_dir) as idx:
        retriever = HopgraphLlamaIndexRetriever(index=idx, method="hybrid", k=2)
        # MockLLM answers with the prompt it was given: the answer shows the context
        engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
        response = engine.query(QUESTION)
        async_response = asyncio.run(engine.aquery(QUESTION))
        hits = make_retriever("hybrid", idx).retrieve(QUESTION, 2)
    for answer in (response, async_response):
        assert [n.node_id for n in answer.source_nodes] == [h.id for h in hits]
        assert [n.score for n in answer.source_nodes] == [h.score for h in hits]
        assert QUESTION in str(answer)
        assert all(h.text in str(answer) for h in hits)
    assert no_network == []  # no tokenizer or NLTK data fetched


def test_bad_arguments_are_refused_when_the_retriever_is_made(docs_dir):
    with Index.open(docs_dir) as idx:
        for k in (0, 51, True, "²"):  # the CLI's words (core.network.checked_k)
            with pytest.raises(InputError, match="k must be a whole number from 1 to 50"):
                HopgraphLlamaIndexRetriever(index=idx, k=k)
        with pytest.raises(UnknownMethodError, match="unknown method 'bm52'"):
            HopgraphLlamaIndexRetriever(index=idx, method="bm52")
        with pytest.raises(UnknownMethodError, match="unknown preset"):
            HopgraphLlamaIndexRetriever(index=idx, preset="best")
        with pytest.raises(InputError, match="sections"):
            HopgraphLlamaIndexRetriever(index=idx, expand="sections")


class _NoLlamaIndex:
    """A meta path finder for an environment without llama-index-core."""

    def find_spec(self, name, path=None, target=None):
        if name == "llama_index" or name.startswith("llama_index."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def test_without_the_extra_the_error_says_how_to_install_it(monkeypatch):
    for name in list(sys.modules):
        if name.startswith(("llama_index", "hopgraph.tools.frameworks.llamaindex")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoLlamaIndex(), *sys.meta_path])
    with pytest.raises(ModuleNotFoundError, match=r'pip install "hopgraph\[llamaindex\]"') as err:
        importlib.import_module("hopgraph.tools.frameworks.llamaindex")
    assert err.value.name == "llama_index"
    assert "No module named 'llama_index'" in str(err.value)
    import hopgraph.tools

    with pytest.raises(ModuleNotFoundError, match=r'pip install "hopgraph\[llamaindex\]"'):
        hopgraph.tools.HopgraphLlamaIndexRetriever  # noqa: B018
