"""GNN-Ret's list reranker: a linear model over how each passage ties to the question and the list.

Ours, not in the paper (issue 54; docs/methods.md, "Reranking the list"). The propagation ranks
a passage by its own distance or by one message; it never looks at the list as a whole, where
the evidence of a multi-hop question is a chain: a bridge passage is linked from the first
passages, adds the question's words they lack, and is unlike them. The reranker scores each of
the method's first :data:`DEPTH` passages by :data:`FEATURES`, read from what the index holds
(vectors, BM25 postings, the passage graph's rows, the texts): no model runs, and it adds 1–6
ms to a query's p50 on 2 cores. Its weights are a logistic regression fitted on the train splits
(each set weighted equally) by ``python -m hopgraph.evals.studies.list_rerank``, shipped per
embedding model as ``tools/shared/weights_data/list_rerank-MODEL.json`` (the cosine features are
that model's); an index under another model ranks as the propagation does. It is off by default
(``rerank=True`` turns it on): on the multi-hop dev sets it lifts R@5 and R@2. A documentation
site's list keeps the propagation's order (:func:`fits`): there it cost R@5.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.core.csr import row_edges
from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index
from hopgraph.tools.shared.weights import SHIPPED as SHIPPED_WEIGHTS

WEIGHTS = SHIPPED_WEIGHTS  # tools/shared/weights_data
DEPTH = 30
"""Passages of the method's list that are reranked (the rest follow in the method's order)."""
HEAD = 5
"""The first passages of the list the link features count (a bridge is linked from them)."""
NEAR = 10
"""The first passages a chain is formed with (support and chain features)."""
SECTIONED = 0.5
"""The share of a list's passages under a heading from which the reranker leaves it alone
(:func:`fits`): such a list is a documentation site's, not the encyclopedia passages it was
fitted on."""
FEATURES = (
    "rank",  # 1 / (1 + place in the method's list)
    "score",  # the method's score (1 − final distance)
    "cosine",  # the question's cosine
    "bm25",  # BM25, scaled by the list's best
    "entity_in",  # passages of the head sharing an entity with it
    "link_in",  # passages of the head naming its page
    "link_out",  # passages of the head whose page it names
    "support",  # best cosine among the near passages tied to it (entity or link)
    "chain",  # best cosine of its vector summed with a tied near passage's
    "title_in_question",  # share of its title's words in the question
    "same_doc_above",  # a passage of its document ranks above it
    "like_head",  # mean cosine to the head's passages
    "question_words",  # share of the question's words in its title and text
    "words_added",  # most question words it adds to one of the first three
    "by_message",  # its distance came from a message
    "like_above",  # highest cosine to a passage above it
)
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1 << 16)  # a passage's words are read again by every list it is in
def words(text: str) -> frozenset[str]:
    """Return the lower-cased words of three letters or more (what the word features count)."""
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 2)


@dataclass(frozen=True)
class Listed:
    """The method's list: chunk rows in its order, their scores, and which took a message."""

    rows: np.ndarray
    scores: np.ndarray
    by_message: np.ndarray


