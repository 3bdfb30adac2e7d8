"""The partitioned build on a Ray cluster beside the build of one process, on a corpus.

    python -m hopgraph.evals.bench.cluster --data ../shared/data/musique --partitions 1,2,4 \
        --out evals/results/bench/cluster-musique.json
    python -m hopgraph.evals.bench.cluster --synthetic 1M --model hashing --no-single \
        --partitions 8,4,2,1 --workdir DIR --out evals/results/scale/cluster-1m.json

Each build is its own command (`hopgraph index`; `--cluster local --partitions P` for the
cluster's), started cold as a user's is. Reported: wall time, the driver's peak RSS (for one
process, the command's own; for the cluster, the manifest's ``driver_peak_rss_mb``) and the
largest peak RSS of a worker that wrote partitions (``worker_peak_rss_mb``), and whether the
cluster's index holds the same chunks in the same order. ``--synthetic N``: the scale
benchmark's passages (hopgraph.evals.bench.graphs), written once as a JSONL corpus; each row is
printed as its build ends. ``--partitions-only``: each P runs only the partition tasks, in this
process as the driver (what a worker holds depends on P; the reduce and Chroma's rows are the
same work whatever P). ``--catalog-only``: each P only reads the corpus's catalog and cuts it
into P parts, in a fresh process (what a build's driver holds of the corpus; no cluster). A
local cluster shares this machine's
cores: the figures say what partitions cost and how memory divides between processes, not how
fast more machines build.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson

from hopgraph.evals.bench import save_json
from hopgraph.evals.bench.graphs import synthetic_corpus
from hopgraph.evals.bench.scale import parse_size


def build(corpus: Path, index: Path, model: str, partitions: int | None) -> dict[str, float]:
    """Run one `hopgraph index` and return its wall time and peak memory."""
    argv = [sys.executable, "-m", "hopgraph", "index", str(corpus), "--index", str(index)]
    argv += ["--model", model, "-q", "--force"]
    if partitions:
        argv += ["--cluster", "local", "--partitions", str(partitions)]
    started = time.perf_counter()
    subprocess.run(argv, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - started
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    timings = manifest["timings"]
    row = {"partitions": partitions or 0, "wall_s": wall, "embed_s": timings["embed_seconds"]}
    if partitions:
        row["driver_peak_rss_mb"] = timings["driver_peak_rss_mb"]
        row["worker_peak_rss_mb"] = timings["worker_peak_rss_mb"]
        row["rows_peak_rss_mb"] = timings.get("rows_peak_rss_mb", 0.0)
    else:  # the only child yet: its peak (the forked table writer's included) is the build's
        row["driver_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return row


def catalog_only(corpus: Path, count: int) -> dict[str, float]:
    """Read ``corpus``'s catalog and cut it into ``count`` parts in a fresh process."""
    context = multiprocessing.get_context("spawn")  # a peak of its own, not this process's
    with ProcessPoolExecutor(1, mp_context=context) as child:
        return child.submit(_catalog_and_plan, corpus, count).result()


def _catalog_and_plan(corpus: Path, count: int) -> dict[str, float]:
    from hopgraph.graph_store.cluster.build import plan_parts
    from hopgraph.graph_store.cluster.partitions import peak_rss_mb
    from hopgraph.graph_store.documents.catalog import catalog_jsonl

    started = time.perf_counter()
    parts = plan_parts(catalog_jsonl(corpus), count)
    return {
        "partitions": len(parts),
        "catalog_only": 1.0,
        "wall_s": time.perf_counter() - started,
        "driver_peak_rss_mb": peak_rss_mb(),
    }


