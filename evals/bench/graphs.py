"""Benchmark offline graph construction and the graph hot paths, on a real index or at scale.

``python -m hopgraph.evals.bench.graphs --index DIR`` uses an index's chunks and stored embeddings;
``python -m hopgraph.evals.bench.graphs --synthetic 100000`` makes a corpus of that many chunks
whose texts mention each other's titles, with random unit embeddings (the embedder is benchmarked
separately). Reported: extraction, passage-graph and knowledge-graph build times, peak memory, and
the hot paths: neighbour lookups and one propagation step over the whole graph.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from itertools import accumulate
from pathlib import Path

import numpy as np

from hopgraph.evals.bench import save_json
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings
from hopgraph.graph_store.graphs.knowledge_graph import build_knowledge_graph
from hopgraph.graph_store.graphs.passage_edges import build_passage_graph
from hopgraph.graph_store.graphs.passage_graph import graph_counts, passage_counts
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.index.reader import Index
from hopgraph.graph_store.index.stored_vectors import read_vectors

SYLLABLES = "ka lo mi ra ven tor bel dun sha gri pol an eth ur is mon dal fen rik sor".split()


def synthetic_corpus(n: int, seed: int = 0, dimension: int = 384) -> tuple[list[Chunk], np.ndarray]:
    """Make ``n`` one-chunk documents that mention 1–3 other titles each, and random vectors."""
    rng = random.Random(seed)

    def name() -> str:
        return " ".join(
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
            for _ in range(rng.randint(1, 3))
        )

    unique: dict[str, None] = {}
    while len(unique) < n:
        unique[name()] = None
    titles = list(unique)
    # Lower-case filler words with a Zipf-like frequency, as in real text.
    vocabulary = list(
        dict.fromkeys(
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(20000)
        )
    )
    # cumulative once: choices() would add up 20,000 weights again at every call
    cumulative = list(accumulate(1 / rank for rank in range(1, len(vocabulary) + 1)))
    chunks = []
    for i, title in enumerate(titles):
        sentences = []
        for _ in range(4):
            words = rng.choices(vocabulary, cum_weights=cumulative, k=10)
            if rng.random() < 0.6:
                words.insert(rng.randint(1, 9), rng.choice(titles))
            if rng.random() < 0.5:  # as in encyclopaedic text, many sentences name their page
                words.insert(0, title)
            text = " ".join(words)
            sentences.append(text[0].upper() + text[1:] + ".")
        chunks.append(
            Chunk(f"s{i:07d}", f"s{i:07d}", title, f"{title} is a place. " + " ".join(sentences))
        )
    return chunks, synthetic_vectors(n, seed, dimension)


def synthetic_vectors(n: int, seed: int = 0, dimension: int = 384) -> np.ndarray:
    """Return unit vectors around one random topic per 100 rows (topics in random order).

    So semantic neighbours exist as in real corpora, and neighbours are not stored together.
    """
    noise = np.random.default_rng(seed)
    topics = noise.standard_normal((max(1, n // 100), dimension)).astype(np.float32)
    vectors = topics[noise.integers(0, len(topics), n)]
    spread = 0.6 / np.sqrt(dimension) * 20
    vectors += spread * noise.standard_normal(vectors.shape).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def hierarchical_vectors(n: int, seed: int = 0, dimension: int = 256) -> np.ndarray:
    """Return unit vectors from a tree of topics, with real MiniLM vectors' neighbour statistics.

    Each row sits at a leaf of a 4-ary tree of random directions: two rows whose paths part at
    depth j share cosine ``shared[j]`` (0.065 at the root, 0.74 for siblings, between them
    geometric), plus a leaf noise of random size. Over 13,752 rows this gives a best
    neighbour at cosine 0.60 (10th percentile 0.48), a 10th best at 0.43 and random pairs at
    0.03 ± 0.09, where the 13,752 distinct chunk vectors of the eval corpora give 0.61 (0.44),
    0.42 and 0.04 ± 0.10, and :func:`synthetic_vectors` 0.70 (0.67), 0.67 and 0.00 ± 0.08:
    its topics are flat clusters with nothing between them, unlike real embeddings.
    """
    rng = np.random.default_rng(seed)
    depth = max(1, int(np.ceil(np.log(max(n, 2)) / np.log(4))))
    shared = [0.065] + [0.065 + 0.675 * 0.74 ** (depth - 1 - j) for j in range(1, depth)]
    weights = np.sqrt(np.diff([0.0, *shared]))
    vectors = np.zeros((n, dimension), dtype=np.float32)
    for j, weight in enumerate(weights):
        node = np.arange(n) // 4 ** (depth - 1 - j)
        directions = rng.standard_normal((int(node[-1]) + 1, dimension)).astype(np.float32)
        vectors += weight * (directions / np.linalg.norm(directions, axis=1, keepdims=True))[node]
    leaf = np.sqrt(1 - shared[-1]) * np.exp(0.45 * rng.standard_normal(n)).astype(np.float32)
    noise = rng.standard_normal((n, dimension)).astype(np.float32)
    vectors += leaf[:, None] * noise / np.linalg.norm(noise, axis=1, keepdims=True)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors[rng.permutation(n)]


def measure(chunks: list[Chunk], vectors: np.ndarray, settings: GraphSettings) -> dict:
    """Time every stage and the hot paths."""
    timings = {}
    started = time.perf_counter()
    extractions = CorpusReadings().update(chunks, [], chunks)
    timings["extract_s"] = time.perf_counter() - started
    started = time.perf_counter()
    graph = build_passage_graph(chunks, extractions, vectors, settings.passage_settings())
    timings["passage_graph_s"] = time.perf_counter() - started
    started = time.perf_counter()
    knowledge = build_knowledge_graph([c.id for c in chunks], extractions)
    timings["knowledge_graph_s"] = time.perf_counter() - started
    timings["total_s"] = sum(timings.values())
    sample = [c.id for c in random.Random(1).sample(chunks, min(1000, len(chunks)))]
    started = time.perf_counter()
    for chunk_id in sample:
        graph.neighbours(chunk_id)
    timings["neighbours_us_per_lookup"] = (time.perf_counter() - started) / len(sample) * 1e6
    adjacency = graph.adjacency()
    scores = np.random.default_rng(2).random(len(chunks), dtype=np.float32)
    started = time.perf_counter()
    adjacency @ scores  # one message-passing step over every edge
    timings["propagation_ms"] = (time.perf_counter() - started) * 1000
    return {
        "timings": timings,
        "counts": graph_counts(
            passage_counts(graph), len(knowledge.entities), len(knowledge.triples)
        ),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures (JSON with --out)."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.graphs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--index", type=Path, help="an index directory")
    source.add_argument("--synthetic", type=int, metavar="N", help="N synthetic chunks")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    settings = GraphSettings()
    if args.index:
        with Index.open(args.index) as index:
            chunks = list(index.chunks.values())
            vectors = read_vectors(index.directory, index.manifest, chunks)
        label = str(args.index)
    else:
        chunks, vectors = synthetic_corpus(args.synthetic)
        label = f"synthetic {args.synthetic}"
    result = measure(chunks, vectors, settings) | {"source": label}
    t, c = result["timings"], result["counts"]
    print(f"{label}: {c['chunks']} chunks")
    print(
        f"  extraction {t['extract_s']:.1f} s, passage graph {t['passage_graph_s']:.1f} s, "
        f"knowledge graph {t['knowledge_graph_s']:.1f} s, total {t['total_s']:.1f} s"
    )
    print(f"  edges {c['edges']}, mean degree {c['mean_degree']:.1f}")
    print(
        f"  {c['entities']} entities, {c['triples']} triples "
        f"({c['triples_per_chunk']:.1f} per chunk)"
    )
    print(
        f"  neighbour lookup {t['neighbours_us_per_lookup']:.0f} µs, one propagation step "
        f"over all edges {t['propagation_ms']:.1f} ms, peak RSS {result['peak_rss_mb']:.0f} MB"
    )
    if args.out:
        save_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
