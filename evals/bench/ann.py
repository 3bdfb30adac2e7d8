"""Choose how semantic edges find neighbours approximately: recall against exact, time.

Semantic edges link each chunk to its top-k cosine neighbours (k = 5, and 5 spares). Exact
all-pairs top-k is quadratic; this measures the graph build's NN-descent (faiss,
``graph_store.graphs.ann``) and three HNSW libraries (hnswlib, faiss-cpu, usearch: build an index,
then ask it for every row) against the exact answer. ``--vectors``: ``real`` (default), every
distinct chunk vector of the cached eval indexes (MiniLM), then copies of them with Gaussian
noise (σ ``--noise`` per dimension, renormalised) up to ``--size`` rows; ``topics`` (the scale
benchmark's vectors) or ``hierarchical`` (a tree of topics with real vectors' neighbour
statistics), both from ``hopgraph.evals.bench.graphs``. Each method runs in its own process,
so its time and peak RSS are its own. Recall counts a found neighbour whose similarity reaches
the exact k-th (ties are not misses), over every row or, with ``--sample N``, over N rows
drawn at random (the exact search then covers those rows only, so it is not timed as a
method). ``--out`` saves the table as JSON.

    python -m hopgraph.evals.bench.ann --size 100000 -k 10
    python -m hopgraph.evals.bench.ann --size 1000000 -k 10 --vectors hierarchical --sample 2000
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from hopgraph.core.settings import DEFAULT_MODEL, cache_dir
from hopgraph.evals.bench import save_json
from hopgraph.evals.bench.graphs import hierarchical_vectors, synthetic_vectors
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.ann import ann_top_k
from hopgraph.graph_store.graphs.semantic import exact_top_k

HNSW_CONSTRUCTION = 50
"""hnswlib's build breadth (ef_construction) when the graph build used it: recall@10 0.9925 on
real vectors, 43 % faster than 100 (0.9969)."""
DIMENSION = 256  # the synthetic vectors', as in the scale benchmark


def real_vectors(size: int, noise: float, seed: int = 0) -> np.ndarray:
    """Return ``size`` unit rows: each cached eval chunk vector once, then noisy copies.

    The vectors of the default model's (MiniLM) indexes only: other embedders' have other sizes.
    """
    found = []
    for directory in sorted((cache_dir() / "eval-indexes").glob("*/")):
        with Index.open(directory) as index:
            if index.manifest.settings.model == DEFAULT_MODEL:
                found.append(index.embedding_matrix)
    if not found:
        raise SystemExit("no cached eval index: run `hopgraph eval --data ...` once first")
    base = np.unique(np.concatenate(found).astype(np.float32), axis=0)  # no exact duplicates
    rng = np.random.default_rng(seed)
    copies = base[rng.integers(0, len(base), max(size - len(base), 0))]
    copies += noise * rng.standard_normal(copies.shape).astype(np.float32)
    rows = np.concatenate([base, copies])[:size]
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def make_vectors(kind: str, size: int, noise: float) -> np.ndarray:
    """Return ``size`` unit rows of the ``--vectors`` kind."""
    if kind == "topics":
        return synthetic_vectors(size, dimension=DIMENSION)
    if kind == "hierarchical":
        return hierarchical_vectors(size, dimension=DIMENSION)
    return np.ascontiguousarray(real_vectors(size, noise))


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
    """Return each row's k neighbours from hnswlib's HNSW (M 16), asked in row order."""
    import hnswlib

    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(max_elements=len(vectors), ef_construction=construction, M=16)
    index.add_items(vectors, np.arange(len(vectors)))
    index.set_ef(max(ef, k + 1))
    found = index.knn_query(vectors, k=k + 1)[0].astype(np.int64)
    return found[others(found, k)].reshape(len(found), k)


def with_nndescent(vectors: np.ndarray, k: int) -> np.ndarray:
    """Return each row's k neighbours as the graph build finds them (faiss's NN-descent)."""
    return ann_top_k(vectors, k)[0]


def with_join(vectors: np.ndarray, k: int, partitions: int, probes: int) -> np.ndarray:
    """Return each row's k neighbours as a cluster's graph build finds them: the IVF join.

    graph_store/cluster/neighbours.py, its calls run in this process one after the other; the
    rows cut into ``partitions`` segments as a cluster's build writes them.
    """
    from hopgraph.graph_store.cluster.neighbours import search_lists
    from hopgraph.graph_store.graphs.semantic import Neighbours
    from hopgraph.graph_store.stores.vector_search import SearchSegment, VectorSearch

    bounds = np.linspace(0, len(vectors), partitions + 1).astype(int)
    segments = [SearchSegment(vectors[a:b], np.arange(a, b), None)
                for a, b in itertools.pairwise(bounds)]  # fmt: skip
    search = VectorSearch(segments, len(vectors))
    with tempfile.TemporaryDirectory(prefix="hopgraph-ann-") as folder:
        to = Path(folder) / "lists.npz"
        search_lists(search, len(vectors), k, True, partitions, to, probes=probes)
        return Neighbours.load(to).rows


def others(found: np.ndarray, k: int) -> np.ndarray:
    """Mask k of each row's k + 1 answers: all but the row itself, or but the last if absent.

    An approximate search asks for k + 1 neighbours because a row usually finds itself first;
    a row that does not (an exact duplicate ranked ahead) drops its farthest answer instead.
    """
    n = len(found)
    own = found == np.arange(n)[:, None]
    drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
    keep = np.ones_like(own)
    keep[np.arange(n), drop] = False
    return keep


def recall(found: np.ndarray, exact: np.ndarray, vectors: np.ndarray, rows: np.ndarray) -> float:
    """Return the share of ``rows``' top-k slots filled by a true top-k neighbour, ties counted.

    ``found`` and ``exact`` hold the lists of ``rows``, in that order (-1 pads ``found``). A
    found neighbour counts when its similarity reaches the row's exact k-th similarity, so a
    tie broken the other way is not a miss.
    """
    hits = 0
    for start in range(0, len(rows), 4096):
        asked = vectors[rows[start : start + 4096]]
        kth = np.einsum("ij,ikj->ik", asked, vectors[exact[start : start + 4096]]).min(axis=1)
        listed = found[start : start + 4096]
        got = np.einsum("ij,ikj->ik", asked, vectors[np.maximum(listed, 0)])
        got[listed < 0] = -np.inf  # a short list's padding is a miss
        hits += int((got >= kth[:, None] - 1e-6).sum())
    return hits / exact.size


HNSW = {"faiss-hnsw": with_faiss, "usearch": with_usearch}


def _child(name: str, ef: int, k: int, vectors_file: str, out_file: str, construction: int) -> None:
    """Run one method in a fresh process, so its time and peak RSS are its own.

    ``ivf-join``: ``ef`` is the probes, ``construction`` the partitions.
    """
    vectors = np.load(vectors_file)
    started = time.perf_counter()
    if name == "ivf-join":
        found = with_join(vectors, k, construction, ef)
    elif name == "exact":
        found = exact_top_k(vectors, k)[0]
    elif name == "nndescent":
        found = with_nndescent(vectors, k)
    elif name == "hnswlib":
        found = with_hnswlib(vectors, k, ef, construction)
    else:
        found = HNSW[name](vectors, k, ef)
    seconds = time.perf_counter() - started
    np.save(out_file, found)
    Path(out_file + ".json").write_text(f'{{"seconds": {seconds}, "peak_rss_mb": {_peak_mb()}}}')


def _peak_mb() -> float:
    """Return this process's own peak RSS in MB.

    Linux carries ``ru_maxrss`` across fork and exec, so a child started by a parent holding a
    million vectors would report the parent's peak; /proc's VmHWM starts afresh at exec.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(
    name: str, ef: int, k: int, workdir: Path, construction: int = HNSW_CONSTRUCTION
) -> tuple[dict, np.ndarray] | None:
    """Run ``name`` in a child process; return its timing, peak RSS and neighbours."""
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
    label = name if name in ("exact", "nndescent") else f"{name} ef {ef}"
    if name == "ivf-join":
        label = f"ivf-join P {construction} probes {ef}"
    if name == "hnswlib":
        label += f" construction {construction}"
    return {"library": label, **figures}, np.load(out)


