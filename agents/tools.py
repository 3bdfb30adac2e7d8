"""hopgraph for other agents: the retrievers and ``ask`` as LangChain tools over one index.

``hopgraph_tools(index)`` is the one call: the LLM-free retrievers always, and ``ask`` (an answer
with citations from one of hopgraph's agents) when a chat model is given or configured. The list
is ready for ``langgraph.prebuilt.create_react_agent`` or any tool-calling model.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from hopgraph.core.errors import HopgraphError
from hopgraph.core.llm import required_chat
from hopgraph.graph_store import Index
from hopgraph.tools.frameworks.langchain import retrieval_tools

from .registry import DEFAULT_METHOD, MULTI_STEP, agent_methods
from .run import RunResult, run_agent

AskMethod = Literal[tuple(agent_methods())]  # type: ignore[valid-type]  # the registry's


class AskInput(BaseModel):
    """Arguments of the ``ask`` tool."""

    question: str = Field(min_length=1, description="a complete, standalone question")
    method: AskMethod = Field(
        DEFAULT_METHOD,
        description=f"{' / '.join(MULTI_STEP)} search in steps; a retriever (gnn_ret, hybrid, "
        "...) reads once",
    )


def format_answer(result: RunResult) -> str:
    """Render an answer and its cited passages for a calling model."""
    cited = "\n".join(
        f"[{n}] id={c['id']} title={c['title']!r}: {c['text']}"
        for n, c in enumerate(result.citations, start=1)
    )
    return f"Answer: {result.answer}\nCited passages:\n{cited or '(none)'}"


def ask_tool(index: Index, chat: BaseChatModel) -> BaseTool:
    """Wrap :func:`~hopgraph.agents.run.run_agent`: answer as content, run as artifact."""

    def run(question: str, method: AskMethod = DEFAULT_METHOD) -> tuple[str, RunResult]:
        result = run_agent(method, question, index, chat)
        return format_answer(result), result

    return StructuredTool.from_function(
        func=run,
        name="ask",
        description=(
            "Answer a multi-hop question from the indexed corpus, citing the passages used. "
            "Slower than the retrieve tools (several LLM calls); use it for questions that need "
            "evidence from more than one passage."
        ),
        args_schema=AskInput,
        response_format="content_and_artifact",
    )


def hopgraph_tools(
    index: Index, chat: BaseChatModel | None = None, methods: list[str] | None = None
) -> list[BaseTool]:
    """Return the retrievers (``methods``, default every LLM-free one) and ``ask`` as tools.

    ``ask`` needs an LLM: ``chat``, or the one configured by ``HOPGRAPH_LLM_*``. With neither,
    the list holds the retrievers only, so an agent never calls a tool that cannot work.
    """
    tools = retrieval_tools(index, methods)
    if chat is None:
        try:
            chat = required_chat()
        except HopgraphError:
            return tools
    return [*tools, ask_tool(index, chat)]
