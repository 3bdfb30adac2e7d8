"""The benchmarks run end to end at a tiny size (their figures are checked by reading them)."""

import json
import subprocess
import sys


def test_the_scale_benchmark_runs_every_phase(tmp_path):
    out = tmp_path / "scale.json"
    command = [
        sys.executable,
        "-m",
        "hopgraph.evals.bench",
        "scale",
        "--sizes",
        "2k",
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [row] = json.loads(out.read_text(encoding="utf-8"))
    assert row["size"] == 2000 and row["graph_counts"]["chunks"] == 2000
    assert row["add_1000_s"] > 0 and row["delete_1000_s"] > 0
    assert row["semantic_recall_at_10"] == 1.0  # 2,000 chunks: the exact search
    timed = {"dense", "gnn_ret", "gnn_ret_dense", "dense_exact", "gnn_ret_exact"}
    assert set(row["latency_ms"]) == timed
    assert row["approximate_auto"] is False and row["ivf_recall_at_10"] == 1.0  # no IVF at 2k
    first, second = row["serving"]["servers"]
    assert 0 < first["pss_mb"] <= first["rss_mb"] and second["shared_mb"] > 0
