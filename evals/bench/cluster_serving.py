"""Serving from shards on a Ray cluster beside one process: latency, rounds, bytes, memory.

    python -m hopgraph.evals.bench.cluster_serving --index DIR --shards 1,2,4 \
        --out evals/results/scale/cluster-serving-1m.json

For one process (the index opened here) and then for each shard count S (a local cluster
started for it, S shards of one replica on Ray Serve, this process the router;
graph_store/cluster/serve.py), dense and gnn_ret answer the same queries: the titles of
``--queries`` chunks spread over the index, as the scale benchmark asks them (query vectors
kept, each query's searches not: ``forget_queries(vectors=False)``). Reported per method:
p50 and p95 latency (ms), rounds per query (scatters to the shards: mean and max), bytes the
calls and answers moved per query (mean), whether each top 10 equals one process's; per S,
each shard's resident memory and the router's (now and at its peak: the router is this process
alone, one process's run is a child's). ``--fault SECONDS``: instead, two shards of
two replicas, one replica killed a quarter of the way into SECONDS of gnn_ret queries; the
errors and wrong answers are counted (exit 1 if any). A local cluster shares this machine's cores
and memory: the figures say what the rounds and transfers cost, not how fast more machines
answer.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from hopgraph.evals.bench import save_json
from hopgraph.evals.metrics import percentile
from hopgraph.graph_store import Index
from hopgraph.graph_store.stores.chunk_table import scan_chunks
from hopgraph.graph_store.stores.manifest import read_manifest
from hopgraph.tools import make_retriever

METHODS = ("dense", "gnn_ret")
K = 10


def queries_of(directory: Path, count: int) -> list[str]:
    """Return the titles of ``count`` chunks spread evenly over the index.

    Read in one pass that keeps those titles only: this process is the router measured, and
    a table opened here (every id) would be counted as the router's.
    """
    scan = scan_chunks(directory, read_manifest(directory))
    wanted = set(range(0, len(scan), max(1, len(scan) // count))[:count])
    return [chunk.title for row, chunk in enumerate(scan) if row in wanted]


def one_process(directory: Path, queries: list[str]) -> tuple[dict, float, float]:
    """Run every method on one process's index; return the run, its RSS and peak (MB).

    Called in a child process, so the router's memory measured here is the router's alone.
    """
    from hopgraph.graph_store.cluster.partitions import peak_rss_mb, rss_mb

    with Index.open(directory) as one:
        return run(one, queries, None), rss_mb(), peak_rss_mb()


def run(index: Index, queries: list[str], counted: object | None) -> dict:
    """Time each method over ``queries``; count rounds and bytes when ``counted`` (shards)."""
    index.embed_queries(queries)  # the queries are embedded before the clock starts
    out: dict = {}
    for method in METHODS:
        retriever = make_retriever(method, index)
        retriever.retrieve(queries[0], K)  # warm: graphs and files opened
        times, rounds, moved, tops = [], [], [], []
        for query in queries:
            index.forget_queries(vectors=False)
            before = (counted.rounds, counted.bytes) if counted else (0, 0)
            started = time.perf_counter()
            hits = retriever.retrieve(query, K)
            times.append((time.perf_counter() - started) * 1000)
            if counted:
                rounds.append(counted.rounds - before[0])
                moved.append(counted.bytes - before[1])
            tops.append([h.id for h in hits])
        out[method] = {
            "p50_ms": percentile(times, 50),
            "p95_ms": percentile(times, 95),
            "tops": tops,
        }
        if counted:
            out[method] |= {
                "rounds_mean": float(np.mean(rounds)),
                "rounds_max": int(max(rounds)),
                "bytes_mean": float(np.mean(moved)),
            }
    return out


def under_fault(directory: Path, queries: list[str], seconds: float) -> dict:
    """Kill one of two replicas of shard 0 while gnn_ret answers for ``seconds``; count.

    Two shards of two replicas each; the kill comes a quarter of the way in. Every answer is
    compared with one process's top 10; an exception is an error.
    """
    import threading

    from hopgraph.graph_store.cluster.connect import connected
    from hopgraph.graph_store.cluster.serve import serve_index

    with Index.open(directory) as one:
        gnn = make_retriever("gnn_ret", one)
        expected = {q: [h.id for h in gnn.retrieve(q, K)] for q in queries}
    with connected("local") as ray:
        router = serve_index(directory, 2, replicas=2)
        try:
            named = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
            victim = next(n for n in named if n.startswith("SERVE_REPLICA") and "shard-0" in n)
            killer = threading.Timer(
                seconds / 4, lambda: ray.kill(ray.get_actor(victim, namespace="serve"))
            )
            retriever = make_retriever("gnn_ret", router)
            asked = errors = wrong = 0
            killer.start()
            ends = time.monotonic() + seconds
            while time.monotonic() < ends:
                query = queries[asked % len(queries)]
                router.forget_queries(vectors=False)
                try:
                    wrong += [h.id for h in retriever.retrieve(query, K)] != expected[query]
                except Exception:  # counted: the figure is how many there were
                    errors += 1
                asked += 1
            killer.join()
            after = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
            return {
                "seconds": seconds,
                "queries": asked,
                "errors": errors,
                "wrong": wrong,
                "killed": victim not in after,
                "calls_sent_again": router.shards.shards.retried,
            }
        finally:
            router.close()


def main(argv: list[str] | None = None) -> int:
    """Measure one process, then each shard count; print a row each and save them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="a built index with graphs")
    parser.add_argument("--shards", default="1,2,4", help="shard counts (default 1,2,4)")
    parser.add_argument("--queries", type=int, default=200, help="queries (default 200)")
    parser.add_argument(
        "--fault",
        type=float,
        metavar="SECONDS",
        help="instead: kill one of two replicas of a shard during SECONDS of gnn_ret queries",
    )
    parser.add_argument("--out", type=Path, help="where to save the rows (JSON)")
    parser.add_argument("--label", default="", help="what the run measured (the table's column)")
    parser.add_argument(
        "--series",
        default="",
        help="runs of one commit at several sizes (the cost model projects each process from them)",
    )
    args = parser.parse_args(argv)
    from hopgraph.graph_store.cluster.connect import connected, require_ray
    from hopgraph.graph_store.cluster.partitions import peak_rss_mb, rss_mb

    require_ray()
    from hopgraph.graph_store.cluster.serve import serve_index

    queries = queries_of(args.index, args.queries)
    if args.fault:
        found = under_fault(args.index, queries, args.fault)
        print(json.dumps(found))
        if args.out:
            save_json(args.out, {"index": str(args.index), "fault": found})
        return 0 if found["errors"] == found["wrong"] == 0 and found["killed"] else 1
    rows = []
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
        alone, rss, peak = child.submit(one_process, args.index, queries).result()
    rows.append({"shards": 0, "router_rss_mb": rss, "router_peak_rss_mb": peak})
    rows[-1] |= _summary(alone, alone)
    print(json.dumps(rows[-1]), flush=True)
    for count in [int(s) for s in args.shards.split(",")]:
        with connected("local"):
            router = serve_index(args.index, count)
            try:
                found = run(router, queries, router.shards)
                facts = router.shards.scatter("facts")
                row = {
                    "shards": count,
                    "router_rss_mb": rss_mb(),
                    "router_peak_rss_mb": peak_rss_mb(),
                }
                row |= _summary(found, alone)
                row["shard_rss_mb"] = [f["rss_mb"] for f in facts]
                rows.append(row)
            finally:
                router.close()
        print(json.dumps(rows[-1]), flush=True)
    if args.out:
        with Index.open(args.index) as idx:
            chunks = len(idx.chunks)
        save_json(args.out, {"kind": "serving", "index": str(args.index), "label": args.label,
                             "chunks": chunks, "series": args.series, "queries": len(queries),
                             "rows": rows})  # fmt: skip
    return 0


def _summary(found: dict, alone: dict) -> dict:
    """Return the figures of a run without its tops, and whether they equal one process's."""
    out = {}
    for method, figures in found.items():
        same = [a == b for a, b in zip(figures["tops"], alone[method]["tops"], strict=True)]
        out[method] = {k: v for k, v in figures.items() if k != "tops"}
        out[method]["same_top10"] = float(np.mean(same))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
