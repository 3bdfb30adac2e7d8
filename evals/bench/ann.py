"""Choose the approximate nearest-neighbour library for semantic edges: recall against exact, time.

Semantic edges link each chunk to its top-k cosine neighbours (k = 5). Exact all-pairs top-k is
quadratic; this measures faiss-cpu (HNSW), usearch (HNSW) and hnswlib against the exact answer
on real embeddings: every distinct chunk vector of the cached eval indexes (MiniLM), then copies
of them with Gaussian noise (σ ``--noise`` per dimension, renormalised) up to ``--size`` rows.
Each library runs in its own process, so its time and peak RSS are its own. Recall counts a
found neighbour whose similarity reaches the exact k-th (ties are not misses). ``--out`` saves
the table as JSON.

    python -m hopgraph.evals.bench.ann --size 100000 --ef 64 128
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from hopgraph.core.settings import cache_dir
from hopgraph.evals.bench import save_json
from hopgraph.graph_store import Index
from hopgraph.graph_store.ann import ANN_CONSTRUCTION, ann_top_k, others
from hopgraph.graph_store.passage_graph import exact_top_k


def real_vectors(size: int, noise: float, seed: int = 0) -> np.ndarray:
    """Return ``size`` unit rows: each cached eval chunk vector once, then noisy copies."""
    found = []
    for directory in sorted((cache_dir() / "eval-indexes").glob("*/")):
        with Index.open(directory) as index:
            found.append(index.embedding_matrix)
    if not found:
        raise SystemExit("no cached eval index: run `hopgraph eval --data ...` once first")
    base = np.unique(np.concatenate(found).astype(np.float32), axis=0)  # no exact duplicates
    rng = np.random.default_rng(seed)
    copies = base[rng.integers(0, len(base), max(size - len(base), 0))]
    copies += noise * rng.standard_normal(copies.shape).astype(np.float32)
    rows = np.concatenate([base, copies])[:size]
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def with_faiss(vectors: np.ndarray, k: int, ef: int) -> np.ndarray:
    """Return each row's k neighbours from faiss's HNSW (M 32, efConstruction 80)."""
    import faiss

    index = faiss.IndexHNSWFlat(vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 80
    index.add(vectors)
    index.hnsw.efSearch = ef
    _, found = index.search(vectors, k + 1)
    return found[others(found, k)].reshape(len(found), k)


def with_usearch(vectors: np.ndarray, k: int, ef: int) -> np.ndarray:
    """Return each row's k neighbours from usearch's HNSW (M 16, expansion_add 128)."""
    from usearch.index import Index as USearch

    index = USearch(ndim=vectors.shape[1], metric="cos", connectivity=16, expansion_add=128,
                    expansion_search=ef)  # fmt: skip
    keys = np.arange(len(vectors), dtype=np.uint64)
    index.add(keys, vectors)
    found = index.search(vectors, k + 1).keys.astype(np.int64)
    return found[others(found, k)].reshape(len(found), k)


def with_hnswlib(vectors: np.ndarray, k: int, ef: int, construction: int) -> np.ndarray:
    """Return each row's k neighbours as the graph build finds them (hnswlib, M 16)."""
    return ann_top_k(vectors, k, ef, construction)[0]


def recall(found: np.ndarray, exact: np.ndarray, vectors: np.ndarray) -> float:
    """Return the share of rows' top-k slots filled by a true top-k neighbour, ties counted.

    A found neighbour counts when its similarity reaches the row's exact k-th similarity, so a
    tie broken the other way is not a miss.
    """
    hits = 0
    for start in range(0, len(vectors), 4096):
        rows = vectors[start : start + 4096]
        kth = np.einsum("ij,ikj->ik", rows, vectors[exact[start : start + 4096]]).min(axis=1)
        got = np.einsum("ij,ikj->ik", rows, vectors[found[start : start + 4096]])
        hits += int((got >= kth[:, None] - 1e-6).sum())
    return hits / exact.size