def partitions_only(corpus: Path, work: Path, model: str, count: int) -> dict[str, float]:
    """Run only a build's partition tasks (no reduce, no Chroma); return time and memory.

    What each worker holds depends on P; the reduce and Chroma's task are the same work
    whatever P, measured by the full builds.
    """
    from hopgraph.core.settings import IndexSettings
    from hopgraph.graph_store.cluster.build import plan_parts, run_partitions
    from hopgraph.graph_store.cluster.connect import connected
    from hopgraph.graph_store.cluster.partitions import peak_rss_mb
    from hopgraph.graph_store.documents.catalog import catalog_jsonl

    target = work / f"parts{count}"
    shutil.rmtree(target, ignore_errors=True)
    started = time.perf_counter()
    catalog = catalog_jsonl(corpus)
    with connected("local") as ray:
        parts = plan_parts(catalog, count)
        written = run_partitions(
            ray, parts, target, "g000001", IndexSettings(model=model), 0, False
        )
    wall = time.perf_counter() - started
    shutil.rmtree(target)
    peaks = [w.peak_rss_mb for w in written]
    return {
        "partitions": count,
        "partitions_only": 1.0,
        "wall_s": wall,
        "embed_s": max(w.embed_seconds for w in written),
        "driver_peak_rss_mb": peak_rss_mb(),
        "worker_peak_rss_mb": max(peaks),
        "worker_peak_rss_mb_min": min(peaks),
    }


def synthetic(size: int, folder: Path) -> Path:
    """Write ``size`` synthetic one-chunk documents (the scale benchmark's) as a JSONL corpus."""
    path = folder / "corpus.jsonl"
    if path.is_file():  # kept from an earlier run in the same --workdir
        return path
    chunks, _ = synthetic_corpus(size, dimension=2)  # its vectors unused: the model embeds
    with path.open("wb") as out:
        for c in chunks:
            out.write(orjson.dumps({"id": c.id, "title": c.title, "text": c.text}) + b"\n")
    return path


def main(argv: list[str] | None = None) -> int:
    """Build the corpus once in one process and once per partition count; print and save."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, help="dataset folder (corpus.jsonl)")
    source.add_argument(
        "--synthetic", type=parse_size, help="that many synthetic passages (e.g. 1M)"
    )
    parser.add_argument("--partitions", default="1,2,4", help="partition counts (default 1,2,4)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="embedding model")
    parser.add_argument("--no-single", action="store_true", help="skip the build of one process")
    parser.add_argument("--workdir", type=Path, help="keep the corpus and indexes here")
    parser.add_argument(
        "--partitions-only",
        action="store_true",
        help="run only the partition tasks of each cluster build (one process, no reduce)",
    )
    parser.add_argument(
        "--catalog-only",
        action="store_true",
        help="only read the corpus's catalog and cut it into P parts (a driver's share; no build)",
    )
    parser.add_argument(
        "--keep", action="store_true",
        help="keep each cluster build's index in --workdir (pP), for evals.bench.cluster_graphs",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="where to save the rows (JSON)")
    args = parser.parse_args(argv)
    counts = [int(p) for p in args.partitions.split(",")]
    with tempfile.TemporaryDirectory(prefix="hopgraph-cluster-bench-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        corpus = synthetic(args.synthetic, work) if args.synthetic else args.data / "corpus.jsonl"
        single = not (args.no_single or args.catalog_only)  # a catalog alone needs no build
        rows = [build(corpus, work / "one", args.model, None)] if single else []
        for count in counts:
            if args.catalog_only:
                rows.append(catalog_only(corpus, count))
                print(json.dumps(rows[-1]), flush=True)
                continue
            if args.partitions_only:
                rows.append(partitions_only(corpus, work, args.model, count))
                print(json.dumps(rows[-1]), flush=True)
                continue
            rows.append(build(corpus, work / f"p{count}", args.model, count))
            if not args.no_single:
                one, this = (work / name / "g000001/chunks.jsonl" for name in ("one", f"p{count}"))
                rows[-1]["same_chunks"] = this.read_bytes() == one.read_bytes()
            print(json.dumps(rows[-1]), flush=True)
            if not args.keep:
                shutil.rmtree(work / f"p{count}")  # the disk of the next
    what = str(args.data) if args.data else f"synthetic {args.synthetic}"
    if args.out:
        save_json(args.out, {"data": what, "model": args.model, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
