"""What the approximate search costs on real questions: IVF against exact, on the eval sets.

``python -m hopgraph.evals.bench.ann_recall --data ../shared/data --out runs/ann-recall.json``
opens each set's cached eval index (MiniLM, built by ``hopgraph eval``) twice: with ``--search
exact`` (every vector scanned) and ``--search ann`` (every vector segment given an IVF, whatever
its size: the eval corpora are below the size where indexes get one), and reports per set

- the recall@10 of dense's IVF top 10 against its exact top 10 (the search's own recall);
- dense and gnn_ret (tuned) R@5 / R@2 against the gold passages, exact and IVF;
- gnn_ret's local computation (tools/gnn_ret/local.py) against its full scan: how many questions get
  the same top 10 (exact search, so only the local computation can differ).

Dev splits only (choices are made on them; docs/scale-measurements.md has the table).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.bench import save_json
from hopgraph.evals.datasets import Question, load_questions
from hopgraph.evals.runner import eval_index, run_methods
from hopgraph.graph_store import Index
from hopgraph.tools import make_retriever
from hopgraph.tools.gnn_ret.layers import smallest

SETS = ("musique", "hotpotqa", "2wiki", "nq")


def search_recall(exact: Index, ann: Index, questions: list[Question], k: int = 10) -> float:
    """Return the mean share of dense's exact top ``k`` that the IVF search finds."""
    found = []
    for q in questions:
        truth = set(exact.dense_top(q.question, k)[0].tolist())
        found.append(len(truth & set(ann.dense_top(q.question, k)[0].tolist())) / k)
    return float(np.mean(found))


def local_agreement(index: Index, questions: list[Question], k: int = 10) -> float:
    """Return the share of questions whose local gnn_ret top ``k`` is the full scan's."""
    gnn = make_retriever("gnn_ret", index)
    same = 0
    for q in questions:
        local = gnn.local_ranking(q.question, k)
        h = gnn.ranking(q.question)[0]
        same += local.rows[local.best(k)].tolist() == smallest(h, k).tolist()
    return same / len(questions)


def measure(data: Path) -> dict:
    """Return the figures of one dataset folder (module doc)."""
    questions = load_questions(data, "dev")
    out: dict = {"set": data.name, "questions": len(questions)}
    opened = {}
    for mode in ("exact", "ann"):
        opened[mode] = eval_index(data, IndexSettings(), None, False, None, True, search=mode)
        scores, _ = run_methods(opened[mode], questions, ["dense", "gnn_ret"], show_progress=False)
        for s in scores:
            out[f"{s.method}_{mode}"] = {"r@2": s.recall[2], "r@5": s.recall[5], "mrr": s.mrr}
    out["chunks"] = len(opened["exact"].chunks)
    out["lists"] = [seg.ivf.lists for seg in opened["ann"].vector_search.segments]
    out["probed"] = [seg.ivf.nprobe for seg in opened["ann"].vector_search.segments]
    out["dense_recall_at_10"] = search_recall(opened["exact"], opened["ann"], questions)
    out["gnn_local_same_top10"] = local_agreement(opened["exact"], questions)
    for index in opened.values():
        index.close()
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure every set named; print one line each; write JSON with --out."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.ann_recall",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--probes",
        type=int,
        help="lists each query reads (default: graph_store.stores.ivf.PROBES, which covers every "
        "list of an eval set: give fewer to see what fewer cost)",
    )
    args = parser.parse_args(argv)
    if args.probes:
        from hopgraph.graph_store.stores import ivf

        ivf.PROBES = args.probes
    rows = []
    for name in args.sets.split(","):
        row = measure(args.data / name)
        rows.append(row)
        print(
            f"{name}: {row['chunks']} chunks, {row['lists'][0]} lists, {row['probed'][0]} probed; "
            f"dense recall@10 {row['dense_recall_at_10']:.4f}; R@5 dense "
            f"{row['dense_exact']['r@5']:.1f} → {row['dense_ann']['r@5']:.1f}, "
            f"gnn_ret {row['gnn_ret_exact']['r@5']:.1f} → "
            f"{row['gnn_ret_ann']['r@5']:.1f}; local = full on "
            f"{100 * row['gnn_local_same_top10']:.1f} % of top 10s",
            flush=True,
        )
    if args.out:
        save_json(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
