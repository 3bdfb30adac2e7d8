"""`hopgraph ui`'s Ask: an agent's steps streamed to the page as they happen (server-sent events).

``GET /api/ask?q=&method=&k=[&thread=]`` answers ``text/event-stream``. ``method`` is any method of
`hopgraph ask` (an agent, or a retriever and the citing reader) or ``chat``: the conversational
agent, whose turns follow one another under the page's ``thread`` (kept in this process's memory,
as `hopgraph chat` keeps them in its checkpoint file; follow-ups are rewritten into standalone
questions). Events, in order:

- ``step`` ``{"node", "line"}``: each line an agent node adds to its steps, when the node ends;
- ``answer`` ``{"answer", "parts", "evidence": [{id, title, text, parts, cited, answering,
  answering_parts}], "usage", "llm"}`` at the end (``parts``: the text as prose and highlighted
  code, formatting.passage_parts);
- ``evidence`` ``{"why", "hint", "method", "answer", "evidence"}`` instead, when no LLM is
  configured: the extractive answer (``{"text", "sentences": [{text, parts, passage, ...}]}``, the
  passages' own sentences, hopgraph.agents.extractive), the passages a retriever ranks first,
  each with its ``answering`` sentence (as `hopgraph ask` prints them), and how to configure one;
- ``failed`` ``{"error", "hint"}`` when the input or the run fails (the stream then ends).

The run happens on a worker thread (the same pool as the other requests); its events cross to
the response through a queue.
"""

from __future__ import annotations

import json
import queue
from collections.abc import AsyncIterator, Callable
from functools import cache
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse

from hopgraph.core.errors import InputError, public_reply
from hopgraph.core.network import checked_question
from hopgraph.graph_store import Index

from .formatting import passage_parts
from .queries import parse_k

Send = Callable[[str, dict[str, Any]], None]
DONE = object()
SETUP = "set HOPGRAPH_LLM_BASE_URL and HOPGRAPH_LLM_MODEL (an OpenAI-compatible server), or " \
    "HOPGRAPH_LLM=local for the small offline model, then restart `hopgraph ui`"  # fmt: skip


CHAT = "chat"


def ask_methods() -> list[str]:
    """Return the methods Ask offers: every method of `hopgraph ask`, then the chat agent."""
    from hopgraph.agents.registry import agent_methods

    return [*agent_methods(), CHAT]


def steps_to(send: Send) -> Callable[[str, dict[str, Any]], None]:
    """Return an agent's ``on_update`` that sends each line a node adds to its steps."""

    def on_update(node: str, update: dict[str, Any]) -> None:
        for line in update.get("steps", []):
            send("step", {"node": node, "line": line})

    return on_update


@cache
def conversations() -> Any:
    """Return the chat graph, compiled once with an in-memory checkpointer for every thread."""
    from langgraph.checkpoint.memory import InMemorySaver

    from hopgraph.agents.chat.graph import builder

    return builder.compile(checkpointer=InMemorySaver(), name="hopgraph-chat")


def chat_turn(index: Index, chat: Any, question: str, thread: str, k: int, send: Send) -> None:
    """Answer one turn of the thread's conversation, sending its steps, then the answer."""
    from langchain_core.messages import HumanMessage

    from hopgraph.agents.chat.context import Context
    from hopgraph.agents.registry import DEFAULT_METHOD
    from hopgraph.core.llm import describe

    graph, config = conversations(), {"configurable": {"thread_id": f"ui-{thread}"}}
    context = Context(index=index, chat=chat, method=DEFAULT_METHOD, k=k, on_update=steps_to(send))
    for update in graph.stream({"messages": [HumanMessage(question)]}, config, context=context,
                               stream_mode="updates"):  # fmt: skip
        standalone = (update.get("condense") or {}).get("standalone")
        if standalone and standalone != question:
            send("step", {"node": "condense", "line": f"as a standalone question: {standalone}"})
    values = graph.get_state(config).values
    sources = values.get("sources", [])
    evidence = [_passage(e, {e["id"] for e in sources}) for e in sources]  # what it rests on
    written = values["messages"][-1].text  # the reply's text, whatever blocks it came in
    send("answer", {"answer": written, "parts": passage_parts(written), "llm": describe(chat),
                    "usage": None, "evidence": evidence})  # fmt: skip


