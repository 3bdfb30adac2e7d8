"""Render the guard's acceptance table (issue 37) from `hopgraph eval` runs, never by hand.

``python -m hopgraph.evals.rendering.guard --before runs/g/*-off --after runs/g/*-selective``

``--before``: eval folders run with ``--guard off`` (each graph method's own ranking, the
"pre-guard" figures); ``--after``: the same sets and methods with the guard to judge. Per
multi-hop set and graph method: R@2 before → after. NQ is cut into its odd (A) and even (B)
questions, as the guard study cuts it; each half shows R@2 / MRR after the guard against dense.
A ✗ marks a figure outside the issue's bound: multi-hop R@2 more than 1 point below its
pre-guard figure, NQ R@2 or MRR more than 1 point below dense on either half.

``--keep`` writes what the table needs (per question: R@2 and the reciprocal rank, by method) to
evals/results/guard/SET-before.json and SET-after.json, whence docs/methods.md's table is
rendered (:func:`kept`, evals/rendering/docs.py) and checked by the unit suite.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TOLERANCE = 1.0
"""Points a figure may fall short of its bound (the issue's "within 1 point")."""


KEPT = Path(__file__).resolve().parents[1] / "results" / "guard"


def per_question(run: Path) -> dict[str, list[dict[str, Any]]]:
    """Return a run's per-question rows by method, in question order."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for line in (run / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rows.setdefault(row["method"], []).append(row)
    return rows


def mean(rows: list[dict[str, Any]], metric: str) -> float:
    """R@2 (``"2"``) or MRR (``"rr"``) over ``rows``, in percent."""
    values = [r["rr"] if metric == "rr" else r["recall"][metric] for r in rows]
    return 100 * sum(values) / len(values)


def dataset(run: Path) -> str:
    """Return the name of the dataset a run scored."""
    config = json.loads((run / "report.json").read_text(encoding="utf-8"))["config"]
    return Path(config["data"]).name


def mark(ok: bool) -> str:
    """Return the sign of a figure outside its bound."""
    return "" if ok else " ✗"


def render(before: list[Path], after: list[Path]) -> str:
    """Return the Markdown table of the guard's effect and whether each bound holds."""
    old = {dataset(r): per_question(r) for r in before}
    new = {dataset(r): per_question(r) for r in after}
    return table(old, new)


def table(old: dict[str, dict], new: dict[str, dict]) -> str:
    """Render the table from per-question rows by dataset and method (before, after)."""
    before_methods = next(iter(old.values()))
    methods = [m for m in next(iter(new.values())) if m != "dense" and m in before_methods]
    sets = [s for s in new if s in old]
    head = "| method | " + " | ".join(
        f"{s} A / B: R@2 / MRR" if s.startswith("nq") else f"{s} R@2" for s in sets
    )
    lines = [head + " |", "|---" * (1 + len(sets)) + "|"]
    for method in ["dense", *methods]:
        cells = [_cell(old[s], new[s], method, s.startswith("nq")) for s in sets]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def keep(before: list[Path], after: list[Path], kept: Path = KEPT) -> None:
    """Write each run's per-question R@2 and reciprocal rank by method (a few hundred KB)."""
    kept.mkdir(parents=True, exist_ok=True)
    for side, runs in (("before", before), ("after", after)):
        for run in runs:
            rows = {
                method: {"r2": [round(r["recall"]["2"], 4) for r in found],
                         "rr": [round(r["rr"], 4) for r in found]}
                for method, found in per_question(run).items()
            }  # fmt: skip
            out = kept / f"{dataset(run)}-{side}.json"
            out.write_text(json.dumps({"dataset": dataset(run), "methods": rows}) + "\n")


SETS = ("musique", "hotpotqa", "2wiki", "nq")


def kept(folder: Path = KEPT) -> str:
    """Render the table from the kept per-question figures (datasets in table order)."""
    sides: dict[str, dict[str, dict]] = {"before": {}, "after": {}}
    for side, found in sides.items():
        for name in SETS:
            held = json.loads((folder / f"{name}-{side}.json").read_text(encoding="utf-8"))
            found[name] = {
                method: [
                    {"recall": {"2": r2}, "rr": rr} for r2, rr in zip(v["r2"], v["rr"], strict=True)
                ]
                for method, v in held["methods"].items()
            }
    return table(sides["before"], sides["after"])


def _cell(old: dict, new: dict, method: str, single_hop: bool) -> str:
    if method not in new:
        return "–"
    if not single_hop:
        was, now = mean(old[method], "2"), mean(new[method], "2")
        return f"{was:.1f} → {now:.1f}{mark(now >= was - TOLERANCE)}"
    halves = []
    for half in (slice(0, None, 2), slice(1, None, 2)):
        parts = []
        for metric in ("2", "rr"):
            dense, now = mean(new["dense"][half], metric), mean(new[method][half], metric)
            parts.append(f"{now:.1f}{mark(now >= dense - TOLERANCE)}")
        halves.append(" / ".join(parts))
    return " ; ".join(halves)


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, nargs="+", required=True, help="--guard off runs")
    parser.add_argument("--after", type=Path, nargs="+", required=True, help="runs to judge")
    parser.add_argument("--keep", action="store_true", help="keep them for docs/methods.md")
    args = parser.parse_args(argv)
    if args.keep:
        keep(args.before, args.after)
    print(render(args.before, args.after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
