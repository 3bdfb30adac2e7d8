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

    def with_score(self, score: float, *more: Provenance) -> Hit:
        """Return a copy with a new score and extra provenance appended."""
        return replace(self, score=score, provenance=self.provenance + more)

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "score": self.score,
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


STEP_ORDERS = {
    "kept: dense top": "the guard keeps dense retrieval's first chunks on top",
    "hop 1": "chains come in chain order (a chain's passages scored by their cosine to the query)",
    "base retrieval": "the base ranking fills the places left",
}
"""Why a list comes in another order than its scores', by the provenance step that says so."""


def order_note(hits: Sequence[Hit]) -> str | None:
    """Say why ``hits`` are not in their scores' order, or ``None`` when they are.

    A hit's score is its method's own, never changed to read as a rank: the guard puts dense
    retrieval's first chunks on top, IIER ranks by its chains, and their scores may then rise
    down the list. Each hit's provenance gives the step that placed it.
    """
    if all(a.score >= b.score for a, b in pairwise(hits)):
        return None
    steps = {p.step for hit in hits for p in hit.provenance}
    reasons = [why for step, why in STEP_ORDERS.items() if step in steps]
    return "in the method's order, not by score: " + (
        "; ".join(reasons) if reasons else "each hit's provenance gives its step"
    )
