"""Run retrievers over a benchmark split and score them (``hopgraph eval``)."""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from hopgraph.core.errors import InputError
from hopgraph.core.settings import IndexSettings, cache_dir
from hopgraph.core.settings import settings as current_settings
from hopgraph.graph_store import Document, Index, build_index, load_corpus, load_documents
from hopgraph.graph_store.index.build import build_graphs
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.index.lock import LockedError, wait_for_writer
from hopgraph.graph_store.index.triple_vectors import embed_triple_vectors
from hopgraph.graph_store.stores.manifest import MANIFEST
from hopgraph.graph_store.stores.vector_search import SearchMode
from hopgraph.tools import DEFAULT_PRESET, Hit, Retriever, make_retriever

from .datasets import Question, corpus_of, section_key
from .metrics import all_at_k, percentile, recall_at_k, reciprocal_rank

KS = (2, 5, 10, 15)


@dataclass
class MethodScores:
    """Aggregate scores of one method (percentages, latency in milliseconds)."""

    method: str
    questions: int
    recall: dict[int, float]
    all: dict[int, float]
    mrr: float
    latency_p50_ms: float
    latency_p95_ms: float
    by_hops: dict[int, float] = field(default_factory=dict)
    """R@5 per hop count (``{2: …, 3: …, 4: …}``), where questions say how many hops they take."""


@dataclass
class QuestionResult:
    """One question's ranked documents and scores under one method."""

    method: str
    id: str
    question: str
    gold_ids: list[str]
    ranked_ids: list[str]
    recall: dict[int, float]
    all: dict[int, float]
    rr: float
    latency_ms: float
    hits: list[dict] = field(default_factory=list)
    hops: int | None = None


def eval_index(
    data: Path,
    settings: IndexSettings,
    index_dir: Path | None,
    show_progress: bool,
    expect_model: str | None = None,
    with_graphs: bool = False,
    with_triple_vectors: bool = False,
    search: SearchMode = "auto",
) -> Index:
    """Open the index for a dataset, building it first if needed.

    Without ``index_dir`` the index is cached under ``$HOPGRAPH_CACHE`` by corpus content and
    settings, so a second eval reuses it. An existing ``index_dir`` is used as it is, checked
    against ``expect_model`` when the user named a model. ``with_graphs`` builds the graphs
    (default settings) if the index has none; ``with_triple_vectors`` embeds their triples
    when they are not there (a method searches them; triple_vectors.embed_triple_vectors).
    ``search``: how dense search reads the vectors (graph_store/stores/vector_search.py).
    """
    corpus = corpus_of(data)
    if index_dir is None:
        digest = _digest(corpus)
        digest.update(f"{settings.model}|{settings.chunk_tokens}|{settings.chroma_url}".encode())
        if settings.embeddings_url:  # (absent before endpoints: earlier caches keep their names)
            digest.update(f"|{settings.embeddings_url}".encode())
        index_dir = cache_dir() / "eval-indexes" / f"{data.name}-{digest.hexdigest()[:12]}"
    wait = current_settings().wait
    while not (index_dir / MANIFEST).exists():
        with another_write(index_dir, wait):  # another eval builds it: use theirs
            build_index(_documents(corpus), index_dir, settings, show_progress=show_progress)
    index = Index.open(index_dir, model=expect_model, search=search)
    while with_graphs and index.manifest.graph is None:
        index.close()
        with another_write(index_dir, wait):
            build_graphs(index_dir, GraphSettings(), show_progress=show_progress)
        index = Index.open(index_dir, model=expect_model, search=search)
    if with_triple_vectors and index.manifest.graph is not None:
        index.adopt(embed_triple_vectors(index_dir, show_progress=show_progress, wait=wait))
    return index


@contextmanager
def another_write(index_dir: Path, wait: float) -> Iterator[None]:
    """Run a write of a cached index; if another process writes it, wait for that one instead.

    Two evals of one dataset share its cached index: the second waits for the first's build
    (one line names it) and then, finding the index built, uses it (the caller's loop).
    """
    try:
        yield
    except LockedError:
        wait_for_writer(index_dir, wait)


def _documents(corpus: Path) -> list[Document]:
    """Load a corpus file strictly, or a documentation folder as `hopgraph index` does.

    A documentation folder's files that hold no text (a page of directives only) are skipped
    and, like its missing includes, named on stderr.
    """
    if corpus.is_file():
        return load_documents(corpus)
    loaded = load_corpus(corpus)
    for line in loaded.report.summary()[1:]:
        print(f"warning: {line.strip()}", file=sys.stderr)
    return loaded.documents


def _digest(corpus: Path) -> hashlib._Hash:
    """Hash a corpus file, or every file of a documentation folder (names and bytes)."""
    if corpus.is_file():
        return hashlib.sha1(corpus.read_bytes())
    digest = hashlib.sha1()
    for file in sorted(p for p in corpus.rglob("*") if p.is_file()):
        digest.update(file.relative_to(corpus).as_posix().encode())
        digest.update(file.read_bytes())
    return digest


