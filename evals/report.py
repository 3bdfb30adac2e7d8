"""Print and save evaluation results: a table for people, JSON and JSONL for tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .runner import MethodScores
from .tables import render_table


def format_table(scores: Sequence[MethodScores]) -> str:
    """Render one row per method: Recall@k, All@k, MRR and latency."""
    if not scores:
        return "(no methods)"
    ks = list(scores[0].recall)
    head = (
        ["method"] + [f"R@{k}" for k in ks] + [f"All@{k}" for k in ks] + ["MRR", "p50 ms", "p95 ms"]
    )
    rows = [
        [s.method]
        + [f"{s.recall[k]:.1f}" for k in ks]
        + [f"{s.all[k]:.1f}" for k in ks]
        + [f"{s.mrr:.1f}", f"{s.latency_p50_ms:.1f}", f"{s.latency_p95_ms:.1f}"]
        for s in scores
    ]
    table = render_table(head, rows)
    hops = [s for s in scores if s.by_hops]
    if not hops:
        return table
    counts = sorted({h for s in hops for h in s.by_hops})
    by_hops = render_table(
        ["method"] + [f"{h}-hop R@5" for h in counts],
        [[s.method] + [f"{s.by_hops.get(h, 0.0):.1f}" for h in counts] for s in hops],
    )
    return f"{table}\n\n{by_hops}"


def write_report(
    out: Path,
    config: dict[str, Any],
    scores: Sequence[Any],
    rows: Sequence[Any],
) -> tuple[Path, Path]:
    """Write ``report.json`` (config once, then scores) and ``questions.jsonl`` (one row each).

    Scores and rows are dataclasses: retrieval's or answering's.
    """
    out.mkdir(parents=True, exist_ok=True)
    report = out / "report.json"
    report.write_text(
        json.dumps({"config": config, "scores": [asdict(s) for s in scores]}, indent=2) + "\n",
        encoding="utf-8",
    )
    per_question = out / "questions.jsonl"
    with per_question.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")
    return report, per_question
