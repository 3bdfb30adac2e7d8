"""Every surface offers exactly the agents of hopgraph.agents.registry."""

import json
from pathlib import Path

from hopgraph.agents.registry import AGENTS, DEFAULT_METHOD, MULTI_STEP, SERVED, agent_methods
from hopgraph.tools import RETRIEVERS

ROOT = Path(__file__).resolve().parents[3]


def _choices(parser, command):
    sub = next(a for a in parser._actions if a.dest == "command")
    action = next(a for a in sub.choices[command]._actions if a.dest == "method")
    return list(action.choices), action.default


def test_the_registry_lists_each_agent_once_then_every_retriever():
    assert tuple(a.name for a in AGENTS) == MULTI_STEP
    assert agent_methods() == [*MULTI_STEP, *RETRIEVERS]
    assert len(set(agent_methods())) == len(agent_methods())
    assert DEFAULT_METHOD in MULTI_STEP


def test_cli_ask_and_chat_offer_exactly_the_registry():
    from hopgraph.cli import build_parser

    parser = build_parser()
    for command in ("ask", "chat"):
        assert _choices(parser, command) == (agent_methods(), DEFAULT_METHOD)


def test_langgraph_json_and_the_server_serve_exactly_the_registry():
    import hopgraph.agents.server as server

    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert config["graphs"] == {name: f"hopgraph.agents.server:{name}" for name in SERVED}
    assert set(SERVED) == {"chat", *MULTI_STEP}
    for name in SERVED:
        assert getattr(server, name).name == f"hopgraph-{name}"


def test_mcp_and_langchain_ask_tools_offer_exactly_the_registry(docs_index):
    import asyncio

    from hopgraph.agents.tools import AskInput
    from hopgraph.mcp.server import build_server

    schema = AskInput.model_json_schema()["properties"]["method"]
    assert schema["enum"] == agent_methods() and schema["default"] == DEFAULT_METHOD
    from hopgraph.graph_store import LiveIndex

    with LiveIndex(docs_index.directory) as live:
        tools = {t.name: t for t in asyncio.run(build_server(live).list_tools())}
    method = tools["ask"].inputSchema["properties"]["method"]
    assert method["enum"] == agent_methods() and method["default"] == DEFAULT_METHOD
