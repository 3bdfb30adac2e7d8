"""The no-harm guard of the graph retrievers (docs/methods.md, "no harm"; not in any paper).

A user does not know whether a question needs one passage or several. Graph methods rank the
passages their walks reach; on a single-hop question those walks can push the one passage that
answers it below its neighbours. The guard keeps dense retrieval's top ``keep`` chunks in the
first places and lets the graph method fill the rest in its own order, so the method can only
add evidence below what the question alone finds best. Dense's first chunk is always kept; each
further one (up to ``keep``) only while its cosine is within ``margin`` of the first, that is,
while dense retrieval cannot tell them apart either. ``keep=0`` switches it off (the papers).

The guard is selective (tuned presets; docs/methods.md "When to guard"): it stands aside, and the
graph method leads, when the question looks multi-hop (tools/guards/hop_classifier.py's words and,
for models with one, question-vector classifiers: p ≥ ``MULTI_HOP``)
and dense retrieval is unsure of its first chunk (its cosine lead over the second below
``CONFIDENT``); even then dense's first chunk ranks no lower than ``FLOOR``. On the multi-hop
dev sets that wins back the R@2 that always guarding cost; on NQ, whose questions need one
passage, it keeps each method within a point of dense alone.
"""

from __future__ import annotations

from dataclasses import replace

from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import Where
from hopgraph.tools.baselines.retrievers import DenseRetriever
from hopgraph.tools.shared.base import Retriever
from hopgraph.tools.shared.hits import Hit, Provenance

from .hop_classifier import multi_hop

KEEP = 2
"""Dense chunks the tuned presets keep at most (chosen on dev: nq within 1 point of dense)."""
MARGIN = 0.05
"""How close in cosine a second dense chunk must be to the first to be kept (chosen on dev)."""
MULTI_HOP = 0.3
"""The hop classifier's probability from which a question counts as multi-hop (chosen on dev)."""
CONFIDENT = 0.08
"""Dense's cosine lead (first − second) from which it is sure of its first chunk (dev). IIER
uses its margin (0.15): its guard decides its second place, and dense's second within the
margin is the one the guard would put there."""
FLOOR = 3
"""Where the guard stands aside, dense's first chunk still ranks no lower than this (dev:
hotpotqa R@5 89.5 → 90.2 for gnn_ret, R@2 untouched; docs/methods.md)."""


def keep_top(anchors: list[Hit], hits: list[Hit], k: int, method: str, at: int = 0) -> list[Hit]:
    """Return ``hits`` without ``anchors`` with the anchors placed from rank ``at + 1``: k in all.

    Every hit is on its method's scale: a kept chunk the method ranked too scores as the method
    scored it; one it did not shows the method's score of the hit below it (its cosine stays its
    ``raw_score`` and in its provenance). Scores may still rise down the list, whose order is
    the guard's (the provenance step "kept: dense top" marks them; Retriever.retrieve shows
    them falling, hits.falling).
    """
    kept = {h.id for h in anchors}
    own = {h.id: h for h in hits if h.id in kept}
    rest = [h for h in hits if h.id not in kept]
    merged = [*rest[:at], *(own.get(h.id, h) for h in anchors), *rest[at:]]
    out: list[Hit] = []
    for rank, hit in enumerate(merged[:k], start=1):
        if hit.id in kept:
            step = Provenance(method, "kept: dense top", rank, hit.score)
            below = next((h for h in merged[rank:] if h.id not in kept or h.id in own), None)
            if hit.id in own or below is None:  # None: the method ranked nothing else
                hit = hit.with_score(hit.score, step)
            else:
                hit = replace(
                    hit.with_score(below.score, step, kind=below.score_kind),
                    raw_score=hit.score,
                )
        out.append(hit)  # the method's own provenance says why it came
    return out


class Guarded(Retriever):
    """A retriever with the guard: dense retrieval's top ``keep`` chunks stay first.

    Subclasses call :meth:`guard` in their constructor; the default keeps nothing.
    """

    keep: int = 0
    margin: float = 0.0
    selective: bool = False
    confident: float = CONFIDENT

    def guard(
        self,
        index: Index,
        keep: int,
        margin: float = 0.0,
        selective: bool = False,
        confident: float = CONFIDENT,
    ) -> None:
        """Keep dense's first chunk, and up to ``keep`` within ``margin`` of it (0: off).

        ``selective``: not on questions that look multi-hop where dense is unsure (module doc):
        where its first chunk leads the second by less than ``confident``.
        """
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep must be a whole number ≥ 0, got {keep!r}")
        if not 0.0 <= margin <= 2.0:
            raise ValueError(f"margin must be a cosine difference in [0, 2], got {margin!r}")
        if not isinstance(selective, bool):
            raise ValueError(f"selective must be true or false, got {selective!r}")
        if not 0.0 <= confident <= 2.0:
            raise ValueError(f"confident must be a cosine difference in [0, 2], got {confident!r}")
        self.keep, self.margin, self.selective = keep, margin, selective
        self.confident = confident
        self._dense = DenseRetriever(index) if keep else None

    def ranked(self, query: str, k: int, where: Where | None = None) -> list[Hit]:
        """Rank with the method, then put dense retrieval's top ``keep`` first.

        Selective: where :meth:`stands_aside`, the method's ranking stands, with dense's first
        chunk moved up to place ``FLOOR`` if it ranked lower. With ``where``, both rank only the
        chunks it allows (Retriever.retrieve).
        """
        if not self.keep or self._dense is None:
            return super().ranked(query, k, where)
        # Exactly k from the method: the anchors plus its hits without them always make k, and
        # asking for more changes methods whose ranking depends on k (hybrid's RRF of two top-k
        # lists: hotpotqa R@5 80.1 at k = 5, 77.7 for the first 5 of k = 7).
        hits = super().ranked(query, k, where)
        top = self._dense.top_hits(query, max(min(self.keep, k), 2), self.allowed(where))
        if not top:
            return hits
        if self.selective and self.stands_aside(query, top):
            if top[0].id in {h.id for h in hits[:FLOOR]}:
                return hits
            return keep_top(top[:1], hits, k, self.name, at=FLOOR - 1)
        top = top[: min(self.keep, k)]
        anchors = [h for h in top if top[0].score - h.score < self.margin or h is top[0]]
        return keep_top(anchors, hits, k, self.name)

    def stands_aside(self, query: str, top: list[Hit]) -> bool:
        """Whether the selective guard lets the method lead (:func:`aside`) for this query."""
        lead = top[0].score - top[1].score if len(top) > 1 else 1.0
        return aside(self.multi_hop(query), lead, self.confident)

    def multi_hop(self, query: str, with_vector: bool = True) -> float:
        """Return p(multi-hop) for ``query`` (the hop classifier, with the index's model).

        The query's vector is the one dense retrieval computes anyway (the index keeps it);
        ``with_vector=False``: the words' classifier alone, for a method that embeds nothing.
        """
        vector = self.index.embed_query(query) if with_vector else None
        return multi_hop(query, vector, self.index.manifest.settings.model)


def aside(multi_hop: float, lead: float, confident: float = CONFIDENT) -> bool:
    """Tell whether the selective guard stands aside: multi-hop wording, dense unsure.

    ``confident``: the lead from which dense is sure of its first chunk.
    """
    return lead < confident and multi_hop >= MULTI_HOP
