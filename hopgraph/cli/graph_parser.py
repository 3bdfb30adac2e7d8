"""The ``hopgraph graph`` group's parser: build, triples, stats, export, coverage."""

from __future__ import annotations

import argparse

from .options import (
    build_options,
    cluster_options,
    device_options,
    index_option,
    lazy,
    output_file,
    positive,
    quiet_option,
)


def _graph_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--extractor",
        choices=["offline", "llm"],
        help="who reads entities, keywords and triples (default offline: no LLM)",
    )
    parser.add_argument(
        "--max-df",
        type=positive,
        metavar="N",
        help="entities or keywords in more than N chunks make no edges (default 30)",
    )
    parser.add_argument(
        "--keyword-min-shared",
        type=positive,
        metavar="N",
        help="shared keywords for a keyword edge (default 2)",
    )
    parser.add_argument(
        "--semantic-k",
        type=int,
        metavar="K",
        help="semantic neighbours per chunk (default 5; 0 = none)",
    )
    parser.add_argument(
        "--semantic-min-sim",
        type=float,
        metavar="S",
        help="least cosine similarity for a semantic edge (default 0.5)",
    )
    parser.add_argument(
        "--semantic-search",
        choices=["auto", "exact", "ann"],
        help="how semantic neighbours are found: exact all-pairs, ann (an NN-descent "
        "k-nearest-neighbour graph, recall@10 about 0.99; exact below 1,000 chunks) or auto "
        "(default: ann from 20,000 chunks on)",
    )
    parser.add_argument(
        "--llm-prompts",
        metavar="LIST",
        help="with --extractor llm: prompt sets among gear (entities + triples), iier "
        "(keywords), gnn_ret (entity links); default gear,iier",
    )
    parser.add_argument(
        "--triples",
        action="store_true",
        help="embed the triples now (only the GEAR methods search them; without this, the first "
        "of them to run embeds them once, and later writes keep them current)",
    )


def add_graph_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``hopgraph graph`` and its subcommands to the CLI's subparsers."""
    p = sub.add_parser(
        "graph",
        help="build and inspect the passage graph and knowledge graph",
        description="The passage graph (structural, entity, keyword and semantic "
        "edges between chunks) and the knowledge graph (entities and triples, each "
        "linked to its chunk).",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = actions.add_parser(
        "build",
        help="extract and build both graphs (atomic)",
        description="Extract entities, keywords and triples from every chunk "
        "(offline by default; --extractor llm uses the configured LLM and a "
        "disk cache) and build both graphs; --triples embeds the triples too.",
    )
    index_option(b)
    _graph_options(b)
    device_options(b)
    cluster_options(b, "graphs")
    quiet_option(b)
    b.set_defaults(func=lazy("cli.commands.graphs:build"))
    t = actions.add_parser(
        "triples",
        help="embed the knowledge graph's triples (for the GEAR methods) as one write",
        description="Embed the triples of the index's knowledge graph, so that the GEAR "
        "methods (sync_ge, gear) can search them; the first of them to run does this by "
        "itself. Later writes keep them current. Nothing to do when they are there.",
    )
    index_option(t)
    quiet_option(t)
    t.set_defaults(func=lazy("cli.commands.graphs:triples"))
    s = actions.add_parser("stats", help="counts by node and edge type, degree distributions")
    index_option(s)
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=lazy("cli.commands.graphs:stats"))
    e = actions.add_parser("export", help="write a graph as GraphML (Gephi, networkx)")
    index_option(e)
    e.add_argument("--format", choices=["graphml"], default="graphml", help="file format")
    e.add_argument(
        "--graph",
        choices=["passages", "knowledge"],
        default="passages",
        help="which graph (default passages)",
    )
    e.add_argument(
        "--out", required=True, type=output_file, metavar="FILE", help="where to write it"
    )
    e.set_defaults(func=lazy("cli.commands.graphs:export"))
    c = actions.add_parser(
        "coverage",
        help="share of questions whose gold passages the graphs connect within N hops",
        description="Bridge coverage on a benchmark split: builds (and caches) "
        "the dataset's index and graphs like `hopgraph eval`.",
    )
    c.add_argument("--data", required=True, metavar="DIR", help="dataset folder")
    c.add_argument("--split", default="dev", help="question file (default dev)")
    c.add_argument("--limit", type=positive, metavar="N", help="first N questions only")
    c.add_argument("--hops", type=positive, default=2, help="hops allowed (default 2)")
    c.add_argument("--json", action="store_true", help="print JSON")
    c.add_argument("--rebuild", action="store_true", help="rebuild the graphs even if current")
    index_option(c)
    build_options(c)
    _graph_options(c)
    quiet_option(c)
    c.set_defaults(func=lazy("cli.commands.graphs:coverage"))
