"""The local trace store: every agent run recorded as a tree of spans in SQLite.

A :class:`TraceRecorder` is a LangChain callback handler: LangGraph reports the graph, each node,
each LLM call and each tool call to it as nested runs, and it writes one span per run (kind,
name, inputs, outputs, tokens, seconds, error) as each one ends, so a crashed run leaves the spans
it finished. The root span's id is the trace id. LangSmith tracing is separate and standard: it
is on when ``LANGSMITH_TRACING=true`` and ``LANGSMITH_API_KEY`` are set, and off otherwise.
"""

from __future__ import annotations

import html
import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from .errors import InputError
from .settings import cache_dir

FIELD_LIMIT = 4000  # characters of inputs / outputs kept per span

SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    trace_id TEXT NOT NULL, span_id TEXT PRIMARY KEY, parent_id TEXT, kind TEXT NOT NULL,
    name TEXT NOT NULL, started REAL NOT NULL, ended REAL, inputs TEXT, outputs TEXT,
    error TEXT, prompt_tokens INTEGER DEFAULT 0, completion_tokens INTEGER DEFAULT 0
);
CREATE INDEX IF NOT EXISTS spans_by_trace ON spans (trace_id, started);
"""


def default_store() -> Path:
    """Return where traces are kept: ``$HOPGRAPH_CACHE/traces.sqlite``."""
    return cache_dir() / "traces.sqlite"


def _text(value: Any) -> str:
    """Serialise a run's inputs or outputs for the store, cut to ``FIELD_LIMIT``."""
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= FIELD_LIMIT else text[:FIELD_LIMIT] + " …"


