"""Tell whether eval reports give the same figures: every score but the timings.

    python -m hopgraph.evals.same_scores KEPT.json NEW.json [KEPT.json NEW.json ...]

For a change that must not move retrieval (a refactor, a move of modules): re-run ``hopgraph
eval`` as the kept report was run and compare its ``report.json`` with the kept one (e.g.
evals/results/quality/DATASET.json). Recall@k, All@k, MRR, by-hops and every other score must
be equal to the last digit; latencies are left out. Exits 1 when a pair differs, naming each
method and figure that moved.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def scores(report: dict[str, Any]) -> dict[str, Any]:
    """Return a report's scores by method, timings left out."""
    return {row["method"]: _untimed(row) for row in report["scores"]}


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.startswith("latency")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def differences(kept: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Return a line per method or figure whose value differs between two reports."""
    a, b = scores(kept), scores(new)
    out = [f"{m}: only in the kept report" for m in a if m not in b]
    out += [f"{m}: only in the new report" for m in b if m not in a]
    for method in a.keys() & b.keys():
        for figure in sorted(a[method].keys() | b[method].keys()):
            was, now = a[method].get(figure), b[method].get(figure)
            if was != now:
                out.append(f"{method} {figure}: {was} -> {now}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Compare each pair of reports; print IDENTICAL or what differs."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.same_scores", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("reports", nargs="+", type=Path, help="pairs: KEPT.json NEW.json")
    args = parser.parse_args(argv)
    if len(args.reports) % 2:
        parser.error("give the reports in pairs: KEPT.json NEW.json")
    differ = False
    for kept, new in zip(args.reports[::2], args.reports[1::2], strict=True):
        lines = differences(*(json.loads(p.read_text(encoding="utf-8")) for p in (kept, new)))
        print(f"{new} against {kept}: {'IDENTICAL' if not lines else 'DIFFERENT'}")
        for line in lines:
            print(f"  {line}")
        differ = differ or bool(lines)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
