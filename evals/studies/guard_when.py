"""When should the no-harm guard keep dense retrieval's first chunk? A study on dev splits.

``python -m hopgraph.evals.studies.guard_when --data ../shared/data/musique --data ... [--method
gnn_ret]``

For every question, the method is run without the guard (``keep=0``) and dense retrieval's
exact top three are read; each candidate rule then decides, per question, whether dense's first
chunk is put first (the guard as tools/guards/guard.py applies it, keep 2 within its margin), and
the resulting R@2 / R@5 / MRR are computed offline. Rules: never, always (today's tuned
guard), and "keep when dense is confident": the first chunk's cosine lead over the second
at least ``gap``, and the selective guard (tools/guards/guard.py): keep unless the hop classifier
calls the question multi-hop (p ≥ t) and dense is unsure (lead < gap). NQ's dev split is cut in
two halves (odd / even questions): thresholds are chosen on the multi-hop sets and the first
half (A) only, and reported on the second (B). The classifier was fitted on A, so with
``--train-data`` A's probabilities are out-of-fold (five refits, each without a fifth of A),
as unseen questions would get them.

The figures it makes: docs/methods.md, "No harm: the guard".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import recall_at_k, reciprocal_rank
from hopgraph.evals.runner import eval_index
from hopgraph.evals.studies.hop_classifier import fit, training_questions
from hopgraph.tools import make_retriever
from hopgraph.tools.guards.guard import CONFIDENT, KEEP, MARGIN, aside
from hopgraph.tools.guards.hop_classifier import shipped

PROBABILITIES = [0.2, 0.3, 0.5]
FIRSTS = [0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8]
GAPS = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.12, 0.15, 0.2]


@dataclass
class Case:
    """One question: gold documents, the unguarded ranking, dense's top chunks."""

    gold: list[str]
    question: str
    ranked: list[str]  # the method's documents without the guard, best first
    dense: list[tuple[str, str, float]]  # (chunk id, document id, cosine), best first
    multi_hop: float = 0.0  # the hop classifier's probability (set by main)

    def guarded(self, keep: int, floor: int = 0, margin: float = MARGIN) -> list[str]:
        """Return the documents in order with the guard keeping up to ``keep`` (tools/guards/).

        ``keep`` 0 with a ``floor``: the guard stands aside, but dense's first document ranks no
        lower than ``floor``. ``margin``: the guard's for a second chunk (IIER's tuned: 0.15).
        """
        if not keep and floor and self.dense:
            first, rest = self.dense[0][1], [d for d in self.ranked if d != self.dense[0][1]]
            if first in self.ranked[:floor]:
                return self.ranked
            return [*rest[: floor - 1], first, *rest[floor - 1 :]]
        if not keep or not self.dense:
            return self.ranked
        first = self.dense[0][2]
        anchors = [d for _, d, s in self.dense[:keep] if first - s < margin or s == first]
        anchors = list(dict.fromkeys(anchors))
        return [*anchors, *(d for d in self.ranked if d not in anchors)]

    @property
    def lead(self) -> float:
        """Dense's confidence: the first chunk's cosine minus the second's."""
        return self.dense[0][2] - self.dense[1][2] if len(self.dense) > 1 else 1.0


def cases(data: Path, method: str, limit: int | None, store: Path | None) -> list[Case]:
    """Run the method unguarded and dense on every dev question (kept in ``store``, if given)."""
    saved = store / f"{data.name}-{method}-{limit}.json" if store else None
    if saved is not None and saved.is_file():
        rows = json.loads(saved.read_text(encoding="utf-8"))
        questions = load_questions(data, "dev")[:limit]  # (rows kept before they had them)
        return [
            Case(
                r["gold"],
                r.get("question", q.question),
                r["ranked"],
                [tuple(d) for d in r["dense"]],
            )
            for r, q in zip(rows, questions, strict=True)
        ]
    found = _run(data, method, limit)
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps([c.__dict__ for c in found]), encoding="utf-8")
    return found


