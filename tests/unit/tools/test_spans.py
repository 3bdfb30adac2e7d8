"""Every retrieval is an OpenTelemetry span in the GenAI conventions' and OpenInference's words
(issue 74, Deliver 5): from Python, the CLI, LangChain, MCP and a LangGraph run, with the
query's embedding and a graph method's expansion as children; documents only when asked; and
nothing imported or paid while nothing traces."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hopgraph.agents.run import run_agent
from hopgraph.cli import main
from hopgraph.graph_store import LiveIndex
from hopgraph.mcp.server import build_server
from hopgraph.tools import HopgraphRetriever, make_retriever
from tests.agent_scripts import QUESTION, rgnn_script
from tests.fakes import ScriptedChatModel

GEN_AI = {"gen_ai.operation.name": "retrieval", "openinference.span.kind": "RETRIEVER"}


@pytest.fixture
def exported(monkeypatch):
    """Spans of this test, from an SDK provider of its own (the process's global one is kept)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer", provider.get_tracer)
    monkeypatch.delenv("HOPGRAPH_TRACE_CONTENT", raising=False)
    yield exporter
    provider.shutdown()


def retrievals(exporter, method: str | None = None):
    found = [s for s in exporter.get_finished_spans() if s.name == "retrieval"]
    return [s for s in found if method is None or s.attributes["hopgraph.method"] == method]


def children(exporter, parent) -> list[str]:
    return [s.name for s in exporter.get_finished_spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id]  # fmt: skip


def test_a_retrieval_is_a_span_with_its_embedding_and_expansion(docs_index, exported):
    hits = make_retriever("gnn_ret", docs_index).retrieve("Where was Larry Alcala educated?", 3)
    (span,) = retrievals(exported, "gnn_ret")
    assert GEN_AI.items() <= dict(span.attributes).items()
    assert span.attributes["gen_ai.data_source.id"] == docs_index.directory.name
    assert span.attributes["gen_ai.retrieval.top_k"] == 3
    assert span.attributes["hopgraph.hits"] == len(hits)
    assert span.kind == trace.SpanKind.INTERNAL
    assert {"embeddings", "graph expansion"} <= set(children(exported, span))
    grown = next(s for s in exported.get_finished_spans() if s.name == "graph expansion")
    assert grown.attributes["hopgraph.graph.nodes_reached"] > 0
    # no content unless asked: neither the query nor a document
    assert not [a for a in span.attributes if a.startswith(("retrieval.documents", "input."))]
    assert "gen_ai.retrieval.documents" not in span.attributes


def grag_weights(index, path):
    """Weights for G-RAG over ``index`` (untrained: what is traced is the same)."""
    from hopgraph.tools.grag.graph import GRAGSettings
    from hopgraph.tools.grag.model import new_model
    from hopgraph.tools.shared.weights import save_weights

    d = index.manifest.embedder["dimension"]
    record = {"model": index.manifest.settings.model, "dimension": d, "method": "grag",
              "settings": {"hidden": 4}}  # fmt: skip
    save_weights(path, record, new_model(d, GRAGSettings(hidden=4), seed=0).state_dict())
    return path


def test_iier_and_grag_trace_their_expansion_and_rerank(docs_index, exported, tmp_path):
    weights = grag_weights(docs_index, tmp_path / "grag.pt")
    expected = [
        ("iier", {}, {"graph expansion"}),
        ("grag", {"weights": weights}, {"graph expansion", "rerank"}),
    ]
    for method, extra, kids in expected:
        make_retriever(method, docs_index, keep=0, **extra).retrieve("Larry Alcala?", 3)
        (span,) = retrievals(exported, method)
        assert kids <= set(children(exported, span)), method
        grown = [s for s in exported.get_finished_spans() if s.name == "graph expansion"]
        assert grown[-1].attributes["hopgraph.graph.nodes_reached"] > 0


def test_documents_and_the_query_only_when_asked(docs_index, exported, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_TRACE_CONTENT", "1")
    hits = make_retriever("bm25", docs_index).retrieve("Mountrail County seat", 2)
    (span,) = retrievals(exported, "bm25")
    assert span.attributes["input.value"] == "Mountrail County seat"
    assert json.loads(span.attributes["gen_ai.retrieval.documents"]) == [
        {"id": h.id, "score": h.score} for h in hits
    ]
    for i, hit in enumerate(hits):
        assert span.attributes[f"retrieval.documents.{i}.document.id"] == hit.id
        assert span.attributes[f"retrieval.documents.{i}.document.content"] == hit.text
        assert span.attributes[f"retrieval.documents.{i}.document.score"] == hit.score
    assert "embeddings" not in children(exported, span)  # BM25 embeds nothing


def test_the_cli_langchain_mcp_and_a_langgraph_run_each_make_one(docs_index, exported, capsys):
    argv = ["retrieve", "Stanley", "--index", str(docs_index.directory), "--method", "dense"]
    assert main(argv) == 0
    assert len(retrievals(exported, "dense")) == 1
    HopgraphRetriever(index=docs_index, method="hybrid", k=2).invoke("Stanley")
    assert len(retrievals(exported, "hybrid")) == 1
    with LiveIndex(docs_index.directory) as live:
        server = build_server(live)
        asyncio.run(server.call_tool("retrieve", {"query": "Stanley", "method": "iier", "k": 2}))
    assert len(retrievals(exported, "iier")) == 1
    chat = ScriptedChatModel(respond=rgnn_script(["Critique: yes"]))
    run_agent("rgnn_ret", QUESTION, docs_index, chat)
    assert retrievals(exported, "rgnn_ret"), [s.name for s in exported.get_finished_spans()]


def test_nothing_is_imported_while_nothing_traces(docs_index):
    code = (
        "import sys\n"
        "from hopgraph.graph_store import Index\n"
        "from hopgraph.tools import make_retriever\n"
        f"with Index.open({str(docs_index.directory)!r}) as index:\n"
        "    for method in ('bm25', 'dense', 'gnn_ret'):\n"
        "        make_retriever(method, index).retrieve('Stanley', 3)\n"
        "print([m for m in sys.modules if m.startswith('opentelemetry')])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_cli_exports_over_otlp_when_its_variables_say_where(docs_index):
    """`OTEL_EXPORTER_OTLP_ENDPOINT` set: a command sends its spans over OTLP/HTTP (protobuf)."""
    import os
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[tuple[str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}"}
    argv = [sys.executable, "-m", "hopgraph", "retrieve", "Stanley", "--index",
            str(docs_index.directory), "--method", "bm25"]  # fmt: skip
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    assert [path for path, _ in received] == ["/v1/traces"]
    body = received[0][1]
    assert b"retrieval" in body and b"gen_ai.operation.name" in body and b"hopgraph" in body
