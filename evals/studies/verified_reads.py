"""What verifying reads costs (issue 73, Deliver 1): start-up and p95 on one index.

``python -m hopgraph.evals.studies.verified_reads --index DIR [--questions FILE]``

Opens the index, embeds every question first (the model and the query vectors are not what is
timed), then for dense and gnn_ret times the first retrieval (what a method loads, and the
blocks it verifies on first use) and the p50 / p95 of the rest. Run it with the code before the
block checksums and with this code, each on the same index in turn (``PYTHONPATH`` naming a
snapshot of each, as docs/scale-measurements.md's A/B runs do): the difference is the cost.
An index written before block checksums is verified a whole file at a time on first use;
after its next write (or `record_files` run on it), a block at a time.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hopgraph.graph_store import Index
from hopgraph.tools import make_retriever

QUESTIONS = Path(__file__).resolve().parents[3] / "shared" / "data" / "musique" / "dev.jsonl"


def measure(index_dir: Path, questions: list[str]) -> dict:
    """Return the open's time, each method's first retrieval and its p50 / p95 after it."""
    started = time.perf_counter()
    index = Index.open(index_dir)
    out: dict = {"index": str(index_dir), "open_s": round(time.perf_counter() - started, 3)}
    with index:
        for question in questions:
            index.embed_query(question)
        for method in ("dense", "gnn_ret"):
            retriever = make_retriever(method, index)
            started = time.perf_counter()
            retriever.retrieve(questions[0], 10)
            out[f"{method}_first_s"] = round(time.perf_counter() - started, 3)
            times = []
            for question in questions[1:]:
                started = time.perf_counter()
                retriever.retrieve(question, 10)
                times.append((time.perf_counter() - started) * 1000)
            out[f"{method}_p50_ms"] = round(float(np.percentile(times, 50)), 2)
            out[f"{method}_p95_ms"] = round(float(np.percentile(times, 95)), 2)
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the figures of one index as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="the index to time")
    parser.add_argument(
        "--questions",
        type=Path,
        default=QUESTIONS,
        help="JSONL with a question field a line (default: shared/data's MuSiQue dev)",
    )
    args = parser.parse_args(argv)
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    print(json.dumps(measure(args.index, questions)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
