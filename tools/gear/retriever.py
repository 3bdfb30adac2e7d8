"""GEAR graph expansion without an LLM: NaiveGE (spec gear §3, the "NaiveGE" variant).

1. Base retrieval: C' = h_base^k(q) (bm25, dense or hybrid).
2. Initial triples: every triple read from a chunk of C' (NaiveGE; SyncGE asks an LLM instead).
3. Diverse triple beam search (Algorithm 1): beams grow by triples that share a head or tail
   entity with their last triple; a beam's score is the running sum of score(q, chain); within
   each parent, the n-th best child is multiplied by exp(−min(n, γ)/γ), so the kept beams do not
   all share one start.
4. Beams are flattened breadth-first to their source chunks, then fused with C' by RRF (Eq. 3).

score(q, chain) is the cosine between the query and the chain. The paper embeds the chain's text;
here the chain's vector is the normalised sum of its triples' stored vectors, which needs no
model call per candidate and keeps a query in milliseconds.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from hopgraph.core.llm import Usage, add_usage, complete, no_usage
from hopgraph.graph_store import Index
from hopgraph.prompts import passage
from hopgraph.prompts.gear import READ
from hopgraph.tools.guards.guard import CONFIDENT, KEEP, MARGIN, Guarded
from hopgraph.tools.shared.base import Bases
from hopgraph.tools.shared.fusion import reciprocal_rank_fusion
from hopgraph.tools.shared.hits import Hit, Provenance

if TYPE_CHECKING:  # a chat model is passed in; the LLM-free runs import no langchain-core
    from langchain_core.language_models import BaseChatModel

Beam = tuple[float, list[int]]


def chain_score(query: np.ndarray, vectors: np.ndarray, chain: Sequence[int]) -> float:
    """Return cos(q, Σ vectors of the chain)."""
    total = vectors[list(chain)].sum(axis=0)
    norm = float(np.linalg.norm(total))
    return float(query @ total / norm) if norm else 0.0


def diverse_beam_search(
    query: np.ndarray,
    initial: Sequence[int],
    vectors: np.ndarray,
    neighbours: Callable[[int], np.ndarray],
    beam_width: int = 10,
    length: int = 2,
    neighbour_cap: int = 100,
    gamma: float | None = None,
) -> list[Beam]:
    """Algorithm 1 of GEAR; returns the top ``beam_width`` (score, triple rows) beams."""
    gamma = gamma or 2 * beam_width
    beams = sorted(
        ((chain_score(query, vectors, [t]), [t]) for t in dict.fromkeys(initial)),
        key=lambda beam: -beam[0],
    )[:beam_width]
    for _ in range(length - 1):
        visited = {t for _, chain in beams for t in chain}
        grown: list[Beam] = []
        for score, chain in beams:
            children = _children(
                query, vectors, chain, neighbours(chain[-1]), visited, neighbour_cap
            )
            for n, (child_score, child) in enumerate(children):
                grown.append(((score + child_score) * math.exp(-min(n, gamma) / gamma), child))
        if not grown:
            break  # nothing to expand: keep the beams we have
        beams = sorted(grown, key=lambda beam: -beam[0])[:beam_width]
    return beams


def _children(
    query: np.ndarray,
    vectors: np.ndarray,
    chain: list[int],
    candidates: np.ndarray,
    visited: set[int],
    cap: int,
) -> list[tuple[float, list[int]]]:
    """Score every unvisited neighbour's extended chain; keep the best ``cap``, best first."""
    fresh = np.array([t for t in candidates if t not in visited], dtype=np.int64)
    if not len(fresh):
        return []
    totals = vectors[chain].sum(axis=0) + vectors[fresh]
    norms = np.linalg.norm(totals, axis=1)
    scores = np.where(norms > 0, totals @ query / np.where(norms > 0, norms, 1), 0.0)
    best = np.argsort(-scores, kind="stable")[:cap]
    return [(float(scores[i]), [*chain, int(fresh[i])]) for i in best]