def main(argv: list[str] | None = None) -> None:
    """Compare the methods on one set of vectors and print a table."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.ann",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", type=int, default=100_000, help="rows (default 100000)")
    parser.add_argument("-k", type=int, default=5, help="neighbours per row (default 5)")
    parser.add_argument(
        "--vectors",
        choices=["real", "topics", "hierarchical"],
        default="real",
        help="real MiniLM vectors and noisy copies (default), or synthetic ones",
    )
    parser.add_argument("--noise", type=float, default=0.05, help="σ of the tiling noise (real)")
    parser.add_argument(
        "--sample", type=int, help="recall over this many random rows (default: every row)"
    )
    parser.add_argument("--ef", type=int, nargs="+", default=[64], help="HNSW search breadths")
    parser.add_argument(
        "--construction",
        type=int,
        nargs="+",
        default=[HNSW_CONSTRUCTION],
        help=f"hnswlib's build breadths, ef_construction (default {HNSW_CONSTRUCTION})",
    )
    parser.add_argument(
        "--libraries",
        default="nndescent,hnswlib",
        help="comma-separated, of nndescent (the graph build's), hnswlib, faiss-hnsw, usearch "
        "(default nndescent,hnswlib)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=8,
        help="for ivf-join: segments of the vectors (a cluster build's partitions) and calls",
    )
    parser.add_argument(
        "--probes", type=int, nargs="+", default=[16, 32, 64],
        help="for ivf-join: lists each list's rows are scored against (default 16 32 64)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    unknown = set(args.libraries.split(",")) - {"nndescent", "hnswlib", "ivf-join", *HNSW}
    if unknown:
        parser.error(f"unknown --libraries {sorted(unknown)}: choose among nndescent, hnswlib, "
                     "ivf-join, faiss-hnsw, usearch")  # fmt: skip
    vectors = make_vectors(args.vectors, args.size, args.noise)
    rows = []
    sampled = args.sample and args.sample < args.size
    asked = np.sort(np.random.default_rng(3).choice(args.size, args.sample, replace=False)) if (
        sampled) else np.arange(args.size)  # fmt: skip
    names = ("nndescent", "hnswlib", "ivf-join", *HNSW)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        np.save(workdir / "v.npy", vectors)
        results = []
        for name in [n for n in names if n in args.libraries.split(",")]:
            breadths = {"nndescent": [0], "ivf-join": args.probes}.get(name, args.ef)
            builds = {"hnswlib": args.construction, "ivf-join": [args.partitions]}.get(name, [0])
            for ef in breadths:
                for construction in builds:
                    measured = measure(name, ef, args.k, workdir, construction)
                    if measured is not None:
                        results.append(measured)
        # the exact answer after the children: they start with less of the parent's memory
        if sampled:
            exact = exact_top_k(vectors, args.k, 256, asked)[0]
        else:
            measured = measure("exact", 0, args.k, workdir)
            assert measured is not None
            row, exact = measured
            rows.append(row | {"recall": 1.0})
        for row, found in results:
            rows.append(row | {"recall": recall(found[asked], exact, vectors, asked)})
    sampled = f", recall over {len(asked):,} random rows" if len(asked) < args.size else ""
    print(f"{args.size:,} {args.vectors} rows, k = {args.k}{sampled}")
    for row in rows:
        print(f"{row['library']:<34} {row['seconds']:8.1f} s  recall {row['recall']:.4f}  "
              f"peak RSS {row['peak_rss_mb']:.0f} MB")  # fmt: skip
    if args.out:
        figures = {"size": args.size, "k": args.k, "vectors": args.vectors, "noise": args.noise}
        save_json(args.out, figures | {"sample": len(asked), "rows": rows})


if __name__ == "__main__":
    main()
