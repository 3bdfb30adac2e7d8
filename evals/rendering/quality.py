"""The evaluation tables of the README and the docs, rendered from kept eval reports.

Each renderer reads reports kept under evals/results/ and returns a Markdown table;
evals/rendering/docs.py puts them between their markers and the unit suite checks them.

- ``quality`` (docs/evaluation.md): every method, tuned preset, one row per method and dataset,
  from evals/results/quality/DATASET.json (:func:`keep` copies the ``report.json`` of named runs).
- ``presets`` (docs/methods.md): tuned against paper, R@2 / R@5 / R@15 / MRR.
- ``headline`` (README.md): R@5 of dense, hybrid and gnn_ret beside the best published figure.
- ``docsets`` (docs/evaluation.md): the documentation sets, scored by section, from the reports
  kept in evals/results/docsets/ (``hopgraph eval --data evals/docsets/SET``).
- ``rerank`` (docs/evaluation.md): G-RAG against the hybrid top 100 it reranks
  (``python -m hopgraph.evals.studies.grag_reranking --out FILE``), kept as
  evals/results/rerank.json.
- ``iier-scorer`` (docs/evaluation.md): IIER with its trained chain scorer and without
  (``hopgraph eval --methods iier --weights iier=FILE|none``), kept as
  evals/results/iier/SET-trained.json and SET-untrained.json.
- ``oracle`` (docs/agents.md): each agent under the oracle reasoner (``hopgraph eval --answers
  --llm oracle``) and RGNN-Ret teacher-forced (``evals.rgnn_teacher_forced``), kept in
  evals/results/answers/.
- ``local-model`` (docs/agents.md): each agent with SmolLM2-135M in process (``hopgraph eval
  --answers --llm local --limit 50``), kept as evals/results/answers/local-musique.json.
- ``coverage`` (docs/graphs.md): bridge coverage (``hopgraph graph coverage --json``), kept as
  evals/results/graphs/coverage-SET.json.
- ``embedders`` (docs/evaluation.md): two embedders side by side (evals/rendering/embedders.py),
  from
  the reports kept in evals/results/embedders/ (``python -m hopgraph.evals.rendering.embedders
  --keep``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results" / "quality"
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
    from .embedders import render

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


def rerank(results: Path = RESULTS) -> str:
    """Render evaluation.md's G-RAG table (evals/studies/grag_reranking.py renders its report)."""
    from hopgraph.evals.studies.grag_reranking import markdown

    kept = results.parent / "rerank.json"
    return markdown(json.loads(kept.read_text(encoding="utf-8")))


GRAG_PATH_SETS = (("musique", "musique"), ("hotpotqa", "hotpotqa"), ("2wiki", "2wiki"),
                  ("nq-dev", "nq"))  # fmt: skip
"""The rerank report's sets and the latency benchmark's (NQ: its unseen half; all of dev)."""


