"""Hits carry their metadata; HopgraphRetriever is a LangChain retriever usable in a chain."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from hopgraph.cli import main
from hopgraph.graph_store import Index, build_graphs, build_index, load_documents
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.tools import HopgraphRetriever, make_retriever
from tests.docs_fixture import write_docs
from tests.unit.graph_store.index.test_index import HASHING

QUESTION = "How do I connect a signal receiver?"


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory):
    """A folder of .md and .rst pages (front matter, sections), indexed with graphs."""
    root = tmp_path_factory.mktemp("docs")
    settings = HASHING.model_copy(update={"chunk_tokens": 40})
    build_index(load_documents(write_docs(root / "docs")), root / "idx", settings, False)
    build_graphs(root / "idx", GraphSettings(), show_progress=False)
    return root / "idx"


def test_every_hit_carries_its_section_position_source_and_front_matter(docs_dir):
    with Index.open(docs_dir) as idx:
        for method in ("bm25", "dense", "gnn_ret", "iier"):
            for hit in make_retriever(method, idx).retrieve(QUESTION, 4):
                chunk = idx.chunk(hit.id)
                assert hit.metadata["section"] == chunk.section_path, method
                assert hit.metadata["section"].startswith(chunk.title)  # the page first
                assert hit.metadata["position"] == chunk.position
                assert hit.metadata["chunks"] == chunk.n_chunks
                assert hit.metadata["source"].endswith(hit.doc_id)
        [deploying] = make_retriever("bm25", idx).retrieve(
            "production", 1, {"doc_id": "deploying/index.md"}
        )
        assert deploying.metadata["tags"] == "ops, servers"  # its front matter


def test_retrieve_json_gives_the_metadata(docs_dir, capsys):
    argv = ["retrieve", QUESTION, "--index", str(docs_dir), "--method", "bm25", "--json"]
    assert main(argv) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits and all(
        {"section", "position", "chunks", "source"} <= set(h["metadata"]) for h in hits
    )


def test_the_retriever_returns_documents_with_metadata_and_score_sync_and_async(docs_dir):
    with Index.open(docs_dir) as idx:
        retriever = HopgraphRetriever(
            index=idx, method="bm25", k=3, where={"section": {"$has": "Signals"}}
        )
        docs = retriever.invoke(QUESTION)
        again = asyncio.run(retriever.ainvoke(QUESTION))
        hits = make_retriever("bm25", idx).retrieve(QUESTION, 3, {"section": {"$has": "Signals"}})
    assert [d.id for d in docs] == [h.id for h in hits] == [d.id for d in again]
    for doc, hit in zip(docs, hits, strict=True):
        assert doc.page_content == hit.text
        assert doc.metadata["score"] == hit.score and doc.metadata["method"] == "bm25"
        assert doc.metadata["section"] == hit.metadata["section"]
        assert "Signals" in doc.metadata["section"]


def test_the_retriever_in_an_lcel_chain_with_a_chat_model(docs_dir):
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    seen: list[str] = []

    def context(docs):
        text = "\n\n".join(f"[{d.metadata['id']}] {d.page_content}" for d in docs)
        seen.append(text)
        return text

    with Index.open(docs_dir) as idx:
        retriever = HopgraphRetriever(index=idx, method="hybrid", k=2)
        chain = (
            {"context": retriever | context, "question": RunnablePassthrough()}
            | prompt
            | FakeListChatModel(responses=["Connect it with connect()."])
            | StrOutputParser()
        )
        assert chain.invoke(QUESTION) == "Connect it with connect()."
        first = retriever.invoke(QUESTION)[0]
    assert f"[{first.id}]" in seen[0]


def test_a_bad_k_is_refused_when_the_retriever_is_made(docs_dir):
    from hopgraph.core.errors import InputError

    # the CLI's words (core.network.checked_k), not pydantic's, and True is not 1
    with Index.open(docs_dir) as idx:
        for k in (0, True, 51):
            with pytest.raises(InputError, match="k must be a whole number from 1 to 50"):
                HopgraphRetriever(index=idx, k=k)


@pytest.mark.parametrize("count", [0, 1, 2, 7, 50, 3000])
def test_a_record_looked_up_in_the_table_file_is_the_one_the_table_reads(tmp_path, count):
    from hopgraph.graph_store.stores.doc_table import DocumentLookup, DocumentRecord, DocumentTable

    ids = [f"d{i:03d}" for i in range(count)] + ['q"uote', "é/ü.md", "a#1", "Z b"][: count % 5]
    # some lines longer than a read's window: a lookup's line found over several reads
    records = [
        DocumentRecord(
            i, f"T {i}", f"/src/{i}", "h", "now", 1, {"n": n, "pad": "x" * (n % 97 == 5) * 9000}
        )
        for n, i in enumerate(ids)
    ]
    path = tmp_path / "documents.jsonl"
    DocumentTable.of(records).write(path)
    lookup = DocumentLookup(path)
    for record in records:
        assert lookup.get(record.id) == record
    for missing in ("", "d", "d0000", "zzz", "a#", "\uffff"):
        assert lookup.get(missing) is None
    lookup.close()
