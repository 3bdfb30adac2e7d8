"""What `hopgraph ui`'s API answers: searches, evidence graphs and the index, as JSON-ready dicts.

Inputs are checked as the CLI checks them (the same messages): an empty question, a method the
index does not run, a k outside 1–50, a malformed ``where`` filter or ``expand``. Nothing here
names a path of the server: the index is named by its folder's name, and `check`'s findings
are given relative to the index folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hopgraph.core.errors import UnknownMethodError, without_paths
from hopgraph.core.network import checked_k, checked_question
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import parse_cli
from hopgraph.graph_store.graphs.passage_graph import EDGE_TYPES
from hopgraph.graph_store.stores.doc_table import DocumentTable
from hopgraph.tools import Hit

from .formatting import index_tables, node_label, passage_parts

MAX_DOCUMENTS = 500
"""Documents listed on the index view (the count says how many there are)."""


def _question(params: Mapping[str, str]) -> str:
    return checked_question(params.get("q", ""))


def _method(params: Mapping[str, str], served: dict[str, Any]) -> str:
    method = params.get("method", "gnn_ret")
    names = [m["name"] for m in served["methods"]]
    if method not in names:
        raise UnknownMethodError(
            f"unknown method {method!r} for this index", f"choose one of: {', '.join(names)}"
        )
    return method


def parse_k(params: Mapping[str, str]) -> int:
    """Return the ``k`` asked for (default 5), parsed as the CLI's ``-k``; InputError past 50."""
    return checked_k(params.get("k", "5"))


def _hits(index: Index, params: Any, served: dict[str, Any]) -> tuple[str, str, list[Hit]]:
    """Run the search the parameters ask for: (question, method, hits)."""
    from hopgraph.tools import make_retriever
    from hopgraph.tools.shared.expand import Expansion, expand_hits

    question, method, k = _question(params), _method(params, served), parse_k(params)
    lines = [w for w in params.getlist("where") for w in w.splitlines() if w.strip()]
    where = parse_cli(lines)
    expand = params.get("expand", "").strip()
    expansion = Expansion.parse(expand) if expand else None
    hits = make_retriever(method, index).retrieve(question, k, where)
    if expansion is not None:
        hits = expand_hits(index, hits, expansion)
    return question, method, hits


def why(hit: Hit) -> str:
    """Say in words what put a hit in the list: "message from a top-K neighbour: d1#0 over link"."""
    last = hit.provenance[-1] if hit.provenance else None
    if last is None:
        return ""
    text = f"{last.method}: {last.step}"
    if not last.via:
        return text
    rest = last.via[1:]
    if all(v in EDGE_TYPES for v in rest):  # GNN-Ret: the sender and the edge types
        return text + f" (pulled in by {last.via[0]}" + (f" over {', '.join(rest)})" if rest
                                                          else ")")  # fmt: skip
    return text + f" (chain {' → '.join(last.via)})"  # IIER: the chain that reached it


def run_search(index: Index, params: Any, served: dict[str, Any]) -> dict[str, Any]:
    """Return the ranked passages for a search, each with its section and provenance."""
    question, method, hits = _hits(index, params, served)
    return {
        "question": question,
        "method": method,
        "hits": [
            {
                "rank": rank,
                "id": h.id,
                "doc_id": h.doc_id,
                "title": h.title,
                "section": str(h.metadata.get("section", "")),
                "text": h.text,
                "parts": passage_parts(h.text),
                "score": round(h.score, 4),
                "why": why(h),
                "metadata": dict(h.metadata),
            }
            for rank, h in enumerate(hits, start=1)
        ],
    }


def run_graph(index: Index, params: Any, served: dict[str, Any]) -> dict[str, Any]:
    """Return a search's evidence graph: its nodes and edges, and the SVG that draws them."""
    from hopgraph.explain import Passage, build_evidence_graph, legend_html, render_svg

    question, method, hits = _hits(index, params, served)
    gold = {g.strip() for g in params.get("gold", "").split(",") if g.strip()}
    # a passage is drawn under its section's name: a manual's passages share one title
    labels = {h.id: node_label(h.title, str(h.metadata.get("section", ""))) for h in hits}
    passages = [
        Passage(h.id, h.doc_id, labels[h.id], h.text, rank, h.provenance[-1].via if h.provenance
                else (), h.provenance[-1].step if h.provenance else "")
        for rank, h in enumerate(hits, start=1)
    ]  # fmt: skip
    graph = build_evidence_graph(index, question, method, passages, gold)
    return {
        "question": question,
        "method": method,
        "nodes": [{"id": h.id, "kind": "passage", "rank": rank, "title": h.title,
                   "label": labels[h.id], "gold": h.doc_id in gold}
                  for rank, h in enumerate(hits, start=1)]
        + [{"id": f"entity:{e}", "kind": "entity", "title": e} for e in graph.entities],
        "edges": [{"source": a, "target": b, "kind": kind} for a, b, kind in graph.edges],
        # laid out for the panel beside the list (about 500 px): its labels stay readable
        "svg": render_svg(graph, 600, 520),
        "legend": legend_html(),
    }  # fmt: skip


def describe_index(index: Index) -> dict[str, Any]:
    """Describe the index: name, generation, counts, graphs, documents and `check`'s findings."""
    from hopgraph.graph_store.index.check import check_index

    manifest = index.manifest
    # the document table, read for this answer and let go (no pass over every chunk)
    table = DocumentTable.read(index.directory, manifest, index.chunks.values())
    listed = table.records(table.ids[:MAX_DOCUMENTS])
    shown = [{"id": r.id, "title": r.title, "chunks": r.chunks} for r in listed]
    root = index.directory
    problems = [
        {"where": without_paths(p.where, root), "what": without_paths(p.what, root),
         "fix": without_paths(p.fix, root)}
        for p in check_index(root)
    ]  # fmt: skip
    return {
        "index": index.directory.name,
        "generation": manifest.generation,
        "model": manifest.settings.model,
        "counts": manifest.counts,
        "graphs": manifest.graph["counts"] if manifest.graph else None,
        "tables": index_tables(index),
        "check": {"sound": not problems, "problems": problems},
        "documents": shown,
        "documents_total": len(table.ids),
    }
