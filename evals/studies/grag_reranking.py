r"""G-RAG against its base order (spec g_rag §9): MRR and MHits@10 over all positives, R@5.

    python -m hopgraph.evals.studies.grag_reranking --weights FILE \
        --data ../shared/data/musique --data ../shared/data/nq

For each question the base retriever's top-n chunks are ranked twice, in the base's order and
by the reranker; chunks collapse to their documents (first place kept) and the positives are
the gold documents among the candidates. A question with none counts 0 for MRR and MHits
(GST's convention, §9.1); R@5 is the eval's Recall@5 over every gold document. One index per
dataset, cached like `hopgraph eval`'s.

The figures it makes: docs/evaluation.md, "G-RAG", and docs/methods.md, "G-RAG's concept paths".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from hopgraph.core.errors import HopgraphError
from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import recall_at_k
from hopgraph.evals.rerank_metrics import mhits_all, mrr_all

COLUMNS = ("MRR", "MHits@10", "R@5")


def scores(ranked: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """(MRR, MHits@10, R@5) of one ranked document list."""
    positives = set(gold) & set(ranked)
    if not positives:
        return 0.0, 0.0, recall_at_k(ranked, gold, 5)
    return mrr_all(ranked, positives), mhits_all(ranked, positives), recall_at_k(ranked, gold, 5)


def rerank_dataset(
    data: Path, weights: Path, split: str, limit: int | None, progress: bool
) -> dict[str, list[float]]:
    """Mean (MRR, MHits@10, R@5) ×100 of the base order and of G-RAG on one dataset."""
    from hopgraph.evals.runner import eval_index
    from hopgraph.tools import make_retriever
    from hopgraph.tools.grag.retriever import GRAGRetriever

    questions = load_questions(data, split, limit)
    with eval_index(data, IndexSettings.from_settings(), None, progress, None, True) as idx:
        reranker = make_retriever("grag", idx, weights=weights)
        assert isinstance(reranker, GRAGRetriever)
        doc_of = [c.doc_id for c in idx.chunks.values()]
        rows: dict[str, list[tuple[float, float, float]]] = {"base": [], "grag": []}
        for q in tqdm(questions, desc=data.name, unit="q", disable=not progress):
            graph = reranker.builder.build(q.question)
            order = np.argsort(-reranker.scores(graph), kind="stable")
            for name, ranking in (("base", range(len(graph.rows))), ("grag", order)):
                docs = list(dict.fromkeys(doc_of[graph.rows[i]] for i in ranking))
                rows[name].append(scores(docs, q.gold_ids))
    return {name: [100 * v for v in np.mean(values, axis=0)] for name, values in rows.items()}


def markdown(results: dict[str, dict[str, list[float]]]) -> str:
    """One table: per dataset, base and G-RAG rows."""
    lines = ["| dataset | order | " + " | ".join(COLUMNS) + " |", "|---|---|---|---|---|"]
    for data, by_order in results.items():
        for name, values in by_order.items():
            cells = " | ".join(f"{v:.1f}" for v in values)
            lines.append(
                f"| {data} | {'hybrid top-100' if name == 'base' else 'G-RAG'} | {cells} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reranking table; write it as JSON with --out."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.studies.grag_reranking",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", action="append", required=True, metavar="DIR")
    parser.add_argument(
        "--weights",
        type=Path,
        required=True,
        metavar="FILE",
        help="G-RAG weights (`hopgraph train grag`)",
    )
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, metavar="N", help="first N questions only")
    parser.add_argument("--out", type=Path, metavar="FILE", help="also write the numbers here")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        results = {
            Path(d).name: rerank_dataset(
                Path(d), args.weights, args.split, args.limit, not args.quiet
            )
            for d in args.data
        }
    except HopgraphError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(markdown(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