def ranked_documents(
    retriever: Retriever, query: str, k: int, by_section: bool = False
) -> tuple[list[str], list[Hit]]:
    """Return the first ``k`` distinct document ids (chunks collapse to their document).

    ``by_section``: distinct sections (datasets.section_key) instead of documents. Asks for
    exactly ``k`` first, and for more only when chunks of one unit fill places.
    """
    chunks = retriever.index.chunks

    def unit(hit: Hit) -> str:
        return section_key(hit.doc_id, chunks[hit.id].section) if by_section else hit.doc_id

    fetch = k
    while True:
        hits = retriever.retrieve(query, fetch)
        docs = list(dict.fromkeys(unit(h) for h in hits))
        if len(docs) >= k or len(hits) < fetch:
            return docs[:k], hits
        fetch *= 2


def score_question(
    method: str, q: Question, ranked: list[str], hits: list[Hit], seconds: float, ks: Sequence[int]
) -> QuestionResult:
    """Score one ranked list against a question's gold passages."""
    return QuestionResult(
        method=method,
        id=q.id,
        question=q.question,
        gold_ids=list(q.gold_units),
        ranked_ids=ranked,
        recall={k: recall_at_k(ranked, q.gold_units, k) for k in ks},
        all={k: all_at_k(ranked, q.gold_units, k) for k in ks},
        rr=reciprocal_rank(ranked, q.gold_units),
        latency_ms=seconds * 1000,
        hits=[{"id": h.id, "doc_id": h.doc_id, "score": h.score} for h in hits[: max(ks)]],
        hops=q.hops,
    )


def evaluate(
    retriever: Retriever,
    questions: Sequence[Question],
    ks: Sequence[int] = KS,
    show_progress: bool = True,
) -> tuple[MethodScores, list[QuestionResult]]:
    """Run one retriever over every question."""
    # Latency includes embedding the query, for every method alike: no vectors cached by a
    # method evaluated before; the warm-up loads the model, which is not query latency.
    retriever.index.forget_queries()
    retriever.retrieve(questions[0].question, 1)
    rows = []
    for q in tqdm(questions, desc=f"eval {retriever.name}", unit="q", disable=not show_progress):
        started = time.perf_counter()
        ranked, hits = ranked_documents(retriever, q.question, max(ks), bool(q.gold_sections))
        rows.append(
            score_question(retriever.name, q, ranked, hits, time.perf_counter() - started, ks)
        )
    return aggregate(retriever.name, rows, ks), rows


def aggregate(method: str, rows: Sequence[QuestionResult], ks: Sequence[int]) -> MethodScores:
    """Average per-question scores into percentages."""
    n = len(rows)
    latencies = [r.latency_ms for r in rows]
    return MethodScores(
        method=method,
        questions=n,
        recall={k: 100 * sum(r.recall[k] for r in rows) / n for k in ks},
        all={k: 100 * sum(r.all[k] for r in rows) / n for k in ks},
        mrr=100 * sum(r.rr for r in rows) / n,
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        by_hops=recall_by_hops(rows, HOP_K if HOP_K in ks else max(ks)),
    )


HOP_K = 5
"""The cutoff of the per-hop-count recall (MuSiQue's 3- and 4-hop questions are the hard ones)."""


def recall_by_hops(rows: Sequence[QuestionResult], k: int) -> dict[int, float]:
    """Return R@k per hop count; empty unless the questions span more than one count."""
    groups: dict[int, list[float]] = {}
    for row in rows:
        if row.hops is not None:
            groups.setdefault(row.hops, []).append(row.recall[k])
    if len(groups) < 2:
        return {}
    return {hops: 100 * sum(v) / len(v) for hops, v in sorted(groups.items())}


def check_gold_coverage(index: Index, questions: Sequence[Question]) -> int:
    """Return how many gold ids (or sections) are missing from the index; all is an error."""
    docs = index.doc_ids | {section_key(c.doc_id, c.section) for c in index.chunks.values()}
    gold = {g for q in questions for g in q.gold_units}
    missing = len(gold - docs)
    if missing == len(gold):
        raise InputError(
            f"none of the questions' gold passages are in the index {index.directory}",
            "evaluate against an index of this dataset's corpus.jsonl (or drop --index)",
        )
    return missing


def run_methods(
    index: Index,
    questions: Sequence[Question],
    methods: Sequence[str],
    ks: Sequence[int] = KS,
    show_progress: bool = True,
    options: dict[str, dict] | None = None,
    preset: str = DEFAULT_PRESET,
):
    """Evaluate each named method in ``preset`` (``options[name]`` go to its constructor).

    Returns (scores per method, all per-question rows).
    """
    scores, rows = [], []
    for name in methods:
        retriever = make_retriever(name, index, preset, **(options or {}).get(name, {}))
        method_scores, method_rows = evaluate(retriever, questions, ks, show_progress)
        scores.append(method_scores)
        rows.extend(method_rows)
    return scores, rows
