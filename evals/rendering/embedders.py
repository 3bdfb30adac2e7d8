"""Render the embedder comparison from `hopgraph eval` reports, never by hand.

``python -m hopgraph.evals.rendering.embedders runs/embedders/minilm-* runs/embedders/mpnet-*``
(``--keep``: copy them to evals/results/embedders/ first, whence ``doc_tables --write`` renders
docs/evaluation.md's table; the unit suite checks it)

Each argument is an eval output folder (report.json); the index it names gives the build
figures (its manifest's index, embedding, graph and triple-embedding seconds). Prints one
Markdown table: per dataset and method, R@2 / R@5 / MRR and query p95, embedders side by side.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def load(run: Path) -> dict[str, Any]:
    """Return a run's report with its index's build timings (when the index is still there)."""
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    manifest = Path(report["config"]["index"]) / "manifest.json"
    timings = {}
    if manifest.is_file():
        held = json.loads(manifest.read_text(encoding="utf-8"))
        timings = dict(held.get("timings", {}))
        graph = (held.get("graph") or {}).get("timings", {})
        timings["graph_seconds"] = graph.get("extract_seconds", 0) + graph.get("graph_seconds", 0)
        timings["triple_seconds"] = graph.get("triple_embed_seconds", 0)
    return {**report, "timings": timings}


def render(runs: list[dict[str, Any]]) -> str:
    """Return the Markdown table of ``runs`` grouped by dataset, embedders side by side."""
    models = list(dict.fromkeys(Path(r["config"]["settings"]["model"]).name for r in runs))
    datasets = list(dict.fromkeys(Path(r["config"]["data"]).name for r in runs))
    by = {(Path(r["config"]["data"]).name, Path(r["config"]["settings"]["model"]).name): r
          for r in runs}  # fmt: skip
    head = "| set | method | " + " | ".join(f"{m}: R@2 / R@5 / MRR, p95 ms" for m in models) + " |"
    lines = [head, "|" + "---|" * (2 + len(models))]
    for data in datasets:
        builds = []
        for model in models:
            timings = by.get((data, model), {}).get("timings", {})
            if timings:
                builds.append(f"{model}: index {timings['build_seconds']:.0f} s "
                              f"(embedding {timings['embed_seconds']:.0f} s), "
                              f"graphs {timings['graph_seconds']:.0f} s, "
                              f"triple vectors {timings['triple_seconds']:.0f} s")  # fmt: skip
        methods = list(dict.fromkeys(s["method"] for m in models
                                     for s in by.get((data, m), {}).get("scores", [])))  # fmt: skip
        for n, method in enumerate(methods):
            cells = []
            for model in models:
                found = [s for s in by.get((data, model), {}).get("scores", [])
                         if s["method"] == method]  # fmt: skip
                if not found:
                    cells.append("–")
                    continue
                s = found[0]
                cells.append(f"{s['recall']['2']:.1f} / {s['recall']['5']:.1f} / {s['mrr']:.1f}, "
                             f"{s['latency_p95_ms']:.1f}")  # fmt: skip
            label = f"{data} ({'; '.join(builds)})" if n == 0 and builds else ""
            lines.append(f"| {label} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


KEPT = Path(__file__).resolve().parents[1] / "results" / "embedders"


def main(argv: list[str] | None = None) -> int:
    """Print the table of the runs named on the command line (``--keep``: keep them first)."""
    args = list(sys.argv[1:] if argv is None else argv)
    keep = "--keep" in args
    named = [p for p in map(Path, args) if (p / "report.json").is_file()]  # not logs, not --keep
    runs = [load(p) for p in named]
    if not runs:
        raise SystemExit(__doc__)
    if keep:  # the report with its index's timings, as the docs' table is rendered from it
        KEPT.mkdir(parents=True, exist_ok=True)
        for path, run in zip(
            [p for p in named if (p / "report.json").is_file()], runs, strict=True
        ):
            (KEPT / f"{path.name}.json").write_text(json.dumps(run, indent=1) + "\n")
    print(render(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
