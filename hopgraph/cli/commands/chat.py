"""`hopgraph chat`: a terminal chat over one index, with history kept per thread."""

from __future__ import annotations

import argparse
import textwrap
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hopgraph.cli.options import (
    index_option,
    llm_option,
    method_option,
    passages,
    preset_option,
    wait_option,
)
from hopgraph.core.errors import HopgraphError

if TYPE_CHECKING:  # imported when the chat runs, not when the CLI's parser is built
    from hopgraph.graph_store import Index, LiveIndex

HELP = """commands:
  /method NAME   answer with another method (gear, rgnn_ret, tog2 or any retriever)
  /sources       the passages the last answer rests on
  /trace         the last answer's run as a tree
  /new           start a new thread (forget the conversation)
  /help          this list
  /quit          leave (Ctrl-D too)"""


class ChatSession:
    """The state of the terminal: index, model, checkpointer, thread, method, last answer."""

    def __init__(
        self,
        live: LiveIndex,
        chat: Any,
        saver: Any,
        thread: str,
        method: str,
        k: int,
        preset: str = "tuned",
    ):
        from hopgraph.agents.chat.graph import builder

        self.live, self.chat, self.k = live, chat, k
        self.graph = builder.compile(checkpointer=saver, name="hopgraph-chat")
        self.thread, self.method, self.preset = thread, method, preset
        self.sources: list[dict[str, Any]] = []
        self.trace_id: str | None = None

    @property
    def index(self) -> Index:
        """Return the newest committed generation: a write while chatting is seen next turn."""
        return self.live.current()

    def config(self) -> dict[str, Any]:
        """Return the LangGraph config of the current thread."""
        return {"configurable": {"thread_id": self.thread}}

    def history(self) -> int:
        """Return how many messages the current thread holds."""
        return len(self.graph.get_state(self.config()).values.get("messages", []))

    def ask(self, text: str) -> None:
        """Answer one message: with the LLM, or with evidence passages when there is none."""
        if self.chat is None:
            self._evidence_only(text)
            return
        from langchain_core.messages import HumanMessage

        from hopgraph.agents.chat.context import Context

        context = Context(
            index=self.index,
            chat=self.chat,
            method=self.method,
            k=self.k,
            preset=self.preset,
            on_update=_show_step,
        )
        for update in self.graph.stream(
            {"messages": [HumanMessage(text)]}, self.config(), context=context,
            stream_mode="updates",
        ):  # fmt: skip
            standalone = (update.get("condense") or {}).get("standalone")
            if standalone and standalone != text:
                print(f"  · as a standalone question: {standalone}", flush=True)
        values = self.graph.get_state(self.config()).values
        self.sources, self.trace_id = values.get("sources", []), values.get("trace_id")
        print(f"hopgraph> {values['messages'][-1].content}\n", flush=True)

    def _evidence_only(self, text: str) -> None:
        from hopgraph.agents.evidence import answer_alone

        reply = answer_alone(self.index, self.method, text, self.k, self.preset)
        self.sources = reply["evidence"]
        print("hopgraph> the passages' own sentences that answer (no LLM is configured):")
        for sentence in reply["answer"]["sentences"]:
            print(f"  [{sentence['passage']}] {sentence['text']}")
        print(f"evidence passages ({reply['method']}; no LLM, so no written answer):")
        _print_sources(self.sources)
        print()

    def command(self, line: str) -> bool:
        """Run a /command; return False to leave."""
        from hopgraph.agents.registry import agent_methods

        name, _, arg = line[1:].partition(" ")
        if name in ("quit", "exit", "q"):
            return False
        if name == "help":
            print(HELP)
        elif name == "new":
            self.thread, self.sources, self.trace_id = uuid.uuid4().hex[:12], [], None
            print(f"new thread {self.thread}")
        elif name == "method" and arg.strip() in agent_methods():
            self.method = arg.strip()
            print(f"method: {self.method}")
        elif name == "method":
            print(f"unknown method {arg.strip()!r}; choose one of: {', '.join(agent_methods())}")
        elif name == "sources" and self.sources:
            _print_sources(self.sources)
        elif name == "sources":
            print("no answer yet")
        elif name == "trace":
            self._show_trace()
        else:
            print(f"unknown command /{name}; /help lists them")
        return True

    def _show_trace(self) -> None:
        from hopgraph.core.traces import default_store, load_trace, render_tree

        if self.trace_id is None:
            print("no traced answer yet")
            return
        print(render_tree(load_trace(default_store(), self.trace_id)))


def _show_step(node: str, update: dict[str, Any]) -> None:
    for line in update.get("steps", []):
        print(f"  · {textwrap.shorten(line, 110, placeholder=' …')}", flush=True)


def _print_sources(sources: list[dict[str, Any]]) -> None:
    for n, s in enumerate(sources, start=1):
        snippet = textwrap.shorten(s["text"], 120, placeholder=" …")
        print(f"  [{n}] {s['title']} ({s['id']}): {snippet}")


def chat(args: argparse.Namespace) -> None:
    """Run the chat loop until /quit or end of input."""
    from hopgraph.agents.run import checkpointer
    from hopgraph.cli.options import index_dir
    from hopgraph.core.llm import choose_chat, describe
    from hopgraph.core.settings import cache_dir
    from hopgraph.graph_store import LiveIndex

    model = choose_chat(args.llm)
    if model is None:
        print("no LLM is configured, so answers are evidence passages only (--llm none, or "
              "auto with no HOPGRAPH_LLM_* set).\n  hint: --llm local answers offline with a "
              "small model; README, Configuration, points --llm at a server")  # fmt: skip
    else:
        print(f"answers are written by {describe(model)}")
    store = args.checkpoints or cache_dir() / "chat.sqlite"
    with LiveIndex(index_dir(args)) as live, checkpointer(store) as saver:
        session = ChatSession(live, model, saver, args.thread or uuid.uuid4().hex[:12],
                              args.method, args.k, args.preset)  # fmt: skip
        earlier = session.history()
        resumed = f", resuming {earlier} messages" if earlier else ""
        print(f"hopgraph chat: method {session.method}, thread {session.thread}{resumed}. "
              "/help for commands.", flush=True)  # fmt: skip
        while True:
            try:
                line = input("you> ").strip()
            except EOFError:
                print()
                break
            if not line:
                continue
            if line.startswith("/"):
                if not session.command(line):
                    break
                continue
            try:
                session.ask(line)
            except HopgraphError as err:
                print(f"error: {err}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `hopgraph chat` to the CLI."""
    p = sub.add_parser(
        "chat",
        help="chat with the corpus in the terminal (history per thread)",
        description="Ask questions in turn; follow-ups are rewritten into standalone questions "
        "from the conversation before retrieval, and each answer cites its passages. History is "
        "kept per thread in SQLite: --thread resumes one. Without an LLM, every question is "
        "answered with evidence passages only. Type /help inside for the commands.",
    )
    index_option(p)
    wait_option(p)
    method_option(p)
    p.add_argument("-k", type=passages, default=5, help="passages per answer (default 5)")
    preset_option(p)
    llm_option(p)
    p.add_argument("--thread", metavar="ID", help="resume this conversation")
    p.add_argument(
        "--checkpoints", type=Path, metavar="FILE",
        help="SQLite file of chat threads (default $HOPGRAPH_CACHE/chat.sqlite)",
    )  # fmt: skip
    p.set_defaults(func=chat)
