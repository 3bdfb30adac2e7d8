"""The same bad arguments refused alike by every Python seam and the CLI (issue 73, Deliver 6).

k, the method and the query's text go through one set of checks (core.network.checked_k and
checked_text, tools.shared.registry.checked_method): the CLI, the LangChain and LlamaIndex
retrievers, a retriever's own ``retrieve``, the page's search API, MCP and the LangGraph
server's context each refuse them with the same words, and never with a TypeError or a
traceback; a malformed filter reads as ``--where``'s error everywhere.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from mcp.server.fastmcp.exceptions import ToolError
from starlette.testclient import TestClient

from hopgraph.agents.server import ServerContext, checked_context
from hopgraph.cli import main
from hopgraph.core.errors import HopgraphError
from hopgraph.graph_store import LiveIndex
from hopgraph.mcp.server import build_server
from hopgraph.page.server import UIApp
from hopgraph.tools import HopgraphRetriever, make_retriever
from hopgraph.tools.frameworks.llamaindex import HopgraphLlamaIndexRetriever

PAGE = "http://127.0.0.1:8766"  # a host the page knows (HostGuard)
BAD_K = [
    (0, "must be a positive whole number, got 0"),
    (-1, "must be a positive whole number, got -1"),
    (True, "expected a whole number, got True"),
    ("²", "expected a whole number, got '²'"),
    (10**9, "must be a whole number from 1 to 50, got 1000000000"),
]
BAD_QUERIES = [
    ("", "the query is empty"),
    ("   ", "the query is empty"),
    ("Stan\ud800ley", "holds a lone surrogate (U+D800 at 4): not text"),
    ("Stan\0ley", "holds a NUL character (at 4)"),
]


def cli(*argv: str) -> int:
    """Run the CLI; argparse's refusals exit (status 2) instead of returning."""
    try:
        return main(list(argv))
    except SystemExit as stop:
        return int(stop.code or 0)


def page_search(index, params: dict):
    """Ask the page's search API (`hopgraph ui`) of ``index``."""
    with LiveIndex(index.directory) as live:
        return TestClient(UIApp(live).app(), base_url=PAGE).get("/api/search", params=params)


def refused(work) -> str:
    with pytest.raises(HopgraphError) as caught:
        work()
    return caught.value.message


@pytest.mark.parametrize(("k", "said"), BAD_K, ids=lambda v: repr(v))
def test_a_bad_k_is_refused_alike(docs_index, capsys, k, said):
    ways = {
        "langchain": lambda: HopgraphRetriever(index=docs_index, k=k),
        "llamaindex": lambda: HopgraphLlamaIndexRetriever(docs_index, k=k),
        "langgraph": lambda: checked_context({}, ServerContext(index="idx", k=k)),
    }
    for name, work in ways.items():
        assert said in refused(work), name
    text = "true" if k is True else str(k)  # the CLI's -k and the page's k are text
    assert cli("retrieve", "x", "-k", text, "--index", str(docs_index.directory)) == 2
    err = capsys.readouterr().err
    assert said.replace("True", "'true'") in err and "Traceback" not in err
    reply = page_search(docs_index, {"q": "x", "method": "bm25", "k": text})
    assert reply.status_code == 400 and said.replace("True", "'true'") in reply.json()["error"]


@pytest.mark.parametrize(("query", "said"), BAD_QUERIES, ids=lambda v: repr(v))
def test_a_query_that_is_not_text_is_refused_alike(docs_index, capsys, query, said):
    ways = {
        "dense": lambda: make_retriever("dense", docs_index).retrieve(query, 3),
        "hybrid": lambda: make_retriever("hybrid", docs_index).retrieve(query, 3),
        "gnn_ret": lambda: make_retriever("gnn_ret", docs_index).retrieve(query, 3),
        "langchain": lambda: HopgraphRetriever(index=docs_index, method="dense").invoke(query),
        "llamaindex": lambda: HopgraphLlamaIndexRetriever(docs_index, "dense").retrieve(query),
    }
    for name, work in ways.items():
        assert said in refused(work), name
    assert cli("retrieve", query, "--index", str(docs_index.directory)) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    if "\ud800" in query:
        return  # no URL carries one: UTF-8 has no lone surrogate, a %-escape decodes to U+FFFD
    reply = page_search(docs_index, {"q": query, "method": "bm25"})  # it asks a question
    assert reply.status_code == 400
    assert said.replace("the query", "the question") in reply.json()["error"]


