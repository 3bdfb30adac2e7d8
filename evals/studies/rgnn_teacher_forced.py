"""RGNN-Ret's retrieval with the gold sub-questions (teacher forcing): no LLM needed.

For each question with a gold decomposition, the sub-questions (answers filled in, as in
training) drive RGNN-Ret's retrieve step: per step GNN-Ret's distances, blended with the earlier
steps by β (Eq. 6), and the step's top k passages gathered. Reported: recall of the gold
documents among everything gathered, and R@k / All@k of the last step's blended ranking. It
isolates what learned α / β change in retrieval from what an LLM would change in the questions.

    python -m hopgraph.evals.studies.rgnn_teacher_forced --data ../shared/data/musique [--weights
    FILE]

The figures it makes: docs/methods.md, "RGNN-Ret", docs/evaluation.md, "Learned α", and
docs/agents.md, "What the agents' loops buy".
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import all_at_k, recall_at_k
from hopgraph.evals.runner import eval_index
from hopgraph.tools.gnn_ret.retriever import GNNRetriever
from hopgraph.tools.gnn_ret.training import step_question


def run(data: Path, weights: Path | None, k: int, split: str) -> dict[str, float]:
    """Return gathered recall and the final ranking's R@k / All@k, in percent."""
    beta = json.loads(weights.read_text())["beta"] if weights else 0.9
    questions = [q for q in load_questions(data, split) if q.decomposition]
    with eval_index(data, IndexSettings(), None, False, None, True) as index:
        gnn = GNNRetriever(index, weights=weights)
        ids = index.passage_graph.ids
        doc_of = [index.chunk(c).doc_id for c in ids]
        gathered_recall, final_recall, final_all = [], [], []
        for q in questions:
            answers = [a for _, a in q.decomposition]
            running, gathered = None, []
            for text, _ in q.decomposition:
                h = gnn.ranking(step_question(text, answers))[0]
                running = h if running is None else beta * h + (1 - beta) * running
                gathered += [doc_of[r] for r in np.argsort(running, kind="stable")[:k]]
            gathered = list(dict.fromkeys(gathered))
            final = list(dict.fromkeys(doc_of[r] for r in np.argsort(running, kind="stable")))
            gathered_recall.append(recall_at_k(gathered, q.gold_ids, len(gathered)))
            final_recall.append(recall_at_k(final, q.gold_ids, k))
            final_all.append(all_at_k(final, q.gold_ids, k))
    return {
        "questions": len(questions),
        "beta": beta,
        "gathered_recall": 100 * float(np.mean(gathered_recall)),
        f"final_R@{k}": 100 * float(np.mean(final_recall)),
        f"final_All@{k}": 100 * float(np.mean(final_all)),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the teacher-forced figures for the defaults or for learned weights."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.studies.rgnn_teacher_forced", description=__doc__
    )
    parser.add_argument(
        "--data", required=True, type=Path, help="dataset folder (with decompositions)"
    )
    parser.add_argument("--split", default="dev")
    parser.add_argument("--weights", type=Path, help="from `hopgraph train rgnn_ret`")
    parser.add_argument("-k", type=int, default=5, help="passages per step (default 5)")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.data, args.weights, args.k, args.split), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