def _run(data: Path, method: str, limit: int | None) -> list[Case]:
    index = eval_index(data, IndexSettings(), None, False, with_graphs=True)
    questions = load_questions(data, "dev")[:limit]
    retriever = make_retriever(method, index, keep=0)
    dense = make_retriever("dense", index)
    out = []
    for q in questions:
        hits = retriever.retrieve(q.question, 10)
        ranked = list(dict.fromkeys(index.chunk(h.id).doc_id for h in hits))
        top = dense.top_hits(q.question, 10)
        out.append(
            Case(
                list(q.gold_ids),
                q.question,
                ranked,
                [(h.id, index.chunk(h.id).doc_id, h.score) for h in top],
            )
        )
    return out


Rule = Callable[[Case], int | tuple[int, int]] | None
"""How many of dense's first chunks the guard may keep for a case (the guard's ``keep``),
or (keep, floor): see :meth:`Case.guarded`."""


def _decision(rule: Rule, case: Case) -> tuple[int, int]:
    decided = rule(case) if rule is not None else 0
    return decided if isinstance(decided, tuple) else (decided, 0)


def scores(
    group: Sequence[Case], rule: Rule | str, margin: float = MARGIN
) -> tuple[float, float, float]:
    """R@2, R@5, MRR (percent) when the guard keeps dense's first where ``rule`` says so.

    ``rule`` None: no guard; "dense": dense retrieval alone.
    """
    if rule == "dense":
        lists = [(c, list(dict.fromkeys(d for _, d, _ in c.dense))) for c in group]
    else:
        lists = [(c, c.guarded(*_decision(rule, c), margin)) for c in group]  # type: ignore[arg-type]
    n = len(lists)
    return (
        100 * sum(recall_at_k(r, c.gold, 2) for c, r in lists) / n,
        100 * sum(recall_at_k(r, c.gold, 5) for c, r in lists) / n,
        100 * sum(reciprocal_rank(r, c.gold) for c, r in lists) / n,
    )


def score_questions(groups: dict[str, list[Case]], train_data: Path | None) -> None:
    """Set every case's hop probability; NQ's half A out of fold when ``train_data`` is given."""
    model = shipped()
    for group in groups.values():
        for case in group:
            case.multi_hop = model.multi_hop(case.question)
    half_a = next((g for name, g in groups.items() if name.endswith("-A")), None)
    if train_data is None or half_a is None:
        return
    multi, single = training_questions(train_data)
    others = single[: len(single) - len(half_a)]  # the classifier's single-hop set ends with A
    for fold in range(5):
        kept = [c.question for i, c in enumerate(half_a) if i % 5 != fold]
        refit = fit(multi, others + kept)
        for case in half_a[fold::5]:
            case.multi_hop = refit.multi_hop(case.question)


