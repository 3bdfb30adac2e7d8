"""Widening hits to their section or their neighbours: CLI, LangChain tool, agents, bad input."""

import json
from dataclasses import replace

import pytest

from hopgraph.cli import main
from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index, build_index, load_documents
from hopgraph.tools import Hit, make_retriever
from hopgraph.tools.shared.expand import Expansion, expand_hits
from tests.docs_fixture import write_docs
from tests.unit.graph_store.index.test_index import HASHING


@pytest.fixture(scope="module")
def docs_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("expand")
    settings = HASHING.model_copy(update={"chunk_tokens": 16})
    build_index(
        load_documents(write_docs(root / "docs")), root / "idx", settings, show_progress=False
    )
    return root / "idx"


def test_parse_names_what_is_wrong():
    assert Expansion.parse("section") == Expansion("section")
    assert Expansion.parse("neighbours") == Expansion("neighbours", 1)
    assert Expansion.parse("neighbors:3") == Expansion("neighbours", 3)
    for bad in ("sections", "section:2", "neighbours:0", "neighbours:x", ""):
        with pytest.raises(InputError, match="expand"):
            Expansion.parse(bad)


def test_section_gives_the_whole_section_once(docs_index):
    with Index.open(docs_index) as idx:
        chunks = _document(idx, "api.rst")
        app = [c for c in chunks if c.section == "Application Object"]
        assert len(app) >= 2  # the section spans chunks: widening has something to do
        hits = make_retriever("bm25", idx).retrieve("central object configuration views", 5)
        wide = expand_hits(idx, hits, Expansion("section"))
        first = wide[0]
        assert first.id == hits[0].id and first.score == hits[0].score
        assert first.text == "\n\n".join(c.text for c in app)
        assert first.provenance[-1].method == "expand"
        assert list(first.provenance[-1].via) == [c.id for c in app]
        covered = [cid for h in wide for cid in h.provenance[-1].via]
        assert len(covered) == len(set(covered))  # merged and deduplicated
        assert len(wide) <= len(hits)


def test_neighbours_merge_windows_that_touch(docs_index):
    with Index.open(docs_index) as idx:
        chunks = _document(idx, "api.rst")
        hits = [Hit(chunks[1].id, 2.0, "API", chunks[1].text, "api.rst")]
        hits.append(replace(hits[0], id=chunks[3].id, score=1.0))
        [merged] = expand_hits(idx, hits, Expansion("neighbours", 1))
        assert list(merged.provenance[-1].via) == [c.id for c in chunks[0:5]]
        assert merged.id == chunks[1].id


def test_cli_expand_and_its_errors(docs_index, capsys):
    argv = ["retrieve", "signal receiver", "--index", str(docs_index), "--method", "bm25"]
    assert main([*argv, "--json", "--expand", "neighbours:1", "-k", "2"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert all(h["provenance"][-1]["step"] == "neighbours:1" for h in hits)
    assert main([*argv, "--expand", "chapter"]) == 2
    assert "section" in capsys.readouterr().err


def test_langchain_tool_takes_expand(docs_index):
    from hopgraph.tools.frameworks.langchain import as_tool
    from hopgraph.tools.frameworks.sources import IndexReader

    with Index.open(docs_index) as idx:
        tool = as_tool(IndexReader(idx), "bm25")
        message = tool.invoke(
            {
                "type": "tool_call",
                "id": "1",
                "name": tool.name,
                "args": {"query": "signal receiver", "k": 2, "expand": "section"},
            }
        )
        assert all(h.provenance[-1].step == "section" for h in message.artifact)


def test_agent_reader_sees_widened_passages(docs_index):
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from hopgraph.agents.context import AgentContext
    from hopgraph.agents.evidence import evidence_of

    with Index.open(docs_index) as idx:
        ctx = AgentContext(index=idx, chat=FakeListChatModel(responses=["x"]), expand="section")
        hits = make_retriever("bm25", idx).retrieve("central object", 2)
        shown = ctx.reading(evidence_of(hits, "search"))
        assert shown[0]["id"] == hits[0].id and len(shown[0]["text"]) > len(hits[0].text)
        assert shown[0]["found_by"] == "search"
        with pytest.raises(InputError):
            AgentContext(index=idx, chat=FakeListChatModel(responses=["x"]), expand="page")


def test_an_index_without_positions_is_named(docs_index):
    with Index.open(docs_index) as idx:
        hits = make_retriever("bm25", idx).retrieve("signal", 1)
        chunks = dict(idx.chunks)
        for c in idx.document_of(hits[0].id) or []:
            chunks[c.id] = replace(c, position=0)
        idx.chunks = chunks
        with pytest.raises(IndexStateError, match="no positions"):
            expand_hits(idx, hits, Expansion("section"))


def _document(idx: Index, doc_id: str) -> list:
    first = next(c for c in idx.chunks.values() if c.doc_id == doc_id)
    return idx.document_of(first.id) or []