def grag_paths(results: Path = RESULTS) -> str:
    """Render methods.md's G-RAG table: the three ways a concept path enters the features.

    Kept reports: evals/results/rerank.json and bench/latency-SET.json (the shipped weights,
    ``concepts``), grag-paths/rerank-MODE.json and grag-paths/latency-MODE-SET.json (the
    weights of ``--concept-paths MODE``, encoded and none).
    """
    kept = results.parent
    reports = {
        "concepts (shipped)": (kept / "rerank.json", kept / "bench" / "latency-{}.json"),
        **{
            mode: (kept / "grag-paths" / f"rerank-{mode}.json",
                   kept / "grag-paths" / f"latency-{mode}-{{}}.json")
            for mode in ("encoded", "none")
        },
    }  # fmt: skip
    head = " | ".join(f"{r} ({b})" if r != b else r for r, b in GRAG_PATH_SETS)
    lines = [f"| G-RAG, concept paths | {head} |", "|---" * (len(GRAG_PATH_SETS) + 1) + "|"]
    for paths, (rerank, _) in reports.items():
        scores = json.loads(rerank.read_text(encoding="utf-8"))
        cells = [
            f"{scores[r]['grag'][2]:.1f} / {scores[r]['grag'][0]:.1f}" for r, _ in GRAG_PATH_SETS
        ]
        lines.append(f"| {paths}: R@5 / MRR (rerank report) | " + " | ".join(cells) + " |")
    for paths, (_, latency) in reports.items():
        cells = []
        for _, bench in GRAG_PATH_SETS:
            timed = json.loads(Path(str(latency).format(bench)).read_text(encoding="utf-8"))
            t, dense = timed["end_to_end_latency"]["grag"], timed["end_to_end_latency"]["dense"]
            ratio = t["p95_ms"] / dense["p95_ms"]
            cells.append(f"{t['p50_ms']:.1f} / {t['p95_ms']:.1f} ({ratio:.1f}×)")
        lines.append(
            f"| {paths}: p50 / p95 ms, query embedded (× dense) | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


IIER_SETS = ("musique", "hotpotqa", "2wiki")


def iier_scorer(results: Path = RESULTS) -> str:
    """Render evaluation.md's IIER table: R@5 and All@5 with the untrained and trained scorer."""
    lines = ["| dataset | scorer | R@5 | All@5 |", "|---|---|---|---|"]
    for name in IIER_SETS:
        for n, scorer in enumerate(("untrained", "trained")):
            path = results.parent / "iier" / f"{name}-{scorer}.json"
            s = json.loads(path.read_text(encoding="utf-8"))["scores"][0]
            label = name if n == 0 else ""
            lines.append(f"| {label} | {scorer} | {s['recall']['5']:.1f} | {s['all']['5']:.1f} |")
    return "\n".join(lines)


AGENT_LABELS = {"gnn_ret": "gnn_ret (retrieve 5, read)"}


def oracle(results: Path = RESULTS) -> str:
    """Render agents.md's oracle table: what each loop gathers, at what cost, by hop count."""
    kept = results.parent / "answers"
    report = json.loads((kept / "oracle-musique.json").read_text(encoding="utf-8"))
    forced = json.loads((kept / "rgnn-teacher-forced.json").read_text(encoding="utf-8"))
    rows = report["scores"]
    best = {k: max(r[k] for r in rows) for k in ("gathered_recall", "evidence_recall_5", "em")}

    def bold(row: dict[str, Any], key: str) -> str:
        return f"**{row[key]:.1f}**" if row[key] == best[key] else f"{row[key]:.1f}"

    lines = [
        "| method | gathered recall | R@5 of its evidence | EM | LLM calls / q (p95) | tokens / q "
        "| 2-hop / 3-hop / 4-hop gathered recall |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        hops = " / ".join(f"{r['by_hops'][h]['gathered_recall']:.1f}" for h in sorted(r["by_hops"]))
        tokens = r["prompt_tokens"] + r["completion_tokens"]
        lines.append(
            f"| {AGENT_LABELS.get(r['method'], r['method'])} | {bold(r, 'gathered_recall')} "
            f"| {bold(r, 'evidence_recall_5')} | {bold(r, 'em')} "
            f"| {r['calls']:.1f} ({r['calls_p95']:.0f}) | {tokens:,.0f} | {hops} |"
        )
    lines.append(
        f"| RGNN-Ret teacher-forced (gold sub-questions) | {forced['gathered_recall']:.1f} "
        f"| {forced['final_R@5']:.1f} | – | 0 | – | – |"
    )
    return "\n".join(lines)


def local_model(results: Path = RESULTS) -> str:
    """Render agents.md's local-model table: answers, readability of replies, cost."""
    path = results.parent / "answers" / "local-musique.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    lines = [
        "| method | EM | F1 | F1 naming the first passage's title (no model) | gathered recall "
        "| R@5 | first replies unreadable | repaired | fell back | LLM calls / q (p95) | s / q |",
        "|---" * 11 + "|",
    ]
    for r in report["scores"]:
        fell_back = r["parse_failure_rate"] * (1 - r["repair_rate"] / 100)
        lines.append(
            f"| {AGENT_LABELS.get(r['method'], r['method'])} | {r['em']:.1f} | {r['f1']:.1f} "
            f"| {r['title_f1']:.1f} | {r['gathered_recall']:.1f} | {r['evidence_recall_5']:.1f} "
            f"| {r['parse_failure_rate']:.0f} % | {r['repair_rate']:.0f} % | {fell_back:.0f} % "
            f"| {r['calls']:.1f} ({r['calls_p95']:.0f}) | {r['seconds_mean']:.1f} |"
        )
    return "\n".join(lines)


def coverage(results: Path = RESULTS) -> str:
    """Render graphs.md's bridge-coverage table from the kept coverage reports."""
    lines = [
        "| dataset | passage graph (all edges) | structural + link only (mean degree) "
        "| chain-shaped questions | comparison-shaped | knowledge graph, hub-capped (mean degree) "
        "| knowledge graph, all entities (mean degree) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in IIER_SETS:
        path = results.parent / "graphs" / f"coverage-{name}.json"
        c = json.loads(path.read_text(encoding="utf-8"))
        graph, kg = c["passage_graph"], c["knowledge_graph"]
        every = f"{graph['all']['coverage']:.1f}%"
        if "bridge" in c["by_type"]:
            every += f" (bridge type {c['by_type']['bridge']:.1f}%)"
        link = graph["structural+link"]
        capped, flooded = kg["hub-capped"], kg["all entities"]
        lines.append(
            f"| {name} | {every} | {link['coverage']:.1f}% ({link['mean_degree']:.1f}) "
            f"| {c['by_shape']['chain']:.1f}% | {c['by_shape']['comparison']:.1f}% "
            f"| {capped['coverage']:.1f}% ({capped['mean_degree']:.1f}) "
            f"| {flooded['coverage']:.1f}% ({flooded['mean_degree']:.1f}) |"
        )
    return "\n".join(lines)


def _cells(s: dict[str, Any]) -> str:
    r = s["recall"]
    return " | ".join(f"{v:.1f}" for v in (r["2"], r["5"], r["15"], s["mrr"]))


def keep(runs: Path, results: Path = RESULTS) -> None:
    """Copy each named run's report.json into ``results`` (DATASET.json, DATASET-paper.json)."""
    results.mkdir(parents=True, exist_ok=True)
    for name in DATASETS:
        for suffix in ("", "-paper"):
            report = runs / f"{name}{suffix}" / "report.json"
            if report.is_file():
                shutil.copyfile(report, results / f"{name}{suffix}.json")
