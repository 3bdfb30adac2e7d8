"""Every generated table of the README and the docs: where each lives and what renders it.

    python -m hopgraph.evals.rendering.docs            # print them
    python -m hopgraph.evals.rendering.docs --write    # put them between their markers
    python -m hopgraph.evals.rendering.docs --from runs/quality --write   # keep new eval reports
    first

A table lives between ``<!-- table:NAME:start -->`` and ``<!-- table:NAME:end -->`` in its
document, and is rendered from reports kept under evals/results/ (evals/rendering/quality.py,
evals/bench/tables.py, and the studies' own modules), never typed by hand: the unit suite renders
each and fails when a document's table differs (tests/unit/evals/test_generated_tables.py).
docs/scale-measurements.md's tables come from evals/rendering/cost_model.py, checked the same way.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from hopgraph.evals import extractive
from hopgraph.evals.bench import tables as bench
from hopgraph.evals.doc_markers import between, replaced
from hopgraph.evals.rendering import guard as guard_table
from hopgraph.evals.rendering import quality
from hopgraph.evals.studies import (
    guard_question_vectors,
    guard_when,
    list_rerank,
    more_hops,
    naive_ge_page_step,
)

ROOT = Path(__file__).resolve().parents[2]

TABLES: dict[str, tuple[Callable[[], str], str]] = {
    "quality": (quality.quality, "docs/evaluation.md"),
    "presets": (quality.presets, "docs/methods.md"),
    "headline": (quality.headline, "README.md"),
    "embedders": (quality.embedders, "docs/evaluation.md"),
    "startup": (bench.startup, "docs/benchmarks.md"),
    "latency": (bench.latency, "docs/benchmarks.md"),
    "latency-e2e": (bench.latency_end_to_end, "docs/benchmarks.md"),
    "graph-build": (bench.graph_build, "docs/benchmarks.md"),
    "index-build": (bench.index_build, "docs/benchmarks.md"),
    "writes": (bench.writes, "docs/benchmarks.md"),
    "graph-stats": (bench.graph_stats, "docs/graphs.md"),
    "docsets": (quality.docsets, "docs/evaluation.md"),
    "extractive": (extractive.markdown, "docs/evaluation.md"),
    "rerank": (quality.rerank, "docs/evaluation.md"),
    "grag-paths": (quality.grag_paths, "docs/methods.md"),
    "iier-scorer": (quality.iier_scorer, "docs/evaluation.md"),
    "oracle": (quality.oracle, "docs/agents.md"),
    "local-model": (quality.local_model, "docs/agents.md"),
    "coverage": (quality.coverage, "docs/graphs.md"),
    "guard": (guard_table.kept, "docs/methods.md"),
    "guard-margin": (guard_when.margin_table, "docs/methods.md"),
    "guard-selective": (guard_when.selective_table, "docs/methods.md"),
    "guard-classifier": (guard_question_vectors.table, "docs/methods.md"),
    "gnn-variants": (more_hops.table, "docs/methods.md"),
    "list-rerank": (list_rerank.table, "docs/methods.md"),
    "naive-ge-fusion": (naive_ge_page_step.table, "docs/methods.md"),
}


def markers(name: str) -> tuple[str, str]:
    """Return a table's start and end markers in its document (the markers stay)."""
    return f"<!-- table:{name}:start -->", f"<!-- table:{name}:end -->"


def block(document: str, name: str) -> str | None:
    """Return the table held between a document's markers, or None without them."""
    return between(document, *markers(name))


def write(root: Path = ROOT) -> None:
    """Put every table between its markers in its document (under ``root``).

    Every table is rendered, and every document's markers found, before a file is written: a
    missing report or marker leaves every document as it was.
    """
    texts: dict[str, str] = {}
    for name, (render, document) in TABLES.items():
        text = texts.get(document) or (root / document).read_text(encoding="utf-8")
        try:
            texts[document] = replaced(text, *markers(name), render())
        except ValueError as err:
            raise SystemExit(f"{root / document}: {err}") from err
    for document, text in texts.items():
        (root / document).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Print the tables, or keep runs' reports and write the tables into the documents."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.rendering.docs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--from", dest="runs", type=Path, help="keep these eval runs' reports first (DIR/DATASET)"
    )
    parser.add_argument("--write", action="store_true", help="write the documents' tables")
    args = parser.parse_args(argv)
    if args.runs:
        quality.keep(args.runs)
    if args.write:
        write()
    for name, (render, document) in TABLES.items():
        print(f"{name} ({document}):\n{render()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