def list_features(index: Index, query: str, listed: Listed) -> np.ndarray:
    """Return one row of :data:`FEATURES` per passage of ``listed`` (float64)."""
    rows, n = listed.rows, len(listed.rows)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    vectors = index.vector_search.matrix(rows).astype(np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    cosine = vectors @ index.embed_query(query).astype(np.float32)
    bm25 = index.query_scores(query).at(rows).astype(np.float64)
    bm25 = bm25 / bm25.max() if len(bm25) and bm25.max() > 0 else np.zeros(n)
    entity, link = (_among(index, kind, rows) for kind in ("entity", "link"))
    ties = (entity | entity.T | link | link.T) & (np.arange(n) < NEAR)[None, :]
    like = vectors @ vectors.T
    chain = (cosine[:, None] + cosine[None, :]) / np.sqrt(np.maximum(2 + 2 * like, 1e-6))
    tied = ties.any(axis=1)
    above = np.tril(np.ones((n, n), dtype=bool), k=-1)
    out = np.zeros((n, len(FEATURES)))
    out[:, 0] = 1 / (1 + np.arange(n))
    out[:, 1] = listed.scores
    out[:, 2] = cosine
    out[:, 3] = bm25
    out[:, 4] = entity[:HEAD].sum(axis=0)
    out[:, 5] = link[:HEAD].sum(axis=0)
    out[:, 6] = link[:, :HEAD].sum(axis=1)
    out[:, 7] = np.where(tied, np.where(ties, cosine[None, :], -np.inf).max(axis=1), 0.0)
    out[:, 8] = np.where(tied, np.where(ties, chain, -np.inf).max(axis=1), cosine)
    out[:, 11] = like[:, :HEAD].mean(axis=1)
    out[:, 14] = listed.by_message
    out[1:, 15] = np.where(above, like, -np.inf).max(axis=1)[1:]
    out[:, [9, 10, 12, 13]] = _word_features(index, query, rows)
    return out


def fits(index: Index, rows: np.ndarray) -> bool:
    """Whether a list is like the ones the reranker was fitted on: passages, not sections of pages.

    The train splits are encyclopedia passages, one page each with no headings; a documentation
    site's list is sections of a few pages, where "its document ranks above" and "its title's
    words in the question" mean something else. There the reranker cost R@5 (structlog 91.8 →
    88.8 with multi-hop questions only; docs/methods.md, "Reranking the list"), so a list with
    :data:`SECTIONED` of its passages or more under a heading keeps the propagation's order.
    """
    if len(rows) == 0:
        return False
    sectioned = sum(bool(index.chunks[index.ids[r]].section) for r in rows.tolist())
    return sectioned < SECTIONED * len(rows)


def _word_features(index: Index, query: str, rows: np.ndarray) -> np.ndarray:
    """Return title_in_question, same_doc_above, question_words and words_added per row."""
    question = words(query)
    asked = max(len(question), 1)
    chunks = [index.chunks[index.ids[r]] for r in rows.tolist()]
    found = [question & (words(c.title) | words(c.text)) for c in chunks]
    out = np.zeros((len(chunks), 4))
    seen: set[str] = set()
    for i, chunk in enumerate(chunks):
        title = words(chunk.title)
        own = len(found[i]) / asked
        added = [len(found[i] | found[j]) - len(found[j]) for j in range(min(3, len(chunks)))
                 if j != i]  # fmt: skip
        out[i] = (
            len(title & question) / max(len(title), 1),
            float(chunk.doc_id in seen),
            own,
            max(added) / asked if added else own,
        )
        seen.add(chunk.doc_id)
    return out


def _among(index: Index, kind: str, rows: np.ndarray) -> np.ndarray:
    """Return the (n × n) edges of ``kind`` among ``rows``: [i, j] when row i → row j."""
    source, target = row_edges(index.passage_graph.csr[kind], rows)
    position = {int(r): i for i, r in enumerate(rows.tolist())}
    out = np.zeros((len(rows), len(rows)), dtype=bool)
    for a, b in zip(source.tolist(), target.tolist(), strict=True):
        j = position.get(b)
        if j is not None and b != a:
            out[position[a], j] = True
    return out


@dataclass(frozen=True)
class ListReranker:
    """p(gold) = σ(bias + weights · (features − mean) / scale), over one embedding model."""

    model: str
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    def scores(self, features: np.ndarray) -> np.ndarray:
        """Return each passage's probability of being evidence."""
        z = self.bias + ((features - self.mean) / self.scale) @ self.weights
        return 1.0 / (1.0 + np.exp(-np.clip(z, -60.0, 60.0)))

    def order(self, index: Index, query: str, listed: Listed) -> tuple[np.ndarray, np.ndarray]:
        """Return ``listed``'s positions, best first, with their probabilities (ties: as listed)."""
        p = self.scores(list_features(index, query, listed))
        order = np.argsort(-p, kind="stable")
        return order, p[order]

    def save(self, path: Path, about: dict[str, Any]) -> None:
        """Write the model with ``about`` (how it was fitted)."""
        body = {
            "about": about,
            "model": self.model,
            "features": list(FEATURES),
            "mean": self.mean.round(6).tolist(),
            "scale": self.scale.round(6).tolist(),
            "weights": self.weights.round(6).tolist(),
            "bias": round(self.bias, 6),
        }
        path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> ListReranker:
        """Read a model written by :meth:`save`; one fitted on other features is refused."""
        body = json.loads(path.read_text(encoding="utf-8"))
        if body.get("features") != list(FEATURES):
            raise IndexStateError(
                f"{path} was fitted on other features than this hopgraph computes",
                "fit it again: "
                "`python -m hopgraph.evals.studies.list_rerank --data ../shared/data`",
            )
        arrays = [np.asarray(body[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
        return cls(body["model"], *arrays, float(body["bias"]))


def shipped_path(model: str) -> Path:
    """Where the reranker shipped for ``model``'s vectors lives."""
    return WEIGHTS / f"list_rerank-{Path(model).name}.json"


@cache
def shipped(model: str) -> ListReranker | None:
    """Return the reranker shipped for ``model``, or None (read once per process)."""
    path = shipped_path(model)
    return ListReranker.load(path) if path.is_file() else None


def list_reranker(index: Index, rerank: bool | str | Path) -> ListReranker | None:
    """Return the reranker ``rerank`` asks for over ``index``: none, the shipped one, or a file's.

    A file fitted on another embedding model's vectors than the index's is refused.
    """
    model = index.manifest.settings.model
    if rerank is False:
        return None
    if rerank is True:
        return shipped(model)
    path = Path(rerank)
    if not path.is_file():
        raise InputError(
            f"no list reranker at {path}",
            "give a file `python -m hopgraph.evals.studies.list_rerank --out FILE` wrote",
        )
    found = ListReranker.load(path)
    if Path(found.model).name != Path(model).name:
        raise InputError(
            f"{path} was fitted on {found.model}'s vectors; this index embeds with {model}",
            "fit one for it: "
            f"`python -m hopgraph.evals.studies.list_rerank --model {model} --out FILE`",
        )
    return found
