"""Start-up benchmark: wall time of whole `hopgraph` commands, each a fresh process.

``python -m hopgraph.evals.bench startup [--index DIR] [--runs 5] [--out FILE]``

Runs `hopgraph --help`, `retrieve --method bm25`, `retrieve --method dense` and `check` on an
index (default: the bundled sample, indexed and graph-built first in a temporary folder) as
separate processes, ``--runs`` times each after one untimed warm-up run (which also exports
the query encoder once, as a user's first query does), and reports the median and the
slowest. Targets on an idle 2-core machine (issue 36): --help ≤ 0.3 s, bm25 ≤ 1.0 s,
check ≤ 1.0 s, dense ≤ 3.5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hopgraph.evals.bench import save_json

TARGETS = {"--help": 0.3, "retrieve bm25": 1.0, "retrieve dense": 3.5, "check": 1.0}
QUERY = "When did military instruction start at the place where Larry Alcala was educated?"


def commands(index: Path) -> dict[str, list[str]]:
    """Return each timed command's arguments (after ``hopgraph``)."""
    where = ["--index", str(index)]
    return {
        "--help": ["--help"],
        "retrieve bm25": ["retrieve", QUERY, "--method", "bm25", *where],
        "retrieve dense": ["retrieve", QUERY, "--method", "dense", *where],
        "check": ["check", *where],
    }


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Run ``hopgraph ARGV`` once; return its wall time (a failure stops the benchmark)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hopgraph", *argv], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"`hopgraph {' '.join(argv)}` failed:\n{done.stderr[-2000:]}")
    return seconds


def sample_index(folder: Path, env: dict[str, str]) -> Path:
    """Index the bundled sample and build its graphs (untimed)."""
    index = folder / "sample-index"
    argv = [sys.executable, "-m", "hopgraph", "demo", "--index", str(index), "-q"]
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return index


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table; returns 1 if a median misses its target."""
    parser = argparse.ArgumentParser(prog="python -m hopgraph.evals.bench startup",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--index", type=Path, help="index to run on (default: the sample's)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command (5)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory() as scratch:
        index = args.index or sample_index(Path(scratch), env)
        rows = {}
        for name, command in commands(index).items():
            timed(command, env)  # warm-up: the page cache, and the encoder's one export
            runs = [timed(command, env) for _ in range(args.runs)]
            rows[name] = {"median_s": statistics.median(runs), "max_s": max(runs), "runs": runs}
    print(f"{'command':<16} {'median':>8} {'slowest':>8} {'target':>8}")
    for name, row in rows.items():
        mark = "" if row["median_s"] <= TARGETS[name] else "  MISSED"
        print(f"{name:<16} {row['median_s']:7.2f}s {row['max_s']:7.2f}s "
              f"{TARGETS[name]:7.1f}s{mark}")  # fmt: skip
    if args.out:
        save_json(args.out, {"cpus": os.cpu_count(), "runs": args.runs, "commands": rows})
    return int(any(row["median_s"] > TARGETS[name] for name, row in rows.items()))


if __name__ == "__main__":
    sys.exit(main())