class TraceRecorder(BaseCallbackHandler):
    """Record every run below the first one it sees as one trace in the store."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_store()
        self.trace_id: str | None = None
        self._open: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- starts --------------------------------------------------------------------------
    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kw: Any) -> None:
        """Open a span for the graph, one of its nodes, or a router a node ran."""
        parent = kw.get("parent_run_id")
        with self._lock:
            parent_kind = self._open.get(str(parent), {}).get("kind")
            first = self.trace_id is None
        # The first run is the root, even inside a caller's run (a chat turn, a tool call).
        kind = "graph" if first else "route" if parent_kind == "node" else "node"
        self._start(run_id, None if first else parent, kind, kw.get("name") or "chain", inputs)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kw: Any
    ) -> None:
        """Open a span for an LLM call; the prompt is its input."""
        name = (serialized or {}).get("name") or "chat model"
        prompts = [[m.content for m in batch] for batch in messages]
        self._start(run_id, kw.get("parent_run_id"), "llm", name, prompts)

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kw: Any) -> None:
        """Open a span for a tool call."""
        name = (serialized or {}).get("name") or "tool"
        self._start(run_id, kw.get("parent_run_id"), "tool", name, kw.get("inputs") or input_str)

    # -- ends ----------------------------------------------------------------------------
    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kw: Any) -> None:
        """Close a graph or node span with its outputs."""
        self._end(run_id, outputs=outputs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kw: Any) -> None:
        """Close an LLM span with the reply and the server's token counts."""
        texts, prompt_tokens, completion_tokens = [], 0, 0
        for generation in (g for batch in response.generations for g in batch):
            texts.append(generation.text)
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
            prompt_tokens += int(usage.get("input_tokens", 0))
            completion_tokens += int(usage.get("output_tokens", 0))
        self._end(run_id, outputs=texts, tokens=(prompt_tokens, completion_tokens))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kw: Any) -> None:
        """Close a tool span with its output."""
        self._end(run_id, outputs=getattr(output, "content", output))

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        """Close a span with the error that ended it."""
        self._end(run_id, error=error)

    on_llm_error = on_chain_error
    on_tool_error = on_chain_error

    # -- storage -------------------------------------------------------------------------
    def _start(self, run_id: UUID, parent: UUID | None, kind: str, name: str, inputs: Any) -> None:
        with self._lock:
            if self.trace_id is None:
                self.trace_id = str(run_id)
            self._open[str(run_id)] = {
                "span_id": str(run_id),
                "parent_id": str(parent) if parent else None,
                "kind": kind,
                "name": name,
                "started": time.time(),
                "inputs": _text(inputs),
            }

    def _end(
        self,
        run_id: UUID,
        outputs: Any = None,
        error: BaseException | None = None,
        tokens: tuple[int, int] = (0, 0),
    ) -> None:
        with self._lock:
            span = self._open.pop(str(run_id), None)
            if span is None or self.trace_id is None:
                return
            row = {
                **span,
                "trace_id": self.trace_id,
                "ended": time.time(),
                "outputs": None if error else _text(outputs),
                "error": f"{type(error).__name__}: {error}" if error else None,
                "prompt_tokens": tokens[0],
                "completion_tokens": tokens[1],
            }
            db = self._connection()
            db.execute(
                f"INSERT OR REPLACE INTO spans ({', '.join(row)}) "
                f"VALUES ({', '.join('?' * len(row))})",
                list(row.values()),
            )
            db.commit()  # span by span: a crash keeps what finished

    def close(self) -> None:
        """Close the store's connection (spans are already committed)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.executescript(SCHEMA)
        return self._db


@dataclass
class Span:
    """One recorded run, with its children in start order."""

    span_id: str
    parent_id: str | None
    kind: str
    name: str
    started: float
    ended: float | None
    inputs: str | None
    outputs: str | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    children: list[Span] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        """Return how long the run took (0 for one that never ended)."""
        return (self.ended or self.started) - self.started


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise InputError(f"no traces yet at {path}", "run `hopgraph ask` first")
    return sqlite3.connect(path)


def list_traces(path: Path, limit: int = 20) -> list[dict[str, Any]]:
    """Return the newest traces: id, name, start, seconds, LLM calls, tokens and status."""
    with _connect(path) as db:
        rows = db.execute(
            """SELECT t.trace_id, r.name, r.started, r.ended, r.inputs,
                      SUM(t.kind = 'llm'), SUM(t.prompt_tokens + t.completion_tokens),
                      SUM(t.error IS NOT NULL)
               FROM spans t JOIN spans r ON r.span_id = t.trace_id
               GROUP BY t.trace_id ORDER BY r.started DESC LIMIT ?""",
            (limit,),
        ).fetchall()
    return [
        {
            "trace_id": tid, "name": name, "started": started,
            "seconds": (ended or started) - started, "question": _question(inputs),
            "llm_calls": calls or 0, "tokens": tokens or 0,
            "status": "error" if errors else ("ok" if ended else "unfinished"),
        }
        for tid, name, started, ended, inputs, calls, tokens, errors in rows
    ]  # fmt: skip


def _question(inputs: str | None) -> str:
    try:
        value = json.loads(inputs or "null")
    except json.JSONDecodeError:
        return ""
    return str(value.get("question", "")) if isinstance(value, dict) else ""


def load_trace(path: Path, trace_id: str) -> Span:
    """Return a trace's root span with its tree; ``trace_id`` may be a unique prefix.

    Run ids are time-ordered, so traces made close together share their first characters:
    a prefix must be long enough to name one.
    """
    with _connect(path) as db:
        ids = [r[0] for r in db.execute(
            "SELECT DISTINCT trace_id FROM spans WHERE trace_id LIKE ?", (trace_id + "%",)
        )]  # fmt: skip
        if len(ids) != 1:
            found = "no trace" if not ids else f"{len(ids)} traces"
            raise InputError(
                f"{found} with id {trace_id!r}", "see the ids with `hopgraph trace list`"
            )
        rows = db.execute(
            "SELECT span_id, parent_id, kind, name, started, ended, inputs, outputs, error, "
            "prompt_tokens, completion_tokens FROM spans WHERE trace_id = ? ORDER BY started",
            (ids[0],),
        ).fetchall()
    spans = {r[0]: Span(*r) for r in rows}
    root = spans[ids[0]]
    for span in spans.values():
        if span.parent_id in spans and span is not root:
            spans[span.parent_id].children.append(span)
    return root


def _label(span: Span) -> str:
    tokens = span.prompt_tokens + span.completion_tokens
    extra = f"  {span.prompt_tokens}+{span.completion_tokens} tokens" if tokens else ""
    error = f"  ERROR {span.error}" if span.error else ""
    return f"{span.name} [{span.kind}]  {span.seconds:.2f} s{extra}{error}"


def render_tree(root: Span) -> str:
    """Draw a trace as an indented tree for the terminal."""
    lines = [_label(root)]

    def walk(span: Span, prefix: str) -> None:
        for n, child in enumerate(span.children):
            last = n == len(span.children) - 1
            lines.append(f"{prefix}{'└─ ' if last else '├─ '}{_label(child)}")
            walk(child, prefix + ("   " if last else "│  "))

    walk(root, "")
    return "\n".join(lines)


def render_html(root: Span) -> str:
    """Return a self-contained HTML page: the tree as nested, expandable spans."""

    def block(span: Span) -> str:
        body = "".join(
            f"<h4>{title}</h4><pre>{html.escape(text)}</pre>"
            for title, text in (("inputs", span.inputs), ("outputs", span.outputs),
                                ("error", span.error))
            if text
        )  # fmt: skip
        kids = "".join(block(c) for c in span.children)
        css = "span error" if span.error else f"span {span.kind}"
        return (
            f'<details class="{css}" open><summary>{html.escape(_label(span))}</summary>'
            f"{body}{kids}</details>"
        )

    title = f"hopgraph trace {html.escape(root.span_id)}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 2em; color: #222; }}
details {{ margin: .3em 0 .3em 1.2em; border-left: 3px solid #ccd; padding-left: .6em; }}
details.llm {{ border-color: #7a5; }} details.tool {{ border-color: #c93; }}
details.error {{ border-color: #c33; }} summary {{ cursor: pointer; font-weight: 600; }}
pre {{ background: #f5f5f8; padding: .5em; white-space: pre-wrap; max-height: 20em;
       overflow: auto; }}
</style></head>
<body><h1>hopgraph trace</h1><p>{html.escape(root.span_id)}</p>
{block(root)}
</body></html>
"""
