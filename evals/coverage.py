"""Bridge coverage: can a graph walk from one gold passage of a question to the others?

For each question with two or more gold documents, two gold documents are *bridged* when some
chunk of one reaches some chunk of the other within ``hops`` steps. A question is covered when its
gold documents form one bridged group. This bounds what a graph retriever seeded at one gold
passage can reach; mean degree is reported beside it, since a complete graph would cover all.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.passage_edges import co_occurrence
from hopgraph.graph_store.graphs.passage_graph import EDGE_TYPES

from .datasets import Question

# Questions that compare two things ("Who was born first, A or B?") have no bridge to find; the
# dataset types say so where they exist, and this pattern approximates it where they do not.
COMPARISON = re.compile(r"\bor\b|\bboth\b|\bsame\b", re.IGNORECASE)


def covered(adjacency: sp.csr_matrix, gold_rows: list[list[int]], hops: int = 2) -> bool:
    """Return whether the gold groups (rows of each gold document) are connected within ``hops``."""
    rows = sorted({r for group in gold_rows for r in group})
    reach = adjacency[rows]
    frontier = reach
    for _ in range(hops - 1):
        frontier = frontier @ adjacency
        reach = reach + frontier
    where = {r: i for i, r in enumerate(rows)}
    # groups a and b join when some row of a reaches some row of b; covered: one component
    n = len(gold_rows)
    joined = np.zeros((n, n), dtype=bool)
    for a, group_a in enumerate(gold_rows):
        block = reach[[where[r] for r in group_a]]
        for b in range(a + 1, n):
            joined[a, b] = block[:, gold_rows[b]].nnz > 0
    components, _ = connected_components(sp.csr_matrix(joined), directed=False)
    return components == 1


def coverage(
    adjacency: sp.csr_matrix,
    rows_of_doc: dict[str, list[int]],
    questions: Sequence[Question],
    hops: int = 2,
) -> tuple[float, int]:
    """Return (% of multi-document questions covered, questions counted)."""
    counted = hits = 0
    for q in questions:
        groups = [rows_of_doc[d] for d in dict.fromkeys(q.gold_ids) if d in rows_of_doc]
        if len(groups) < 2:
            continue
        counted += 1
        hits += covered(adjacency, groups, hops)
    return (100.0 * hits / counted if counted else 0.0), counted


def bridge_coverage(index: Index, questions: Sequence[Question], hops: int = 2) -> dict:
    """Measure coverage and mean degree for the passage graph (per edge set) and the KG."""
    graph = index.passage_graph
    rows_of_doc: dict[str, list[int]] = defaultdict(list)
    for row, chunk_id in enumerate(graph.ids):
        rows_of_doc[index.chunk(chunk_id).doc_id].append(row)
    edge_sets = {
        "all": EDGE_TYPES,
        "structural+link": ("structural", "link"),
        "structural+entity": ("structural", "entity"),
        "structural+keyword": ("structural", "keyword"),
        "structural+semantic": ("structural", "semantic"),
    }
    report: dict = {"hops": hops, "passage_graph": {}}
    for name, types in edge_sets.items():
        adjacency = graph.adjacency(types, undirected=True)
        share, counted = coverage(adjacency, rows_of_doc, questions, hops)
        report["passage_graph"][name] = {
            "coverage": share,
            "mean_degree": float(np.diff(adjacency.indptr).mean()),
        }
    report["questions"] = counted
    all_edges = graph.adjacency(undirected=True)
    by_type: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_type[q.type or "untyped"].append(q)
    report["by_type"] = {
        kind: coverage(all_edges, rows_of_doc, group, hops)[0] for kind, group in by_type.items()
    }
    by_shape: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_shape["comparison" if COMPARISON.search(q.question) else "chain"].append(q)
    report["by_shape"] = {
        shape: coverage(all_edges, rows_of_doc, group, hops)[0]
        for shape, group in sorted(by_shape.items())
    }
    knowledge = index.knowledge_graph
    if knowledge.chunk_ids != graph.ids:
        raise IndexStateError(
            "the passage and knowledge graphs are out of step",
            "rebuild them with `hopgraph graph build`",
        )
    max_df = index.manifest.graph["settings"]["max_df"]
    report["knowledge_graph"] = {}
    for name, cap in (("hub-capped", max_df), ("all entities", None)):
        shared = entity_sharing(knowledge.chunk_entity, cap)
        share, _ = coverage(shared, rows_of_doc, questions, hops)
        report["knowledge_graph"][name] = {
            "coverage": share,
            "mean_degree": float(np.diff(shared.indptr).mean()),
        }
    return report


def entity_sharing(chunk_entity: sp.csr_matrix, max_df: int | None) -> sp.csr_matrix:
    """Return chunk-to-chunk adjacency through shared entities (one hop = one shared entity)."""
    shared = co_occurrence(chunk_entity, 1, max_df)
    shared.data[:] = 1.0
    return shared