def flatten_to_chunks(beams: Sequence[Beam], chunk_of: Sequence[str]) -> list[tuple[str, int]]:
    """Map beams to chunk ids breadth-first (all first triples, then all second ones), deduped.

    Returns (chunk id, triple row that brought it).
    """
    out: dict[str, int] = {}
    for position in range(max((len(chain) for _, chain in beams), default=0)):
        for _, chain in beams:
            if position < len(chain):
                out.setdefault(chunk_of[chain[position]], chain[position])
    return list(out.items())


class NaiveGERetriever(Guarded):
    """GEAR's NaiveGE: base retrieval, triple beam search from its chunks' triples, fusion."""

    name = "naive_ge"
    needs_graphs = True
    needs_base = True
    needs_triple_vectors = True  # the beam search scores triples by their vectors (Eq. 5)
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "paper": {"base_depth": None, "fusion": "rrf", "keep": 0}
    }
    description = (
        "Graph expansion for multi-hop questions: follows chains of facts (subject, predicate, "
        "object) linked through shared entities, starting from the facts of the best-matching "
        "passages, and merges the passages the chains lead to with the direct matches."
    )

    def __init__(
        self,
        index: Index,
        base: str = "hybrid",
        beam_width: int = 10,
        length: int = 2,
        neighbour_cap: int = 100,
        gamma: float | None = None,
        rrf_k: int = 60,
        base_depth: int | None = 5,
        fusion: Literal["rrf", "page_step"] = "page_step",
        page_steps: int = 1,
        after: int = 1,
        keep: int = KEEP,
        margin: float = MARGIN,
        selective: bool = True,
        confident: float = CONFIDENT,
        *,
        bases: Bases,
    ) -> None:
        """Set up over ``index`` (Algorithm 1's b, l, neighbour cap and γ; RRF's k).

        ``base_depth``: base passages whose triples seed the search (None: k, the paper's
        single-step protocol, where a deep k seeds from many passages whose triples crowd the
        beams). ``fusion``: how the chains' passages join the base ranking —
        ``rrf``: Eq. 3, RRF of the flattened chains and the base's top ``base_depth`` (the
        paper), whose first 2 × base_depth places lead, then the rest of the base's top k;
        ``page_step``: the base's own ranking, with the first ``page_steps`` passages that a
        chain reaches by stepping onto the page of an entity its first passage names (a
        ``link`` edge of the passage graph) placed after the base's first ``after`` places
        (docs/methods.md: offline triples make the other chain steps mostly noise).
        ``keep``, ``margin``, ``selective``, ``confident``: the no-harm guard
        (tools/guards/guard.py).
        ``bases`` makes ``base``.
        """
        super().__init__(index)
        self.guard(index, keep, margin, selective, confident)
        if base_depth is not None and base_depth < 1:
            raise ValueError(f"base_depth must be at least 1, got {base_depth}")
        if fusion not in ("rrf", "page_step"):
            raise ValueError(f"fusion must be 'rrf' or 'page_step', got {fusion!r}")
        if page_steps < 0 or after < 0:
            raise ValueError(f"page_steps and after must be ≥ 0, got {page_steps}, {after}")
        self.base_depth, self.fusion = base_depth, fusion
        self.page_steps, self.after = page_steps, after
        self.base = bases(base)
        # page steps join the base's list at its scores; RRF scores every place anew
        self.score_kind = self.base.score_kind if fusion == "page_step" else "rrf"
        self.beam_width, self.length, self.cap = beam_width, length, neighbour_cap
        self.gamma, self.rrf_k = gamma, rrf_k
        knowledge = index.knowledge_graph
        self.vectors = index.triple_matrix
        self.chunk_of = [t.chunk_id for t in knowledge.triples]
        self.triples_of_chunk: dict[str, list[int]] = {}
        for row, chunk_id in enumerate(self.chunk_of):
            self.triples_of_chunk.setdefault(chunk_id, []).append(row)
        self.triple_entity, self.entity_triple = knowledge.triple_entity, knowledge.entity_triple
        self.links = index.passage_graph.edges["link"].tocsr()

    def initial_triples(self, query: str, base_hits: Sequence[Hit]) -> list[int]:
        """NaiveGE's seeds: every triple read from a chunk of the base result."""
        return [t for h in base_hits for t in self.triples_of_chunk.get(h.id, [])]

    def neighbours(self, row: int) -> np.ndarray:
        """Return the rows of the triples sharing a head or tail entity with triple ``row``."""
        te, et = self.triple_entity, self.entity_triple
        entities = te.indices[te.indptr[row] : te.indptr[row + 1]]
        found = [et.indices[et.indptr[e] : et.indptr[e + 1]] for e in entities]
        rows = np.unique(np.concatenate(found)) if found else np.array([], dtype=np.int64)
        return rows[rows != row]

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        if self.fusion == "page_step":  # one base call: its top k, seeds from its first places
            ranking = self.base.retrieve(query, max(k, self.base_depth or k))
            base_hits = ranking[: self.base_depth or k]
        else:
            base_hits = self.base.retrieve(query, self.base_depth or k)
        beams = diverse_beam_search(
            self.index.embed_query(query),
            self.initial_triples(query, base_hits),
            self.vectors,
            self.neighbours,
            self.beam_width,
            self.length,
            self.cap,
            self.gamma,
        )
        if self.fusion == "page_step":
            return self._with_page_steps(k, beams, ranking[:k])
        expanded = flatten_to_chunks(beams, self.chunk_of)
        via = {chunk_id: self._chain_of(row, beams) for chunk_id, row in expanded}
        fused = reciprocal_rank_fusion(
            [[c for c, _ in expanded], [h.id for h in base_hits]], self.rrf_k
        )[:k]
        if self.base_depth is not None and self.base_depth < k:
            fused = self._filled(fused[: 2 * self.base_depth], query, k)
        base_by_id = {h.id: h for h in base_hits}
        hits = []
        for rank, (chunk_id, score) in enumerate(fused, start=1):
            step = "triple chain" if chunk_id in via else "base retrieval"
            earlier = base_by_id[chunk_id].provenance if chunk_id in base_by_id else ()
            own = Provenance(self.name, step, rank, score, via.get(chunk_id, ()))
            hits.append(self._hit(chunk_id, score, *earlier, own))
        return hits

    def page_steps_of(self, beams: Sequence[Beam], exclude: set[str]) -> list[tuple[str, int]]:
        """Return the chunks the chains step onto from a chunk that links to their page.

        In beam order, each once; chunks of the documents in ``exclude`` are not new evidence.
        Returns (chunk id, triple row that reached it).
        """
        rows, out = self.index.rows, {}
        for _, chain in beams:
            for before, after in itertools.pairwise(chain):
                source, target = self.chunk_of[before], self.chunk_of[after]
                if target in out or self.index.chunk(target).doc_id in exclude:
                    continue
                if self.links[rows[source], rows[target]]:
                    out[target] = after
        return list(out.items())

    def _with_page_steps(self, k: int, beams: Sequence[Beam], base: list[Hit]) -> list[Hit]:
        """Return the base's top k with the first page steps after its first ``after`` places."""
        lead = {h.doc_id for h in base[: self.base_depth or k]}
        steps = self.page_steps_of(beams, lead)[: self.page_steps]
        stepped = dict(steps)
        rest = [h for h in base if h.id not in stepped]
        order: list[Hit | str] = [*rest[: self.after], *stepped, *rest[self.after :]]
        hits: list[Hit] = []
        for rank, item in enumerate(order[:k], start=1):
            if isinstance(item, Hit):
                own = Provenance(self.name, "base retrieval", rank, item.score)
                hits.append(item.with_score(item.score, own))
                continue
            score = hits[-1].score if hits else (base[0].score if base else 1.0)
            chain = self._chain_of(stepped[item], beams)
            hits.append(
                self._hit(item, score, Provenance(self.name, "page step", rank, score, chain))
            )
        return hits

    def _filled(
        self, fused: list[tuple[str, float]], query: str, k: int
    ) -> list[tuple[str, float]]:
        """Follow the fused places with the rest of the base's top k, at the last fused score."""
        taken = {chunk_id for chunk_id, _ in fused}
        floor = fused[-1][1] if fused else 0.0
        rest = [(h.id, floor) for h in self.base.retrieve(query, k) if h.id not in taken]
        return [*fused, *rest][:k]

    def _chain_of(self, row: int, beams: Sequence[Beam]) -> tuple[str, ...]:
        """Return the triple chain (as texts) of the best beam that holds ``row``."""
        knowledge = self.index.knowledge_graph
        for _, chain in beams:
            if row in chain:
                return tuple(knowledge.triples[t].text for t in chain)
        return ()


