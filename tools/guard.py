"""The no-harm guard of the graph retrievers (docs/methods.md, "no harm"; not in any paper).

A user does not know whether a question needs one passage or several. Graph methods rank the
passages their walks reach; on a single-hop question those walks can push the one passage that
answers it below its neighbours. The guard keeps dense retrieval's top ``keep`` chunks in the
first places and lets the graph method fill the rest in its own order, so the method can only
add evidence below what the question alone finds best. ``keep=0`` switches it off (the papers).
"""

from __future__ import annotations

from graph_store import Index

from .base import Retriever
from .baselines import DenseRetriever
from .hits import Hit, Provenance


def keep_top(anchors: list[Hit], hits: list[Hit], k: int, method: str) -> list[Hit]:
    """Return ``anchors`` in place, then ``hits`` without them: ``k`` hits in all.

    Kept hits carry their dense score and say so in their provenance; the scores of a guarded
    list are therefore not monotone, its order is what counts.
    """
    kept = {h.id for h in anchors}
    out = [
        hit.with_score(hit.score, Provenance(method, "kept: dense top", rank, hit.score))
        for rank, hit in enumerate(anchors, start=1)
    ]
    return [*out, *(h for h in hits if h.id not in kept)][:k]


class Guarded(Retriever):
    """A retriever with the guard: dense retrieval's top ``keep`` chunks stay first.

    Subclasses call :meth:`guard` in their constructor; the default keeps nothing.
    """

    keep: int = 0

    def guard(self, index: Index, keep: int) -> None:
        """Keep dense retrieval's top ``keep`` chunks in the first places (0: off)."""
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep must be a whole number ≥ 0, got {keep!r}")
        self.keep = keep
        self._dense = DenseRetriever(index) if keep else None

    def retrieve(self, query: str, k: int = 5) -> list[Hit]:
        """Rank with the method, then put dense retrieval's top ``keep`` first."""
        if not self.keep or self._dense is None:
            return super().retrieve(query, k)
        hits = super().retrieve(query, k + self.keep)
        anchors = self._dense.retrieve(query, min(self.keep, k))
        return keep_top(anchors, hits, k, self.name)
