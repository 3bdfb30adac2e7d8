"""Measure index build time against embedding alone, and query latency per retrieval method.

The embedding model is loaded before anything is timed, so both timings measure the same work:
the embedder alone on the index's chunk texts, then the whole build (load, chunk, embed, Chroma,
BM25, manifest). Target: build ≤ 1.3 × embedding alone.

``python -m hopgraph.evals.bench scale --sizes 100k,200k,400k,1M`` is the scale benchmark
(evals/bench/scale.py): graphs, writes and latency on synthetic corpora, vectors given.
``python -m hopgraph.evals.bench startup`` times whole commands from a cold process
(evals/bench/startup.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from hopgraph.core.errors import HopgraphError
from hopgraph.core.settings import IndexSettings
from hopgraph.evals.bench import save_json
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import percentile
from hopgraph.graph_store import Index, build_index, load_documents
from hopgraph.graph_store.embedding.embedders import load_embedder
from hopgraph.graph_store.index.build import build_graphs
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.index.writes import chunk_documents
from hopgraph.tools import RETRIEVERS, make_retriever
from hopgraph.tools.shared.registry import parse_methods, parse_weights

LLM_FREE = [n for n, cls in RETRIEVERS.items() if not (cls.needs_llm or cls.needs_weights)]


def time_indexing(data: Path, settings: IndexSettings, workdir: Path) -> dict[str, float]:
    """Time the embedder alone on the chunk texts, then a whole index build of the corpus."""
    embedder = load_embedder(settings.model, settings.batch_size)
    embedder.embed(["warm-up"])
    docs = load_documents(data / "corpus.jsonl")
    texts = [c.embed_text for c in chunk_documents(docs, settings, embedder)]
    started = time.perf_counter()
    embedder.embed(texts)
    embed_only = time.perf_counter() - started
    started = time.perf_counter()
    build_index(
        load_documents(data / "corpus.jsonl"), workdir / "index", settings, show_progress=False
    )
    build = time.perf_counter() - started
    return {
        "documents": len(docs),
        "chunks": len(texts),
        "embed_only_s": embed_only,
        "build_s": build,
        "ratio": build / embed_only,
        "embed_passages_per_s": len(texts) / embed_only,
        "build_passages_per_s": len(texts) / build,
    }


PASSES = 3
"""Passes over the questions per method; each question's median time is kept. On two shared
cores a one-off pause is not the method's: the ten slowest NaiveGE queries of one 2wiki pass
(6–24 ms) took 3–5 ms when run again."""


def time_queries(
    index_dir: Path,
    questions: list[str],
    k: int,
    methods: Sequence[str],
    embedded: bool = False,
    options: Mapping[str, Mapping[str, object]] | None = None,
) -> dict[str, dict[str, float]]:
    """Time each method over the questions, excluding the query embedding (``embedded``: with).

    Every method embeds the query the same way, so each question is embedded once up front (that
    time is reported as ``query embedding``) and the methods reuse it from the index's cache.
    With ``embedded``, the cache is emptied before every call, so each time is what a caller
    waits for: the question's embedding and the retrieval, and whatever else a method embeds for
    the question (G-RAG's concept paths share that cache). The methods take turns on each
    question, so a slow spell of the machine falls on all of them rather than on whichever
    method it ran (runs of the same code timed method after method ranged 2.4–3.2× dense for
    GNN-Ret); the last query's searches, which the index keeps for a method and its guard, are
    dropped between turns. Each method makes :data:`PASSES` passes; a question's time is its
    median over them. ``options``: per method, for :func:`make_retriever` (``--weights``).
    """
    with Index.open(index_dir) as index:
        embedding = []
        for q in questions:
            started = time.perf_counter()
            index.embed_query(q)
            embedding.append((time.perf_counter() - started) * 1000)
        retrievers = {
            name: make_retriever(name, index, **(options or {}).get(name, {})) for name in methods
        }
        for retriever in retrievers.values():
            retriever.retrieve(questions[0], k)  # loads what it needs once
        passes: dict[str, list[list[float]]] = {name: [] for name in methods}
        for _ in range(PASSES):
            times: dict[str, list[float]] = {name: [] for name in methods}
            for q in questions:
                for name, retriever in retrievers.items():
                    index.forget_queries(vectors=embedded)
                    started = time.perf_counter()
                    retriever.retrieve(q, k)
                    times[name].append((time.perf_counter() - started) * 1000)
            for name in methods:
                passes[name].append(times[name])
    out = {} if embedded else {"query embedding": _summary(embedding)}
    for name in methods:
        out[name] = _summary([statistics.median(t) for t in zip(*passes[name], strict=True)])
    return out


def _print_latency(title: str, latency: dict[str, dict[str, float]]) -> None:
    print(f"  {title}:")
    dense = latency.get("dense")
    for name, t in latency.items():
        versus = (
            f"   {t['p50_ms'] / dense['p50_ms']:.2f} / {t['p95_ms'] / dense['p95_ms']:.2f} × dense"
            if dense and name not in ("dense", "query embedding")
            else ""
        )
        print(f"  {name:<16} p50 {t['p50_ms']:6.1f} ms   p95 {t['p95_ms']:6.1f} ms{versus}")


def _summary(times: list[float]) -> dict[str, float]:
    return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "queries": len(times)}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a summary; writes JSON with --out."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["startup"]:  # python -m hopgraph.evals.bench startup
        from hopgraph.evals.bench.startup import main as startup

        return startup(argv[1:])
    if argv[:1] == ["scale"]:  # python -m hopgraph.evals.bench scale --sizes ...
        from hopgraph.evals.bench.scale import main as scale

        return scale(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", required=True, type=Path, help="dataset folder (corpus.jsonl)")
    parser.add_argument("--split", default="dev", help="questions for query latency")
    parser.add_argument("--queries", type=int, default=200, help="questions to time (default 200)")
    parser.add_argument("-k", type=int, default=10, help="passages per query (default 10)")
    parser.add_argument("--model", default=IndexSettings().model)
    parser.add_argument(
        "--index",
        type=Path,
        help="time queries only, on this index (with graphs) instead of building one",
    )
    parser.add_argument(
        "--methods",
        default=",".join(LLM_FREE),
        help=f"comma-separated methods to time (default: the LLM-free ones, {','.join(LLM_FREE)})",
    )
    parser.add_argument(
        "--weights",
        action="append",
        default=[],
        metavar="METHOD=FILE",
        help="trained weights for a method (as `hopgraph eval --weights`); repeatable",
    )
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    try:
        methods = parse_methods(args.methods)
        options = parse_weights(args.weights)
    except HopgraphError as err:
        parser.error(str(err))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models are never downloaded
    settings = IndexSettings(model=args.model)
    questions = [q.question for q in load_questions(args.data, args.split, args.queries)]
    indexing = None
    if args.index:  # query latency only, on an index that has its graphs
        latency = time_queries(args.index, questions, args.k, methods, options=options)
        end_to_end = time_queries(
            args.index, questions, args.k, methods, embedded=True, options=options
        )
    else:
        with tempfile.TemporaryDirectory(prefix="hopgraph-bench-") as tmp:
            indexing = time_indexing(args.data, settings, Path(tmp))
            # The graph methods need graphs; triple vectors play no part in query latency.
            build_graphs(Path(tmp) / "index", GraphSettings(embed_triples=False), False)
            index_dir = Path(tmp) / "index"
            latency = time_queries(index_dir, questions, args.k, methods, options=options)
            end_to_end = time_queries(
                index_dir, questions, args.k, methods, embedded=True, options=options
            )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "data": str(args.data),
        "settings": settings.model_dump(),
        "weights": args.weights,
        "indexing": indexing,
        "query_latency": latency,
        "end_to_end_latency": end_to_end,
        "peak_rss_mb": peak_mb,
        "cpus": os.cpu_count(),
    }
    if indexing:
        print(f"{args.data.name}: {indexing['documents']} documents → {indexing['chunks']} chunks")
        print(
            f"  embedder alone  {indexing['embed_only_s']:7.1f} s  "
            f"({indexing['embed_passages_per_s']:.1f} passages/s)"
        )
        print(
            f"  whole build     {indexing['build_s']:7.1f} s  "
            f"({indexing['build_passages_per_s']:.1f} passages/s)  "
            f"= {indexing['ratio']:.3f} × embedding alone (target ≤ 1.3)"
        )
    _print_latency("query latency (methods exclude the query embedding, which they share)", latency)
    _print_latency("with the query's embedding (what a caller waits for)", end_to_end)
    print(f"  peak RSS {peak_mb:.0f} MB")
    if args.out:
        save_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
