"""Widen hits to their whole section or their neighbouring chunks, merged and deduplicated.

Parent-document retrieval (LangChain's ``ParentDocumentRetriever``, LlamaIndex's auto-merging
retriever): a chunk is the right size to rank but often too small to read. ``section`` gives
each hit the run of its document's chunks under the same heading path (subsections are their
own sections); ``neighbours:N`` the N chunks either side. A hit whose chunks an earlier
(better) hit already covers is dropped; spans that overlap (or, for neighbours, touch) merge.
Each passage keeps the id, score and provenance of its best hit, plus an ``expand`` step whose
``via`` lists the chunk ids it spans, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store.documents.schema import Chunk

from .hits import Hit, Provenance

if TYPE_CHECKING:
    from hopgraph.graph_store import Index

EXPAND_HELP = (
    "widen each hit: 'section' (its whole section) or 'neighbours[:N]' (N chunks either side, "
    "default 1); overlapping passages merge, so fewer than k may come back"
)
_SYNTAX = re.compile(r"^(section|neighbou?rs)(?::(\d+))?$")


@dataclass(frozen=True)
class Expansion:
    """How to widen a hit: its ``section``, or ``n`` ``neighbours`` either side."""

    scope: Literal["section", "neighbours"]
    n: int = 1

    @classmethod
    def parse(cls, text: str) -> Expansion:
        """Read ``section``, ``neighbours`` or ``neighbours:N``; InputError on anything else."""
        found = _SYNTAX.match(text.strip().lower())
        if not found or (found.group(1) == "section" and found.group(2)):
            raise InputError(f"expand {text!r}: not an expansion", EXPAND_HELP)
        if found.group(1) == "section":
            return cls("section")
        n = int(found.group(2) or 1)
        if not 1 <= n <= 50:
            raise InputError(f"expand {text!r}: N must be 1 to 50", EXPAND_HELP)
        return cls("neighbours", n)


@dataclass
class _Span:
    hit: Hit
    doc: list[Chunk]
    low: int
    high: int

    def touches(self, other: _Span, gap: int) -> bool:
        return (
            other.hit.doc_id == self.hit.doc_id
            and other.low <= self.high + gap
            and self.low <= other.high + gap
        )


def expand_hits(index: Index, hits: list[Hit], expansion: Expansion) -> list[Hit]:
    """Return ``hits`` widened by ``expansion``, best first (see the module doc)."""
    gap = 1 if expansion.scope == "neighbours" else 0
    spans: list[_Span] = []
    for hit in hits:
        span = _span(index, hit, expansion)
        merged = [s for s in spans if s.touches(span, gap)]
        if not merged:
            spans.append(span)
            continue
        keep = merged[0]  # the best hit among those it joins
        for other in merged[1:]:
            spans.remove(other)
        keep.low = min([span.low] + [s.low for s in merged])
        keep.high = max([span.high] + [s.high for s in merged])
    return [_passage(s, expansion, rank) for rank, s in enumerate(spans, start=1)]


def _span(index: Index, hit: Hit, expansion: Expansion) -> _Span:
    doc = index.document_of(hit.id)
    if doc is None:
        raise IndexStateError(
            f"{index.directory}: the chunks of {hit.doc_id!r} have no positions, so a hit "
            "cannot be widened",
            "rebuild the index (`hopgraph index`), or drop --expand",
        )
    at = next(i for i, c in enumerate(doc) if c.id == hit.id)
    if expansion.scope == "neighbours":
        return _Span(hit, doc, max(0, at - expansion.n), min(len(doc) - 1, at + expansion.n))
    section = doc[at].section
    low, high = at, at
    while low > 0 and doc[low - 1].section == section:
        low -= 1
    while high < len(doc) - 1 and doc[high + 1].section == section:
        high += 1
    return _Span(hit, doc, low, high)


def _passage(span: _Span, expansion: Expansion, rank: int) -> Hit:
    chunks = span.doc[span.low : span.high + 1]
    step = "section" if expansion.scope == "section" else f"neighbours:{expansion.n}"
    why = Provenance("expand", step, rank, span.hit.score, tuple(c.id for c in chunks))
    text = "\n\n".join(c.text for c in chunks)
    return replace(span.hit, text=text, provenance=(*span.hit.provenance, why))
