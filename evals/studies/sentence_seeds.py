"""Sentences as GNN-Ret's seeds (issue 54, Deliver 2): tried on train and dev, not kept.

``python -m hopgraph.evals.studies.sentence_seeds --data ../shared/data/musique-train --split
train``

Every sentence of every chunk is embedded once, with its title ("title: sentence"; the
project's sentence splitter). Two ways of seeding the propagation from the question's best
sentences, each beside the tuned h⁰ (the smaller distance is kept, as the expansion's is):

- ``sentence prior β``: each chunk's similarity under the hybrid base uses β · its best
  sentence's cosine + (1 − β) · its own cosine;
- ``sentence entities γ``: the entities linked in the question's three best sentences (no hubs,
  none the question names) seed every other chunk naming them, at distance 1 − γ · that
  sentence's cosine.

The propagation and the guard then run as in ``gnn_ret``. Prints R@2, R@5 and All@5 (dedup to
documents from the first 15 hits, as evals/studies/more_hops.py); the figures are in
docs/methods.md, "Sentences as seeds".

The figures it makes: docs/methods.md, "Sentences as seeds".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import all_at_k, recall_at_k
from hopgraph.evals.runner import eval_index
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.chunking import split_sentences
from hopgraph.tools.gnn_ret.retriever import HUB, GNNRetriever

BEST = 3
"""The question's best sentences whose entities seed (``sentence entities``)."""


class Sentences:
    """Every chunk's sentences, embedded with their title, and the entities' chunks."""

    def __init__(self, index: Index) -> None:
        texts, owner = [], []
        for row, chunk in enumerate(index.chunks.values()):
            for sentence in split_sentences(chunk.text) or [chunk.text]:
                texts.append(f"{chunk.title}: {sentence}")
                owner.append(row)
        vectors = np.asarray(index.embedder.embed(texts), dtype=np.float32)
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        self.texts, self.owner, self.rows = texts, np.array(owner), len(index.chunks)
        table, columns = index.extraction_table, len(index.extraction_table.vocab.strings)
        self.column = {entity: at for at, entity in enumerate(table.vocab.strings)}
        self.hub = table.entities.column_counts(columns) > HUB
        self.holders = table.entities.incidence(columns).T.tocsr()  # entity → its chunks

    def chunks_naming(self, column: int) -> np.ndarray:
        """Return the rows of the chunks that name the entity in ``column``."""
        return self.holders.indices[self.holders.indptr[column] : self.holders.indptr[column + 1]]

    def cosines(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return every sentence's cosine to ``vector`` and each chunk's best."""
        sims = self.vectors @ (vector / np.linalg.norm(vector))
        best = np.full(self.rows, -1.0, dtype=np.float32)
        np.maximum.at(best, self.owner, sims)
        return sims, best


class SentenceSeeded(GNNRetriever):
    """GNN-Ret whose h⁰ also takes the question's best sentences (module doc)."""

    def __init__(
        self, index: Index, sentences: Sentences, beta: float = 0.0, gamma: float = 0.0
    ) -> None:
        super().__init__(index)
        self.sentences, self.beta, self.gamma = sentences, beta, gamma

    def distances(self, query: str) -> np.ndarray:
        """Return the tuned h⁰, lowered where the question's sentences seed (module doc)."""
        h0 = super().distances(query)
        if not (self.beta or self.gamma):
            return h0
        sims, best = self.sentences.cosines(self.index.embed_query(query))
        if self.beta:
            cosine = self.index.query_similarities(query)
            bm25 = self.index.keywords.scores(query)
            bm25 = bm25 / bm25.max() if bm25.max() > 0 else bm25
            dense = self.beta * best + (1 - self.beta) * cosine
            h0 = np.minimum(h0, 1 - (self.base_weight * dense + (1 - self.base_weight) * bm25))
        if self.gamma:
            h0 = self._entity_seeds(query, sims, h0.copy())
        return h0

    def _entity_seeds(self, query: str, sims: np.ndarray, h0: np.ndarray) -> np.ndarray:
        linker, s = self.index.entity_linker, self.sentences
        named = set(linker.link(query).entities)
        for at in np.argsort(-sims)[:BEST]:
            for entity in linker.link(s.texts[at]).entities:
                column = s.column.get(entity)
                if entity in named or column is None or s.hub[column]:
                    continue
                rows = s.chunks_naming(column)
                rows = rows[rows != s.owner[at]]
                h0[rows] = np.minimum(h0[rows], 1 - self.gamma * sims[at])
        return h0


VARIANTS = {
    "tuned gnn_ret": {},
    "sentence prior β 0.3": {"beta": 0.3},
    "sentence prior β 0.5": {"beta": 0.5},
    "sentence entities γ 0.7": {"gamma": 0.7},
    "sentence entities γ 0.9": {"gamma": 0.9},
}


def main(argv: list[str] | None = None) -> int:
    """Print each variant's R@2, R@5 and All@5 on one split."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a dataset folder")
    parser.add_argument("--split", default="dev", help="its split (train or dev)")
    args = parser.parse_args(argv)
    index = eval_index(args.data, IndexSettings(), None, False, with_graphs=True)
    questions = load_questions(args.data, args.split)
    sentences = Sentences(index)
    found = f"{len(questions)} questions, {len(sentences.texts)} sentences"
    print(f"{args.data.name} / {args.split}: {found}")
    for label, options in VARIANTS.items():
        retriever = SentenceSeeded(index, sentences, **options)
        r2 = r5 = a5 = 0.0
        for q in questions:
            docs = list(dict.fromkeys(h.doc_id for h in retriever.retrieve(q.question, 15)))
            r2 += recall_at_k(docs, q.gold_ids, 2)
            r5 += recall_at_k(docs, q.gold_ids, 5)
            a5 += all_at_k(docs, q.gold_ids, 5)
        n = len(questions) / 100
        print(f"{label:<24} R@2 {r2 / n:5.1f}  R@5 {r5 / n:5.1f}  All@5 {a5 / n:5.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