def main(argv: list[str] | None = None) -> int:
    """Print each rule's figures per dataset (NQ in halves)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, action="append", required=True)
    parser.add_argument("--method", default="gnn_ret")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--store", type=Path, help="keep each set's rankings here, reuse them")
    parser.add_argument("--margin", type=float, default=MARGIN, help="the guard's margin")
    parser.add_argument(
        "--confident",
        type=float,
        default=CONFIDENT,
        help=f"the selective guard's sure lead (default {CONFIDENT}; IIER's tuned: 0.15)",
    )
    parser.add_argument("--out", type=Path, help="write every rule's figures here (JSON)")
    parser.add_argument(
        "--train-data",
        type=Path,
        help="the datasets folder: refit the classifier without each "
        "fifth of NQ half A to score it out of fold (otherwise the shipped model scores A)",
    )
    args = parser.parse_args(argv)
    groups: dict[str, list[Case]] = {}
    for data in args.data:
        found = cases(data, args.method, args.limit, args.store)
        if data.name.startswith("nq"):
            groups[f"{data.name}-A"], groups[f"{data.name}-B"] = found[0::2], found[1::2]
        else:
            groups[data.name] = found
    score_questions(groups, args.train_data)
    rules: list[tuple[str, Rule | str]] = [("dense", "dense"), ("no guard", None)]
    rules += [(f"lead ≥ {g:.2f}", lambda c, g=g: KEEP * (c.lead >= g)) for g in GAPS]
    rules += [(f"first ≥ {t:.2f}", lambda c, t=t: KEEP * (c.dense[0][2] >= t)) for t in FIRSTS]
    rules += [("keep 1", lambda c: 1)]
    rules += [(f"1; 2 if first≥{t:.2f}", lambda c, t=t: 1 + (c.dense[0][2] >= t)) for t in FIRSTS]
    rules += [(f"1; 2 if lead<{g:.2f}", lambda c, g=g: 1 + (c.lead < g)) for g in (0.01, 0.02)]
    rules += [("always (today)", lambda c: KEEP)]
    rules += [
        (f"p<{t:.1f} | lead≥{g:.2f}", lambda c, t=t, g=g: KEEP * (c.multi_hop < t or c.lead >= g))
        for t in PROBABILITIES
        for g in (0.05, 0.08, 0.12)
    ]
    rules += [
        (
            f"tuned, floor {f}",
            lambda c, f=f: (0, f) if aside(c.multi_hop, c.lead, args.confident) else (KEEP, 0),
        )
        for f in (2, 3, 5)
    ]
    figures = {
        label: {name: scores(g, rule, args.margin) for name, g in groups.items()}
        for label, rule in rules
    }
    print(f"{'rule':<16}" + "".join(f"{name:>26}" for name in groups))
    print(f"{'':<16}" + "".join(f"{'R@2   R@5   MRR':>26}" for _ in groups))
    for label, by_group in figures.items():
        row = "".join("{:>10.1f}{:>6.1f}{:>10.1f}".format(*by_group[g]) for g in groups)
        print(f"{label:<16}{row}")
    if args.out:  # docs/methods.md's study tables are rendered from it (study_tables)
        args.out.write_text(json.dumps({"method": args.method, "figures": figures}, indent=1))
    return 0


KEPT = Path(__file__).resolve().parents[1] / "results" / "guard" / "study-gnn_ret.json"
MARGIN_ROWS = {
    "dense": "dense alone",
    "no guard": "no guard",
    "keep 1": "keep dense top-1",
    "always (today)": "**top-1, and top-2 when within 0.05** (always)",
}
SELECTIVE_ROWS = {
    "dense": "dense alone",
    "no guard": "no guard",
    "always (today)": "always (the previous tuned guard)",
    "lead ≥ 0.05": "dense's lead ≥ 0.05 only",
    "p<0.2 | lead≥0.08": "p < 0.2 or lead ≥ 0.08",
    "p<0.3 | lead≥0.08": "p < 0.3 or lead ≥ 0.08 (tuned)",
    "p<0.5 | lead≥0.08": "p < 0.5 or lead ≥ 0.08",
    "tuned, floor 2": "tuned, floor 2",
    "tuned, floor 3": "**tuned, floor 3**",
}
"""The study's rules each table shows, and how it names them."""


def _rows(rows: dict[str, str], cells: Callable[[str, list[float]], str], kept: Path) -> str:
    figures = json.loads(kept.read_text(encoding="utf-8"))["figures"]
    groups = list(next(iter(figures.values())))
    head = "| rule (gnn_ret) | " + " | ".join(g.replace("-A", " A").replace("-B", " B")
                                             for g in groups) + " |"  # fmt: skip
    lines = [head, "|---" * (len(groups) + 1) + "|"]
    for label, name in rows.items():
        lines.append(
            f"| {name} | " + " | ".join(cells(g, figures[label][g]) for g in groups) + " |"
        )
    return "\n".join(lines)


def margin_table(kept: Path = KEPT) -> str:
    """Render the keep-what table: R@2 / R@5 on the multi-hop sets, R@2 / MRR on NQ's halves."""
    return _rows(
        MARGIN_ROWS,
        lambda g, f: (
            f"{f[0]:.1f} / {f[2]:.1f}" if g.startswith("nq") else f"{f[0]:.1f} / {f[1]:.1f}"
        ),
        kept,
    )


def selective_table(kept: Path = KEPT) -> str:
    """Render the when-to-guard table: R@2 / MRR everywhere."""
    return _rows(SELECTIVE_ROWS, lambda g, f: f"{f[0]:.1f} / {f[2]:.1f}", kept)


if __name__ == "__main__":
    sys.exit(main())
