"""The query commands: retrieve, explain, info and config show."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hopgraph.cli.formatting import format_hits
from hopgraph.cli.options import index_dir, write_output
from hopgraph.core.errors import InputError
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import WhereValue, parse_cli
from hopgraph.tools import RETRIEVERS, make_retriever
from hopgraph.tools.shared.expand import Expansion, expand_hits

if TYPE_CHECKING:  # the write path (loaders, parsers, graph building) is imported by writes
    pass


def retrieve(args: argparse.Namespace) -> None:
    """Print the top-k passages for a query."""
    where = where_of(args.where)
    expansion = Expansion.parse(args.expand) if args.expand else None
    with Index.open(index_dir(args)) as idx:
        retriever = make_retriever(args.method, idx, preset=args.preset)
        hits = retriever.retrieve(args.query, args.k, where)
        if expansion is not None:
            hits = expand_hits(idx, hits, expansion)
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], indent=2, ensure_ascii=False))
    else:
        print(format_hits(hits) if hits else "no passages matched")


def where_of(options: Sequence[str] | None) -> dict[str, WhereValue] | None:
    """Parse ``--where`` options into a filter (``None`` when there are none)."""
    return parse_cli(options)


def config_show(args: argparse.Namespace) -> None:
    """Print the effective settings and where each came from."""
    from hopgraph.core.settings import describe_settings, settings_file

    rows = describe_settings(index=args.index)
    if args.json:
        print(json.dumps({n: {"value": v, "from": w} for n, v, w in rows}, indent=2))
        return
    file = settings_file({"index": args.index} if args.index else None)
    print(f"settings file: {file or 'none'}")
    width = max(len(n) for n, _, _ in rows)
    for name, value, where in rows:
        print(f"{name:<{width}}  {value or '-':<40}  {where}")


def info(args: argparse.Namespace) -> None:
    """Show an index's manifest."""
    with Index.open(index_dir(args)) as idx:
        manifest = idx.manifest
        if args.json:
            print(manifest.model_dump_json(indent=2))
            return
        s = manifest.settings
        print(f"index      {idx.directory}")
        print(f"documents  {manifest.counts['documents']}   chunks {manifest.counts['chunks']}")
        dims = manifest.embedder["dimension"]
        print(f"model      {s.model} ({dims}-d), chunks of ~{s.chunk_tokens} tokens")
        print(f"vectors    {idx.location.describe()}")
        print(
            f"built      {manifest.created_at}, updated {manifest.updated_at} "
            f"(generation {manifest.generation}, format {manifest.format_version})"
        )
        print(f"methods    {', '.join(RETRIEVERS)}")


def explain(args: argparse.Namespace) -> None:
    """Draw the evidence for a question as an HTML page."""
    from hopgraph.explain import explain as find_evidence
    from hopgraph.explain import render_page

    out = Path(args.out)
    if out.is_dir() or not out.parent.is_dir():  # checked before any work is done
        raise InputError(
            f"--out {out}: " + ("is a folder" if out.is_dir() else f"{out.parent} does not exist"),
            "give a file path in an existing folder, e.g. --out evidence.html",
        )
    gold = {g.strip() for g in (args.gold or "").split(",") if g.strip()}
    with Index.open(index_dir(args)) as idx:
        graph = find_evidence(idx, args.question, args.method, args.k, gold, args.preset)
    write_output(out, render_page(graph))
    print(
        f"wrote {out}: {len(graph.passages)} passages, {len(graph.entities)} entities, "
        f"{len(graph.edges)} edges"
    )
