"""Benchmarks: indexing throughput against the embedder alone, and query latency per method.

Run ``python -m hopgraph.evals.bench --data ../shared/data/2wiki`` (indexing, queries) and
``python -m hopgraph.evals.bench.graphs --synthetic 100000`` (graphs); see ``--help``.
"""

import json
from pathlib import Path
from typing import Any


def save_json(path: Path, data: Any) -> None:
    """Write benchmark figures as indented JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
