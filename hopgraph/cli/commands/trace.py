"""`hopgraph trace list | show ID | export ID --html`: read the local trace store."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from hopgraph.cli.options import output_file, positive, write_output

# The trace store's module imports LangChain's callbacks: each command imports it as it runs.


def trace_list(args: argparse.Namespace) -> None:
    """Print the newest traces, one line each."""
    from hopgraph.core.traces import default_store, list_traces

    rows = list_traces(args.store or default_store(), args.limit)
    if not rows:
        print("no traces yet")
    for r in rows:
        when = datetime.fromtimestamp(r["started"]).strftime("%Y-%m-%d %H:%M:%S")
        print(
            f"{r['trace_id']}  {when}  {r['name']:<12} {r['seconds']:6.2f} s  "
            f"{r['llm_calls']:>3} LLM calls {r['tokens']:>7} tokens  {r['status']:<10} "
            f"{r['question'][:60]}"
        )


def trace_show(args: argparse.Namespace) -> None:
    """Print one trace as a tree."""
    from hopgraph.core.traces import default_store, load_trace, render_tree

    print(render_tree(load_trace(args.store or default_store(), args.trace_id)))


def trace_export(args: argparse.Namespace) -> None:
    """Write one trace as a self-contained HTML page."""
    from hopgraph.core.traces import default_store, load_trace, render_html

    root = load_trace(args.store or default_store(), args.trace_id)
    out = args.out or Path(f"trace-{root.span_id}.html")
    write_output(out, render_html(root))
    print(f"wrote {out}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `hopgraph trace` to the CLI."""
    p = sub.add_parser(
        "trace",
        help="read the local trace store: every agent run as a tree",
        description="Every `hopgraph ask` (and every agent run from Python) is recorded as a "
        "tree of spans (graph, nodes, LLM and tool calls, with inputs, outputs, tokens, "
        "seconds and errors) in $HOPGRAPH_CACHE/traces.sqlite. LangSmith tracing is separate: "
        "set LANGSMITH_TRACING=true and LANGSMITH_API_KEY to send runs there too.",
    )
    p.add_argument("--store", type=Path, metavar="FILE", help="trace store (default: the cache)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    ls = actions.add_parser("list", help="the newest traces")
    ls.add_argument("--limit", type=positive, default=20, help="how many (default 20)")
    ls.set_defaults(func=trace_list)
    show = actions.add_parser("show", help="one trace as a tree")
    show.add_argument("trace_id", metavar="ID", help="a trace id or its first characters")
    show.set_defaults(func=trace_show)
    export = actions.add_parser("export", help="one trace as a self-contained HTML page")
    export.add_argument("trace_id", metavar="ID")
    export.add_argument("--html", action="store_true", required=True, help="HTML (the format)")
    export.add_argument("--out", type=output_file, metavar="FILE", help="default trace-ID.html")
    export.set_defaults(func=trace_export)
