"""What the semantic search's two memory tricks buy: huge pages and asking in locality order.

The graph build asks an hnswlib index for every chunk's neighbours. Per size this builds the
index of synthetic topic-clustered vectors (``hopgraph.evals.bench.graphs.synthetic_vectors``,
the scale benchmark's, 256 dimensions) twice, each in its own process: with the index's memory
advised to huge pages (``graph_store.ann.huge_pages``, as the graph build does) and without.
Each index is then asked for all rows' 10 neighbours in row order and in
:func:`~hopgraph.graph_store.ann.locality_order` (ordering time included), and the answers are
checked identical.

    python -m hopgraph.evals.bench.hnsw --sizes 100k,1M
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time

import numpy as np

from hopgraph.evals.bench.graphs import synthetic_vectors
from hopgraph.evals.bench.scale import DIMENSION, parse_size
from hopgraph.graph_store import ann

K, EF = 10, 64


def measure(size: int, huge: bool) -> dict:
    """Build one index of ``size`` rows; time asking it in row order and in locality order."""
    vectors = synthetic_vectors(size, dimension=DIMENSION)
    if not huge:
        ann.huge_pages = contextlib.nullcontext  # what hnsw_index looks up when it runs
    started = time.perf_counter()
    index = ann.hnsw_index(vectors)
    out: dict = {"size": size, "huge_pages": huge, "build_s": time.perf_counter() - started}
    started = time.perf_counter()
    natural = ann.search_all(index, vectors, K, EF)
    out["row_order_s"] = time.perf_counter() - started
    started = time.perf_counter()
    ordered = ann.search_all(index, vectors, K, EF, ann.locality_order(vectors))
    out["locality_order_s"] = time.perf_counter() - started
    out["identical"] = bool(
        np.array_equal(natural[0], ordered[0]) and np.array_equal(natural[1], ordered[1])
    )
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure each size and page choice in its own process; print one line for each."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.hnsw",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="100k,1M", help="e.g. 100k,200k,1M")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--small-pages", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, not args.small_pages)))
        return 0
    for size in map(parse_size, args.sizes.split(",")):
        for pages in ([], ["--small-pages"]):
            child = [sys.executable, "-m", "hopgraph.evals.bench.hnsw", "--one", str(size)]
            done = subprocess.run(child + pages, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"{size}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                return 1
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{size:>9,} rows, {'huge' if row['huge_pages'] else 'small'} pages: "
                f"build {row['build_s']:.1f} s; ask in row order {row['row_order_s']:.1f} s, "
                f"in locality order {row['locality_order_s']:.1f} s (ordering included); "
                f"identical answers: {row['identical']}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
