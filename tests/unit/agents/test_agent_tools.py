"""hopgraph as tools for other agents: a LangGraph ReAct agent calls the retrievers and ask."""

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from hopgraph.agents.tools import AskInput, hopgraph_tools
from tests.agent_scripts import NOT_YET, QUESTION, gear_script
from tests.fakes import ScriptedChatModel, ToolCallingChatModel


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


def react_turns(messages):
    """The calling agent: search with GNN-Ret, then ask GEAR, then answer from what came back."""
    tool_results = [m for m in messages if isinstance(m, ToolMessage)]
    if not tool_results:
        call = {"name": "retrieve_gnn_ret", "args": {"query": "Larry Alcala", "k": 2}, "id": "c1"}
        return AIMessage(content="", tool_calls=[call])
    if len(tool_results) == 1:
        call = {"name": "ask", "args": {"question": QUESTION, "method": "gear"}, "id": "c2"}
        return AIMessage(content="", tool_calls=[call])
    return f"Military instruction started in {tool_results[-1].content.split()[1]}."


# The issue names LangGraph's create_react_agent; LangGraph 1.x points to langchain's successor.
@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_a_react_agent_calls_the_retrievers_and_ask(index):
    from langgraph.prebuilt import create_react_agent

    inner = ScriptedChatModel(respond=gear_script([NOT_YET, "Answerable: Yes\nAnswer: 1936"]))
    tools = hopgraph_tools(index, chat=inner)
    assert {"retrieve_gnn_ret", "retrieve_hybrid", "ask"} <= {t.name for t in tools}
    caller = ToolCallingChatModel(turns=react_turns)
    agent = create_react_agent(caller, tools)
    final = agent.invoke({"messages": [("user", QUESTION)]})
    messages = final["messages"]
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == ["retrieve_gnn_ret", "ask"]
    assert "id=d1" in results[0].content and len(results[0].artifact) == 2
    assert results[1].content.startswith("Answer: 1936\nCited passages:\n[1] id=d2")
    assert results[1].artifact.citations[0]["id"] == "d2"
    assert messages[-1].content == "Military instruction started in 1936."


def test_without_an_llm_only_the_retrievers_are_offered(index, monkeypatch):
    for name in ("HOPGRAPH_LLM_MODEL", "HOPGRAPH_LLM_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    names = {t.name for t in hopgraph_tools(index)}
    assert "ask" not in names and "retrieve_gnn_ret" in names
    methods = AskInput.model_json_schema()["properties"]["method"]["enum"]
    assert {"gear", "rgnn_ret", "tog2", "gnn_ret", "hybrid"} <= set(methods)