def test_an_unknown_method_or_a_null_index_is_refused_alike(docs_index, capsys):
    said = "unknown method 'bogus'"
    assert said in refused(lambda: HopgraphRetriever(index=docs_index, method="bogus"))
    assert said in refused(lambda: HopgraphLlamaIndexRetriever(docs_index, "bogus"))
    assert said in refused(lambda: checked_context({}, ServerContext(method="bogus")))
    assert said in refused(lambda: make_retriever("bogus", docs_index))
    null = refused(lambda: checked_context({}, ServerContext(index=None)))  # type: ignore[arg-type]
    assert "context.index must name a served index folder, got None" in null
    message = SimpleNamespace(content="Stan\ud800ley")
    surrogate = refused(lambda: checked_context({"messages": [message]}, ServerContext()))
    assert "the question holds a lone surrogate" in surrogate


MCP_BAD = [{"k": 0}, {"k": -1}, {"k": True}, {"k": "²"}, {"k": 10**9}, {"method": "bogus"}]
MCP_BAD += [{"query": "Stan\0ley"}, {"query": ""}]


@pytest.mark.parametrize("arguments", MCP_BAD, ids=lambda a: repr(a))
def test_mcp_refuses_each_by_name(docs_index, arguments):
    with LiveIndex(docs_index.directory) as live:
        server = build_server(live)
        with pytest.raises(ToolError) as caught:
            asyncio.run(server.call_tool("retrieve", {"query": "Stanley", **arguments}))
    named = next(iter(arguments))
    assert named in str(caught.value) and "Traceback" not in str(caught.value)
    if named == "k":  # in the words the CLI and the Python seams use
        value = arguments["k"]
        words = dict(BAD_K).get(value) if value is not True else "got True"
        assert words is None or words in str(caught.value), str(caught.value)


BAD_WHERE = [
    ({"title": {"$contains": ""}}, "title*=", "'title': the value is empty"),
    ({"title": {"$bogus": "x"}}, None, "'title': unknown operator '$bogus'"),
    ({"title": {}}, None, "'title': no operator given"),
    ({"title": [1]}, None, "'title': [1] is not a text, number or true/false value"),
]


@pytest.mark.parametrize(("where", "option", "said"), BAD_WHERE, ids=lambda v: repr(v))
def test_a_malformed_filter_is_refused_alike(docs_index, capsys, where, option, said):
    """One message for a malformed filter in the CLI's --where, the two retriever classes, a
    retriever's own ``retrieve`` and MCP (never pydantic's dump of validation errors)."""
    said = f"malformed filter: {said}"
    ways = {
        "retrieve": lambda: make_retriever("dense", docs_index).retrieve("Stanley", 3, where),
        "langchain": lambda: HopgraphRetriever(index=docs_index, method="dense", where=where),
        "llamaindex": lambda: HopgraphLlamaIndexRetriever(docs_index, "dense", where=where)
        .retrieve("Stanley"),
    }  # fmt: skip
    for name, work in ways.items():
        assert said in refused(work), name
    with LiveIndex(docs_index.directory) as live, pytest.raises(ToolError) as caught:
        asyncio.run(build_server(live).call_tool("retrieve", {"query": "x", "where": where}))
    assert said in str(caught.value) and "Traceback" not in str(caught.value)
    if option is not None:
        capsys.readouterr()  # MCP's own log lines are not the CLI's
        assert cli("retrieve", "x", "--where", option, "--index", str(docs_index.directory)) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err


def test_mcp_names_an_argument_its_tool_does_not_have(docs_index):
    with LiveIndex(docs_index.directory) as live, pytest.raises(ToolError) as caught:
        asyncio.run(build_server(live).call_tool("retrieve", {"query": "x", "topk": 3}))
    said = str(caught.value)
    assert "retrieve: unknown argument 'topk' (its arguments: query, method, k" in said
