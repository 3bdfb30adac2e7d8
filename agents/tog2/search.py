"""ToG-2's knowledge-graph access and entity scoring (spec tog2 §2.2, Eq. 6), as pure functions.

Over hopgraph's knowledge graph (spec §8.3): entities are the extracted, normalised names; an
entity's documents are the chunks that mention it; a relation is a triple predicate with its
direction ("out": the entity is the subject).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

from hopgraph.graph_store.graphs.knowledge_graph import KnowledgeGraph


class Relation(NamedTuple):
    """A relation of an entity: its predicate and whether the entity is its subject."""

    predicate: str
    outgoing: bool

    @property
    def label(self) -> str:
        """Return the label shown to the LLM: the predicate, marked "(reverse)" when incoming."""
        return self.predicate if self.outgoing else f"{self.predicate} (reverse)"


def edges(kg: KnowledgeGraph, entity: str) -> list[Relation]:
    """Edge(e): the distinct relations incident to ``entity``, the most frequent first.

    Ties keep the order of first appearance.
    """
    found: dict[Relation, int] = {}
    for t in kg.triples_of(entity):
        if t.subject == entity:
            found[Relation(t.predicate, True)] = found.get(Relation(t.predicate, True), 0) + 1
        if t.object == entity:
            found[Relation(t.predicate, False)] = found.get(Relation(t.predicate, False), 0) + 1
    return sorted(found, key=lambda r: -found[r])


_LETTER = re.compile(r"[^\W\d_]")
_MONTHS = set(
    "january february march april may june july august september october november december".split()
)


def is_literal(name: str) -> bool:
    """Whether an entity name is a literal value (a year, a date, a number) or 2 letters or less.

    The authors' code gives literal tails no document and drops them, and drops names of two
    characters or fewer (spec tog2 §3.2 Step C).
    """
    words = name.split()
    return len(name) <= 2 or not any(_LETTER.search(w) and w not in _MONTHS for w in words)


def tails(kg: KnowledgeGraph, entity: str, relation: Relation) -> list[str]:
    """Tail(e, (r, h)): the entities ``relation`` leads to from ``entity``, in order found."""
    out: dict[str, None] = {}
    for t in kg.triples_of(entity):
        if t.predicate != relation.predicate:
            continue
        if relation.outgoing and t.subject == entity and t.object != entity:
            out.setdefault(t.object)
        elif not relation.outgoing and t.object == entity and t.subject != entity:
            out.setdefault(t.subject)
    return list(out)


def entity_scores(ranked: Sequence[tuple[float, str]], alpha: float) -> dict[str, float]:
    """Eq. 6: score(c) = Σ_k s_k · exp(−α·k) over the top-ranked chunks that belong to c.

    ``ranked`` holds (s_k, candidate) for k = 1, 2, … in rank order; a candidate without a chunk
    in it scores nothing.
    """
    scores: dict[str, float] = defaultdict(float)
    for k, (score, candidate) in enumerate(ranked, start=1):
        scores[candidate] += score * math.exp(-alpha * k)
    return dict(scores)
