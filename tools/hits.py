"""The result type every retriever returns."""

from __future__ import annotations

from dataclasses import dataclass, field, replace


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


def in_rank_order(hits: list[Hit]) -> list[Hit]:
    """Clamp scores so they never rise down the list (each hit's provenance keeps its own).

    For methods whose order is not their score's (IIER's chains come in chain order, each hit
    scored by its cosine to the question): a user reads the list top-down by score.
    """
    out: list[Hit] = []
    for hit in hits:
        out.append(hit.with_score(min(hit.score, out[-1].score)) if out else hit)
    return out
