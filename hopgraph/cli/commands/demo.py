"""The main job on the embedded default: index the bundled sample, answer by retrieval.

Offline and without an LLM: each question gets its evidence passages, gold ones marked, and the
run ends with the recall it reached. Multi-step LLM agents build on the same index.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from hopgraph.cli.options import DEMO_INDEX
from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import all_at_k, recall_at_k
from hopgraph.graph_store import Index, build_graphs, build_index, load_documents
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.stores.manifest import MANIFEST
from hopgraph.tools import RETRIEVERS, Retriever, make_retriever


def sample_dir() -> Path:
    """Return the folder of the bundled sample (corpus.jsonl, questions.jsonl)."""
    return Path(str(files("hopgraph") / "sample"))


def _has_graphs(directory: Path) -> bool:
    with Index.open(directory) as index:
        return index.manifest.graph is not None


def run_demo(directory: Path | None, method: str, k: int, show_progress: bool) -> None:
    """Build (or reuse) the sample index and print evidence for every sample question."""
    directory = directory or DEMO_INDEX
    sample = sample_dir()
    docs = load_documents(sample / "corpus.jsonl")
    if not (directory / MANIFEST).exists():
        print(f"indexing {len(docs)} sample passages into {directory} …", flush=True)
        build_index(docs, directory, IndexSettings(), show_progress=show_progress)
    questions = load_questions(sample, "questions")
    from hopgraph.cli.formatting import format_hits

    if RETRIEVERS.get(method, Retriever).needs_graphs and not _has_graphs(directory):
        print(f"building the sample's graphs for {method} …", flush=True)
        settings = GraphSettings(embed_triples=RETRIEVERS[method].needs_triple_vectors)
        build_graphs(directory, settings, show_progress=show_progress)

    with Index.open(directory) as index:
        retriever = make_retriever(method, index)
        recall = complete = 0.0
        for number, q in enumerate(questions, start=1):
            hits = retriever.retrieve(q.question, k)
            ranked = list(dict.fromkeys(h.doc_id for h in hits))
            recall += recall_at_k(ranked, q.gold_ids, k)
            complete += all_at_k(ranked, q.gold_ids, k)
            print(f"\nQ{number} ({q.hops} hops): {q.question}")
            print(f"   expected answer: {q.answers[0]}")
            print(format_hits(hits, set(q.gold_ids)))
    n = len(questions)
    print(
        f"\n{method}: Recall@{k} {100 * recall / n:.1f}, All@{k} {100 * complete / n:.1f} "
        f"over {n} questions (index: {directory})"
    )