RUNS = {"exact": None, "faiss-hnsw": with_faiss, "usearch": with_usearch, "hnswlib": with_hnswlib}


def _child(name: str, ef: int, k: int, vectors_file: str, out_file: str, construction: int) -> None:
    """Run one library in a fresh process, so its peak RSS is its own."""
    vectors = np.load(vectors_file)
    started = time.perf_counter()
    if name == "exact":
        found = exact_top_k(vectors, k)[0]
    elif name == "hnswlib":
        found = with_hnswlib(vectors, k, ef, construction)
    else:
        found = RUNS[name](vectors, k, ef)  # type: ignore[misc]
    seconds = time.perf_counter() - started
    np.save(out_file, found)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(out_file + ".json").write_text(f'{{"seconds": {seconds}, "peak_rss_mb": {peak}}}')


def measure(
    name: str, ef: int, k: int, workdir: Path, construction: int = ANN_CONSTRUCTION
) -> tuple[dict, np.ndarray] | None:
    """Run ``name`` in a child process; return its timing, peak RSS and neighbours."""
    import json
    import multiprocessing

    out = str(workdir / f"{name}-{ef}-{construction}.npy")
    context = multiprocessing.get_context("spawn")
    where = (str(workdir / "v.npy"), out, construction)
    child = context.Process(target=_child, args=(name, ef, k, *where))
    child.start()
    child.join()
    if child.exitcode != 0:
        print(f"{name}: failed or not installed (exit {child.exitcode}), skipped")
        return None
    figures = json.loads(Path(out + ".json").read_text())
    label = name if name == "exact" else f"{name} ef {ef}"
    if name == "hnswlib":
        label += f" construction {construction}"
    return {"library": label, **figures}, np.load(out)


def main(argv: list[str] | None = None) -> None:
    """Compare the libraries on one sample and print a table."""
    parser = argparse.ArgumentParser(prog="python -m hopgraph.evals.bench.ann", description=__doc__)
    parser.add_argument("--size", type=int, default=100_000, help="rows (default 100000)")
    parser.add_argument("-k", type=int, default=5, help="neighbours per row (default 5)")
    parser.add_argument("--noise", type=float, default=0.05, help="σ of the tiling noise")
    parser.add_argument("--ef", type=int, nargs="+", default=[64], help="search breadths")
    parser.add_argument(
        "--construction",
        type=int,
        nargs="+",
        default=[ANN_CONSTRUCTION],
        help=f"hnswlib's build breadths, ef_construction (default {ANN_CONSTRUCTION})",
    )
    parser.add_argument(
        "--libraries",
        default="faiss-hnsw,usearch,hnswlib",
        help="comma-separated, of faiss-hnsw, usearch, hnswlib (default all)",
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    vectors = np.ascontiguousarray(real_vectors(args.size, args.noise))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        np.save(workdir / "v.npy", vectors)
        measured = measure("exact", 0, args.k, workdir)
        assert measured is not None
        row, exact = measured
        rows.append(row | {"recall": 1.0})
        names = [n for n in RUNS if n != "exact" and n in args.libraries.split(",")]
        for ef in args.ef:
            for name in names:
                for construction in args.construction if name == "hnswlib" else [0]:
                    measured = measure(name, ef, args.k, workdir, construction)
                    if measured is not None:
                        row, found = measured
                        rows.append(row | {"recall": recall(found, exact, vectors)})
    print(f"{args.size} rows, k = {args.k}")
    for row in rows:
        print(f"{row['library']:<34} {row['seconds']:8.1f} s  recall {row['recall']:.4f}  "
              f"peak RSS {row['peak_rss_mb']:.0f} MB")  # fmt: skip
    if args.out:
        save_json(args.out, {"size": args.size, "k": args.k, "noise": args.noise, "rows": rows})


if __name__ == "__main__":
    main()
