"""Render the quality tables of the README and the docs from eval reports, never by hand.

``python -m hopgraph.evals.quality_table`` prints them; ``--write`` puts them between their
markers (``<!-- table:NAME:start -->`` … ``<!-- table:NAME:end -->``) in their documents;
``--from DIR`` first copies the ``report.json`` of named runs (``DIR/DATASET[-paper]/report.json``)
into evals/results/quality/. The test suite renders the
tables from the kept reports and fails when a document's table differs
(tests/unit/test_generated_tables.py).

- ``quality`` (docs/evaluation.md): every method, tuned preset, one row per method and dataset.
- ``presets`` (docs/methods.md): tuned against paper, R@2 / R@5 / R@15 / MRR.
- ``headline`` (README.md): R@5 of dense, hybrid and gnn_ret beside the best published figure.
- ``docsets`` (docs/evaluation.md): the documentation sets, scored by section, from the reports
  kept in evals/results/docsets/ (``hopgraph eval --data evals/docsets/SET``).
- ``startup`` (docs/benchmarks.md): ``python -m hopgraph.evals.bench startup --out FILE``, kept as
  evals/results/bench/startup.json.
- ``embedders`` (docs/evaluation.md): two embedders side by side (evals/embedder_table.py), from
  the reports kept in evals/results/embedders/ (``python -m hopgraph.evals.embedder_table --keep``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "quality"
EMBEDDERS = RESULTS.parent / "embedders"
DATASETS = {
    "musique": "musique",
    "hotpotqa": "hotpotqa",
    "2wiki": "2wiki",
    "nq-dev": "nq-dev",
    "nq": "nq, all dev",
}
"""Report name → the label a table gives it, in table order."""
DEFAULT = "gnn_ret"
"""The method a user gets by default: bold in the tables."""


def load(name: str, results: Path = RESULTS) -> dict[str, Any] | None:
    """Return a kept report (``NAME.json``), or None when it is not kept."""
    path = results / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _label(name: str, report: dict[str, Any]) -> str:
    return f"{DATASETS[name]} ({report['config']['questions']:,} q)"


def _method(name: str) -> str:
    return f"**{name}**" if name == DEFAULT else name


def quality(results: Path = RESULTS) -> str:
    """Render the README's table: R@2/5/10/15, All@2/5, MRR, p50 (query embedding included)."""
    lines = [
        "| dataset | method | R@2 | R@5 | R@10 | R@15 | All@2 | All@5 | MRR | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in DATASETS:
        report = load(name, results)
        if report is None:
            continue
        for n, s in enumerate(report["scores"]):
            r, a = s["recall"], s["all"]
            cells = [r["2"], r["5"], r["10"], r["15"], a["2"], a["5"], s["mrr"]]
            label = _label(name, report) if n == 0 else ""
            lines.append(
                f"| {label} | {_method(s['method'])} | "
                + " | ".join(f"{c:.1f}" for c in cells)
                + f" | {s['latency_p50_ms']:.1f} |"
            )
    return "\n".join(lines)


def presets(results: Path = RESULTS) -> str:
    """Render docs/methods.md's table: each method under both presets, same index and questions."""
    head = ["tuned R@2", "tuned R@5", "tuned R@15", "tuned MRR"]
    head += [h.replace("tuned", "paper") for h in head]
    lines = ["| dataset | method | " + " | ".join(head) + " |", "|---" * (2 + len(head)) + "|"]
    for name in DATASETS:
        tuned, paper = load(name, results), load(f"{name}-paper", results)
        if tuned is None or paper is None:
            continue
        by = {s["method"]: s for s in tuned["scores"]}
        for n, s in enumerate(paper["scores"]):
            cells = [_cells(by[s["method"]]), _cells(s)]
            label = _label(name, tuned) if n == 0 else ""
            lines.append(f"| {label} | {s['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


PUBLISHED_R5 = {"musique": 74.7, "hotpotqa": 96.3, "2wiki": 90.4}
"""HippoRAG 2's published R@5 (Llama-3.3-70B + NV-Embed-v2; ../shared/ANCHORS.md): to beat."""
HEADLINE = {"musique": "MuSiQue", "hotpotqa": "HotpotQA", "2wiki": "2WikiMultiHopQA", "nq": "NQ"}


def headline(results: Path = RESULTS) -> str:
    """Render the README's table: R@5 of the baselines and the default graph method."""
    methods = ("dense", "hybrid", DEFAULT)
    lines = [
        "| dev set | " + " | ".join(methods) + " | best published (HippoRAG 2, 70B LLM) |",
        "|---" * (len(methods) + 2) + "|",
    ]
    for name, label in HEADLINE.items():
        report = load(name, results)
        if report is None:
            continue
        r5 = {s["method"]: s["recall"]["5"] for s in report["scores"]}
        best = max(r5[m] for m in methods)
        cells = [f"**{r5[m]:.1f}**" if r5[m] == best else f"{r5[m]:.1f}" for m in methods]
        published = f"{PUBLISHED_R5[name]:.1f}" if name in PUBLISHED_R5 else "–"
        questions = report["config"]["questions"]
        lines.append(f"| {label} ({questions:,} q) | " + " | ".join(cells) + f" | {published} |")
    return "\n".join(lines)


def embedders(results: Path = RESULTS) -> str:
    """Render evaluation.md's embedder table from the kept runs (datasets in table order)."""
    from .embedder_table import render

    kept = results.parent / "embedders"
    order = [name for name in DATASETS if name != "nq-dev"]
    paths = sorted(
        kept.glob("*.json"), key=lambda p: (order.index(p.stem.split("-", 1)[1]), p.stem)
    )
    return render([json.loads(p.read_text(encoding="utf-8")) for p in paths])


def docsets(results: Path = RESULTS) -> str:
    """Render evaluation.md's documentation-set table; each set's best figure in bold."""
    head = ["R@2", "R@5", "R@10", "All@5", "MRR", "two-section R@5", "p50 ms"]
    lines = ["| set | method | " + " | ".join(head) + " |", "|---" * (len(head) + 2) + "|"]
    for path in sorted((results.parent / "docsets").glob("*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        rows = {
            s["method"]: [s["recall"]["2"], s["recall"]["5"], s["recall"]["10"], s["all"]["5"],
                          s["mrr"], s["by_hops"].get("2", float("nan"))]
            for s in report["scores"]
        }  # fmt: skip
        best = [max(r[i] for r in rows.values()) for i in range(len(head) - 1)]
        for n, s in enumerate(report["scores"]):
            cells = [f"**{v:.1f}**" if v == b else f"{v:.1f}"
                     for v, b in zip(rows[s["method"]], best, strict=True)]  # fmt: skip
            label = f"{path.stem} ({report['config']['questions']} q)" if n == 0 else ""
            lines.append(
                f"| {label} | {_method(s['method'])} | " + " | ".join(cells)
                + f" | {s['latency_p50_ms']:.1f} |"
            )  # fmt: skip
    return "\n".join(lines)


STARTUP = {
    "--help": ("hopgraph --help", 0.3),
    "retrieve bm25": ("hopgraph retrieve QUESTION --method bm25", 1.0),
    "retrieve dense": ("hopgraph retrieve QUESTION --method dense", 3.5),
    "check": ("hopgraph check", 1.0),
}
"""The start-up benchmark's commands, as the table names them, and their targets (issue 36)."""


def startup(results: Path = RESULTS) -> str:
    """Render benchmarks.md's start-up table from the kept benchmark report."""
    report = json.loads((results.parent / "bench" / "startup.json").read_text(encoding="utf-8"))
    lines = ["| command | median | slowest | target |", "|---|---|---|---|"]
    for key, (command, target) in STARTUP.items():
        timing = report["commands"][key]
        lines.append(
            f"| `{command}` | **{timing['median_s']:.2f} s** | {timing['max_s']:.2f} s "
            f"| ≤ {target:.1f} s |"
        )
    return "\n".join(lines)


def _cells(s: dict[str, Any]) -> str:
    r = s["recall"]
    return " | ".join(f"{v:.1f}" for v in (r["2"], r["5"], r["15"], s["mrr"]))


TABLES: dict[str, tuple[Callable[..., str], str]] = {
    "quality": (quality, "docs/evaluation.md"),
    "presets": (presets, "docs/methods.md"),
    "headline": (headline, "README.md"),
    "embedders": (embedders, "docs/evaluation.md"),
    "startup": (startup, "docs/benchmarks.md"),
    "docsets": (docsets, "docs/evaluation.md"),
}


def markers(name: str) -> re.Pattern[str]:
    """Return the pattern of a table's block in its document (the markers stay)."""
    return re.compile(
        rf"(<!-- table:{name}:start -->\n).*?(\n<!-- table:{name}:end -->)", flags=re.DOTALL
    )


def block(document: str, name: str) -> str | None:
    """Return the table held between a document's markers, or None without them."""
    found = markers(name).search(document)
    return found.group(0).split("\n", 1)[1].rsplit("\n", 1)[0] if found else None


def write(root: Path = ROOT, results: Path = RESULTS) -> None:
    """Put every table between its markers in its document."""
    for name, (render, document) in TABLES.items():
        path = root / document
        text = path.read_text(encoding="utf-8")
        if block(text, name) is None:
            raise SystemExit(f"{path}: no <!-- table:{name}:start --> … end --> markers")
        table = render(results)
        start, end = markers(name).search(text).span()  # type: ignore[union-attr]
        head, tail = text[start:end].split("\n", 1)[0], text[start:end].rsplit("\n", 1)[1]
        path.write_text(f"{text[:start]}{head}\n{table}\n{tail}{text[end:]}", encoding="utf-8")


def keep(runs: Path, results: Path = RESULTS) -> None:
    """Copy each named run's report.json into ``results`` (DATASET.json, DATASET-paper.json)."""
    results.mkdir(parents=True, exist_ok=True)
    for name in DATASETS:
        for suffix in ("", "-paper"):
            report = runs / f"{name}{suffix}" / "report.json"
            if report.is_file():
                shutil.copyfile(report, results / f"{name}{suffix}.json")


def main(argv: list[str] | None = None) -> int:
    """Print the tables, or keep runs' reports and write the tables into the documents."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="runs", type=Path, help="eval runs to keep first")
    parser.add_argument("--write", action="store_true", help="write the documents' tables")
    args = parser.parse_args(argv)
    if args.runs:
        keep(args.runs)
    if args.write:
        write()
    for name, (render, document) in TABLES.items():
        print(f"{name} ({document}):\n{render()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
