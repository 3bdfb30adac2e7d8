"""MCP argument errors read as the CLI's: the argument, what it allows, what was given."""

from __future__ import annotations

import asyncio

import pytest
from mcp.server.fastmcp.exceptions import ToolError

from hopgraph.graph_store import LiveIndex
from hopgraph.mcp.server import build_server


@pytest.fixture(scope="module")
def server(docs_index):
    with LiveIndex(docs_index.directory) as live:
        yield build_server(live)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (
            {"query": "x", "k": 0},
            "k must be a whole number from 1 to 50: must be a positive whole number, got 0",
        ),
        ({"query": "x", "k": 51}, "k must be a whole number from 1 to 50, got 51"),
        ({"query": "x", "k": "many"}, "expected a whole number, got 'many'"),
        ({"query": "x", "method": "nope"}, "unknown method 'nope' (one of 'bm25', 'dense'"),
        ({"query": "x", "preset": "fast"}, "preset must be one of 'tuned' or 'paper'"),
        ({"k": 2}, "query is required"),
        ({"query": ""}, "the query is empty"),
        ({"query": "x", "where": "colour"}, "where must be an object (got 'colour')"),
    ],
)
def test_a_refused_argument_is_named_with_what_it_allows(server, arguments, said):
    with pytest.raises(ToolError) as caught:
        asyncio.run(server.call_tool("retrieve", arguments))
    message = str(caught.value)
    assert message.startswith("retrieve: ") and said in message
    assert "pydantic" not in message and "validation error" not in message


def test_two_refused_arguments_are_both_named(server):
    with pytest.raises(ToolError) as caught:
        asyncio.run(server.call_tool("retrieve", {"query": "x", "k": 0, "preset": "fast"}))
    assert "k must be a whole number from 1 to 50" in str(caught.value) and "preset must be" in str(
        caught.value
    )


def test_an_error_of_the_retrieval_itself_keeps_the_clis_words(server):
    with pytest.raises(ToolError, match="the query is empty"):
        asyncio.run(server.call_tool("retrieve", {"query": "   "}))
    hits = asyncio.run(server.call_tool("retrieve", {"query": "Mountrail County seat", "k": 2}))
    assert hits  # and the server still answers


def test_ask_with_no_llm_gives_the_evidence_and_says_why(server, monkeypatch):
    """Issue 53: MCP `ask` was an error; now an extractive answer, as the CLI and the page."""
    monkeypatch.setenv("HOPGRAPH_LLM", "none")
    result = asyncio.run(server.call_tool("ask", {"question": "Where is Stanley the seat?"}))
    answer = result[1] if isinstance(result, tuple) else result  # (content, structured)
    answer = answer.get("result", answer)
    assert "no LLM is configured" in answer["llm"]
    fields = {"id", "title", "text", "metadata", "answering"}
    assert answer["evidence"] and fields <= set(answer["evidence"][0])
    sentences = answer["extractive"]["sentences"]  # the passages' own sentences, cited
    assert sentences and answer["answer"] == answer["extractive"]["text"]
    assert all(s["text"] in answer["evidence"][s["passage"] - 1]["text"] for s in sentences)
    assert answer["method"] == "gnn_ret"  # an agent's method retrieves with gnn_ret


def test_each_call_is_one_line_at_info_naming_no_query_text(server, caplog):
    with caplog.at_level("INFO", logger="hopgraph.mcp"):
        asyncio.run(server.call_tool("retrieve", {"query": "secret words", "method": "bm25"}))
        with pytest.raises(ToolError):
            asyncio.run(server.call_tool("retrieve", {"query": "x", "k": 0}))
    lines = [r.getMessage() for r in caplog.records if r.name == "hopgraph.mcp"]
    assert len(lines) == 2, lines
    assert lines[0].startswith("retrieve query=12 chars method=bm25: ok in ")
    assert lines[1].startswith("retrieve query=1 chars k=0: refused in ")
    assert not any("secret" in line for line in lines)
    assert all("\n" not in line for line in lines)