_FACT = re.compile(r'\(\s*"([^"]*)"\s*,\s*"([^"]*)"\s*,\s*"([^"]*)"\s*\)')


def read_triples(reply: str) -> list[tuple[str, str, str]]:
    """Parse ("s", "p", "o") facts from the reader's free text (spec gear §3 step 2)."""
    return [
        (s.strip(), p.strip(), o.strip())
        for s, p, o in _FACT.findall(reply)
        if s.strip() and o.strip()
    ]


def read_facts(reply: str) -> list[str]:
    """Parse the reader's facts as the texts "s p o" that are embedded and linked."""
    return [f"{s} {p} {o}" for s, p, o in read_triples(reply)]


class SyncGERetriever(NaiveGERetriever):
    """GEAR's SyncGE: NaiveGE's search, seeded by what an LLM reads from the base passages.

    The LLM writes proximal triples (Eq. 1); each is linked to its most similar stored triple
    (tripleLink, Eq. 2, exact cosine over the triple vectors); those seed the beam search.
    """

    name = "sync_ge"
    needs_llm = True
    description = (
        "LLM-guided graph expansion for multi-hop questions: an LLM reads the best-matching "
        "passages into the facts the question needs, and chains of stored facts linked to them "
        "lead to the passages that hold the rest of the evidence."
    )

    def __init__(self, index: Index, chat: BaseChatModel | None = None, **options: Any) -> None:
        """Set up over ``index`` with NaiveGE's ``options``, but the paper's fusion by default.

        SyncGE cannot be measured without an LLM, so it is not tuned: the base's top k seed and
        fuse by RRF (``base_depth=None``, ``fusion="rrf"``) and there is no guard (``keep=0``)
        unless options say so.
        """
        options = {"base_depth": None, "fusion": "rrf", "keep": 0, **options}
        super().__init__(index, **options)
        if chat is None:
            from hopgraph.core.llm import required_chat

            chat = required_chat()
        self.chat = chat
        self.last_reply = ""
        self.usage = no_usage()

    def take_usage(self) -> Usage:
        """Return the LLM usage since the last call (the reads of every retrieve) and reset it."""
        usage, self.usage = self.usage, no_usage()
        return usage

    def initial_triples(self, query: str, base_hits: Sequence[Hit]) -> list[int]:
        """Read proximal triples from the base passages and link each to its nearest triple."""
        docs = "\n\n".join(passage(h.title, h.text) for h in base_hits)
        self.last_reply, usage = complete(self.chat, READ.format(docs=docs, query=query))
        self.usage = add_usage(self.usage, usage)
        facts = read_facts(self.last_reply)
        if not facts:  # the model found nothing usable: fall back to NaiveGE's seeds
            return super().initial_triples(query, base_hits)
        vectors = np.stack([self.index.embed_query(f) for f in facts])
        nearest = np.argmax(vectors @ self.vectors.T, axis=1) if len(self.vectors) else []
        return list(dict.fromkeys(int(t) for t in nearest))
