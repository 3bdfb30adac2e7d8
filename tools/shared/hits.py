"""The result type every retriever returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise


@dataclass(frozen=True, slots=True)
class Provenance:
    """Why a hit is in a result: which method and step put it there, at which rank and score.

    ``via`` names what led to it (a seed chunk, a path of chunk ids, a triple chain), for graph
    methods; it is empty for a direct match.
    """

    method: str
    step: str
    rank: int
    score: float
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved chunk."""

    id: str
    score: float
    title: str
    text: str
    doc_id: str
    provenance: tuple[Provenance, ...] = field(default=())
    metadata: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    """Its document's fields and ``source``, the chunk's ``section``, ``position`` and the
    document's number of ``chunks`` (graph_store Index.metadata)."""
    raw_score: float | None = None
    """The score its method computed, where ``score`` shows another: a hit the method placed
    above better-scored ones shows the score of the hit below it (:func:`falling`), and a chunk
    the guard kept that the method did not score shows the method's score below it."""
    score_kind: str = "cosine"
    """The scale ``score`` is on, a key of :data:`SCORE_KINDS`: one per method's list."""

    @property
    def own_score(self) -> float:
        """Return the score its method computed (``raw_score``, else ``score``)."""
        return self.score if self.raw_score is None else self.raw_score

    def with_score(self, score: float, *more: Provenance, kind: str | None = None) -> Hit:
        """Return a copy with a new score (its method's own) and extra provenance appended.

        ``kind``: the new score's scale (:data:`SCORE_KINDS`); ``None`` keeps the hit's.
        """
        return replace(
            self,
            score=score,
            raw_score=None,
            score_kind=self.score_kind if kind is None else kind,
            provenance=self.provenance + more,
        )

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "score": self.score,
            "score_kind": self.score_kind,
            "raw_score": self.own_score,
            "title": self.title,
            "text": self.text,
            "metadata": dict(self.metadata),
            "provenance": [
                {
                    "method": p.method,
                    "step": p.step,
                    "rank": p.rank,
                    "score": p.score,
                    "via": list(p.via),
                }
                for p in self.provenance
            ],
        }


SCORE_KINDS = {
    "cosine": "cosine similarity of the query's and the chunk's embeddings (-1 to 1)",
    "bm25": "BM25 relevance of the chunk's words to the query's (0 and up, unbounded)",
    "rrf": "reciprocal rank fusion: the sum of 1 / (60 + rank) over the lists fused "
    "(0 to 1/61 a list; 60 is the method's rrf_k)",
    "gnn similarity": "1 - the chunk's distance to the query after GNN-Ret's message passing "
    "(a cosine-like figure, at most 1)",
    "probability": "a trained list reranker's probability that the chunk is evidence (0 to 1)",
    "logit": "a trained scorer's logit (any real number; 0 is even odds)",
}
"""Each scale a method's scores are on (``Hit.score_kind``), as docs/methods.md "Scores" lists
them: higher is better on each, and every hit of one list is on one scale."""

STEP_ORDERS = {
    "kept: dense top": "the guard keeps dense retrieval's first chunks on top",
    "hop 1": "chains come in chain order (a chain's passages scored by their cosine to the query)",
    "base retrieval": "the base ranking fills the places left",
}
"""Why a list comes in another order than its scores', by the provenance step that says so."""


def falling(hits: Sequence[Hit]) -> list[Hit]:
    """Return ``hits`` in their order with scores that never rise down the list.

    A method may place a hit above better-scored ones (the guard keeps dense retrieval's first
    chunks on top, each with the method's score; IIER ranks by its chains):
    such a hit shows the score of the hit below it, on the method's own scale, so a threshold
    keeps a prefix of the list; the figure its method computed stays in ``raw_score``.
    """
    out = list(hits)
    for i in range(len(out) - 2, -1, -1):
        below = out[i + 1]
        if out[i].score < below.score:
            out[i] = replace(
                out[i], score=below.score, raw_score=out[i].own_score, score_kind=below.score_kind
            )
    return out


def order_note(hits: Sequence[Hit]) -> str | None:
    """Say why ``hits`` are not in their own scores' order, or ``None`` when they are.

    Shown scores fall with rank (:func:`falling`); a hit placed above better-scored ones (the
    guard puts dense retrieval's first chunks on top, IIER ranks by its chains) shows the
    score below it, and its own is its ``raw_score``. Each hit's provenance gives the step
    that placed it.
    """
    if all(h.raw_score is None for h in hits) and all(
        a.own_score >= b.own_score for a, b in pairwise(hits)
    ):
        return None
    steps = {p.step for hit in hits for p in hit.provenance}
    reasons = [why for step, why in STEP_ORDERS.items() if step in steps]
    return (
        "in the method's order, not by their own scores: "
        + ("; ".join(reasons) if reasons else "each hit's provenance gives its step")
        + " (a hit placed above better-scored ones, or kept from dense retrieval unscored by the"
        " method, shows the method's score below it; raw_score is its own)"
    )