def answer(index: Index, params: Any, send: Send) -> None:
    """Run the question through the method's agent, sending its events (module docstring)."""
    from hopgraph.agents.evidence import answer_alone
    from hopgraph.agents.run import run_agent
    from hopgraph.core.llm import choose_chat, describe

    question, method = checked_question(params.get("q", "")), params.get("method", "gear")
    if method not in ask_methods():
        raise InputError(f"unknown method {method!r}", f"choose one of: {', '.join(ask_methods())}")
    k = parse_k(params)
    chat = choose_chat()
    if chat is not None and method == CHAT:
        thread = params.get("thread", "")
        if not thread.isalnum() or len(thread) > 64:
            raise InputError("a chat needs its thread: letters and digits", "reload the page")
        chat_turn(index, chat, question, thread, k, send)
        return
    if chat is None:
        reply = answer_alone(index, method, question, k, "tuned")
        extract = reply["answer"]  # each sentence's prose and code, as a passage's
        extract["sentences"] = [
            {**s, "parts": passage_parts(s["text"])} for s in extract["sentences"]
        ]
        send("evidence", {"why": "no LLM is configured", "hint": SETUP, "method": reply["method"],
                          "answer": extract,
                          "evidence": [_passage(h, set()) for h in reply["evidence"]]})  # fmt: skip
        return

    result = run_agent(method, question, index, chat, on_update=steps_to(send), k=k)
    cited = {c["id"] for c in result.citations}
    shown = [*result.evidence, *(c for c in result.citations
                                 if c["id"] not in {e["id"] for e in result.evidence})]  # fmt: skip
    send("answer", {"answer": result.answer, "parts": passage_parts(result.answer),
                    "evidence": [_passage(e, cited) for e in shown],
                    "usage": dict(result.usage), "llm": describe(chat)})  # fmt: skip


def _passage(passage: Any, cited: set[str]) -> dict[str, Any]:
    return {"id": passage["id"], "title": passage["title"], "text": passage["text"],
            "parts": passage_parts(passage["text"]), "cited": passage["id"] in cited,
            "answering": passage.get("answering", ""),
            "answering_parts": passage_parts(passage.get("answering", ""))}  # fmt: skip


def stream(
    run: Callable[[Send], None], limiter: anyio.CapacityLimiter, root: Path
) -> StreamingResponse:
    """Run ``run(send)`` on a worker thread; stream what it sends as server-sent events.

    A failure is one ``failed`` event naming no server path (``root``: the index folder).
    """
    events: queue.Queue[Any] = queue.Queue()

    def work() -> None:
        try:
            run(lambda kind, data: events.put((kind, data)))
        except Exception as err:  # bad input, a damaged index, the LLM server failed mid-run
            events.put(("failed", public_reply(err, root)))
        finally:
            events.put(DONE)

    async def body() -> AsyncIterator[str]:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: anyio.to_thread.run_sync(work, limiter=limiter))
            while (item := await anyio.to_thread.run_sync(events.get)) is not DONE:
                kind, data = item
                yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"cache-control": "no-store"})  # fmt: skip


def endpoint(ui: Any) -> Callable[[Request], Any]:
    """Return the ``/api/ask`` route of a UIApp (its token check, live index and workers)."""

    async def ask(request: Request) -> Any:
        if not ui.allowed(request):
            return ui.refused()

        def run(send: Send) -> None:
            with ui.live.reading() as index:
                answer(index, request.query_params, send)

        return stream(run, ui.workers, ui.live.directory)

    return ask
