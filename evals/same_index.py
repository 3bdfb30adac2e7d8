"""Tell whether an index built on a cluster answers as the one built in one process.

    python -m hopgraph.evals.same_index ONE CLUSTER --data ../shared/data/musique --split dev

Both folders hold an index of the same corpus, graphs built. Printed (and exit 1 unless all
hold): whether the chunks are the same in the same order; whether the extractions are the
same, and the passage graph's edges of every type but the semantic one; the recall of the
cluster index's semantic-neighbour lists against the other's (a row's list compared as a set,
-1 padding left out); per question of the split, whether dense, hybrid and gnn_ret return
the same top 10; and the largest difference between BM25's top-10 scores. ``hopgraph eval``
then compares the scores over every method (``evals.same_scores``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hopgraph.evals.datasets import load_questions
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours
from hopgraph.tools import make_retriever

METHODS = ("dense", "hybrid", "gnn_ret")
NEIGHBOUR_RECALL = 0.99
BM25_TOLERANCE = 1e-6


def neighbour_recall(one: Index, other: Index) -> float:
    """Return the share of ``one``'s semantic neighbours that ``other``'s lists hold too."""
    mine = Neighbours.load(one.manifest.path(one.directory, "graph") / NEIGHBOURS_FILE).rows
    theirs = Neighbours.load(other.manifest.path(other.directory, "graph") / NEIGHBOURS_FILE).rows
    found = total = 0
    for a, b in zip(mine, theirs, strict=True):
        wanted = set(a[a >= 0].tolist())
        found += len(wanted & set(b[b >= 0].tolist()))
        total += len(wanted)
    return found / max(total, 1)


def same_edges(one: Index, other: Index) -> bool:
    """Tell whether both passage graphs have the same edges of every type but the semantic."""
    theirs = other.passage_graph.edges
    return all(
        kind == "semantic" or (edges != theirs[kind]).nnz == 0
        for kind, edges in one.passage_graph.edges.items()
    )


def compare(one_dir: Path, cluster_dir: Path, data: Path, split: str) -> dict:
    """Return the figures of the module doc."""
    questions = [q.question for q in load_questions(data, split)]
    with Index.open(one_dir) as one, Index.open(cluster_dir) as cluster:
        out: dict = {
            "same_chunks": list(one.chunks.values()) == list(cluster.chunks.values()),
            "same_extractions": one.extractions == cluster.extractions,
            "same_edges": same_edges(one, cluster),
            "neighbour_recall": neighbour_recall(one, cluster),
            "questions": len(questions),
        }
        for method in METHODS:
            here, there = make_retriever(method, one), make_retriever(method, cluster)
            same = [
                [h.id for h in here.retrieve(q, 10)] == [h.id for h in there.retrieve(q, 10)]
                for q in questions
            ]
            out[f"{method}_same_top10"] = float(np.mean(same))
        here, there = make_retriever("bm25", one), make_retriever("bm25", cluster)
        out["bm25_max_score_diff"] = max(
            max((abs(a.score - b.score) for a, b in zip(x, y, strict=False)), default=0.0)
            for x, y in ((here.retrieve(q, 10), there.retrieve(q, 10)) for q in questions)
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """Compare the two indexes; exit 1 unless they answer alike."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("one", type=Path, help="the index built in one process")
    parser.add_argument("cluster", type=Path, help="the index built on a cluster")
    parser.add_argument("--data", type=Path, required=True, help="the dataset folder")
    parser.add_argument("--split", default="dev")
    args = parser.parse_args(argv)
    found = compare(args.one, args.cluster, args.data, args.split)
    print(json.dumps(found))
    alike = (
        found["same_chunks"]
        and found["same_extractions"]
        and found["same_edges"]
        and found["neighbour_recall"] >= NEIGHBOUR_RECALL
        and all(found[f"{m}_same_top10"] == 1.0 for m in METHODS)
        and found["bm25_max_score_diff"] <= BM25_TOLERANCE
    )
    return 0 if alike else 1


if __name__ == "__main__":
    raise SystemExit(main())
