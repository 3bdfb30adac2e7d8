"""The partitioned build on a Ray cluster beside the build of one process, on a corpus.

    python -m hopgraph.evals.bench.cluster --data ../shared/data/musique --partitions 1,2,4 \
        --out evals/results/bench/cluster-musique.json

Each build is its own command (`hopgraph index`; `--cluster local --partitions P` for the
cluster's), started cold as a user's is. Reported: wall time, the driver's peak RSS (for one
process, the command's own; for the cluster, the manifest's ``driver_peak_rss_mb``) and the
largest peak RSS of a worker that wrote partitions (``worker_peak_rss_mb``), and whether the
cluster's index holds the same chunks in the same order. A local cluster shares this machine's
cores: the figures say what partitions cost and how memory divides between processes, not how
fast more machines build.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hopgraph.evals.bench import save_json


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
    else:  # the only child yet: its peak (the forked table writer's included) is the build's
        row["driver_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return row


def main(argv: list[str] | None = None) -> int:
    """Build the corpus once in one process and once per partition count; print and save."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset folder (corpus.jsonl)")
    parser.add_argument("--partitions", default="1,2,4", help="partition counts (default 1,2,4)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="embedding model")
    parser.add_argument("--out", type=Path, help="where to save the rows (JSON)")
    args = parser.parse_args(argv)
    corpus = args.data / "corpus.jsonl"
    counts = [int(p) for p in args.partitions.split(",")]
    with tempfile.TemporaryDirectory(prefix="hopgraph-cluster-bench-") as tmp:
        rows = [build(corpus, Path(tmp) / "one", args.model, None)]
        chunks = (Path(tmp) / "one" / "g000001" / "chunks.jsonl").read_bytes()
        for count in counts:
            rows.append(build(corpus, Path(tmp) / f"p{count}", args.model, count))
            rows[-1]["same_chunks"] = (
                Path(tmp) / f"p{count}/g000001/chunks.jsonl"
            ).read_bytes() == chunks
    for row in rows:
        print(json.dumps(row))
    if args.out:
        save_json(args.out, {"data": str(args.data), "model": args.model, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
