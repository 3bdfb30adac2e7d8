"""How often the answer without an LLM holds the gold answer, against the passages it reads.

``python -m hopgraph.evals.extractive --data ../shared/data/musique --data ...
[--split dev] [--method gnn_ret] [-k 5] [--out evals/results/extractive/dev.json]``

A dataset folder is one of ../shared/data or a documentation set (evals/docsets/SET).

Per question: the method's top-k passages (what ``ask`` with no LLM shows) and the extractive
answer drawn from them (:mod:`hopgraph.agents.extractive`). Answer-string recall is the share
of questions where a gold answer (any alias, SQuAD-normalised) appears in the text: in the
answer's sentences alone (titles not counted), and in the k passages (title and text). The
answer can hold the gold string only where a passage does; what it costs is the difference,
and what it saves is the words a reader has to read (both are reported).

The figures it makes: docs/evaluation.md, "An answer without an LLM".
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from tqdm.auto import tqdm

from hopgraph.agents.extractive import ExtractiveAnswer, extractive_answer, sentences_of
from hopgraph.agents.extractive_model import SentenceModel, load_model
from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import holds_answer
from hopgraph.evals.runner import eval_index
from hopgraph.evals.tables import render_table
from hopgraph.tools import make_retriever

from .training import FOLDS, cross_validate, fit, hand_set_kept, write


def measure(
    data: Path,
    split: str,
    method: str,
    k: int,
    show_progress: bool,
    model: SentenceModel | None = None,
) -> dict:
    """Return the answer-string recall of the extractive answer and of the top-k passages.

    ``model``: a fitted sentence model (``--model FILE``); the answer's own (hand-set) if None.
    """
    questions = load_questions(data, split)
    index = eval_index(data, IndexSettings(), None, show_progress, with_graphs=True)
    with index:
        retriever = make_retriever(method, index)
        in_answer = in_passages = 0
        answer_words, passage_words, sentences, answer_chars = [], [], [], []
        for q in tqdm(questions, desc=data.name, disable=not show_progress):
            hits = retriever.retrieve(q.question, k)
            answer = extractive_answer(index, q.question, hits, model)
            said = _said(answer)
            read = "\n".join(f"{h.title}\n{h.text}" for h in hits)
            in_answer += holds_answer(said, q.answers)
            in_passages += holds_answer(read, q.answers)
            answer_chars.append(len(said))
            answer_words.append(len(said.split()))
            passage_words.append(len(read.split()))
            sentences.append(len(answer.sentences))
    n = len(questions)
    return {
        "data": data.name,
        "split": split,
        "method": method,
        "k": k,
        "questions": n,
        "answer_recall": round(100 * in_answer / n, 1),
        "passages_recall": round(100 * in_passages / n, 1),
        "answer_words": round(statistics.mean(answer_words), 1),
        "passage_words": round(statistics.mean(passage_words), 1),
        "sentences": round(statistics.mean(sentences), 2),
        "answer_chars_max": max(answer_chars),
    }


def train(
    datasets: list[Path], split: str, method: str, k: int, show_progress: bool
) -> SentenceModel:
    """Fit the sentence model on the questions of ``datasets`` whose top k hold a gold answer."""
    sets = {d.name: _held(d, split, method, k, show_progress) for d in datasets}
    model = fit([e for examples in sets.values() for e in examples], [f"{d}/{split}" for d in sets])
    model.record[f"kept, {FOLDS}-fold cross-validated"] = cross_validate(sets)
    model.record["kept by the hand-set model"] = hand_set_kept(sets)
    return model


def _held(data: Path, split: str, method: str, k: int, show_progress: bool) -> list:
    """Return (sentences, answers) of each question whose top-k passages hold a gold answer."""
    out = []
    with eval_index(data, IndexSettings(), None, show_progress, with_graphs=True) as index:
        retriever = make_retriever(method, index)
        for q in tqdm(load_questions(data, split), desc=data.name, disable=not show_progress):
            hits = retriever.retrieve(q.question, k)
            if holds_answer("\n".join(f"{h.title}\n{h.text}" for h in hits), q.answers):
                out.append((sentences_of(index, q.question, hits), q.answers))
    return out


def _said(answer: ExtractiveAnswer) -> str:
    return " ".join(s.text for s in answer.sentences)


def table(rows: list[dict]) -> str:
    """Render the rows as a Markdown table."""
    header = [
        "set", "questions", "in the answer", "in the top-k passages", "share kept",
        "answer words", "passage words", "sentences",
    ]  # fmt: skip
    body = [
        [
            r["data"],
            str(r["questions"]),
            f"{r['answer_recall']:.1f}",
            f"{r['passages_recall']:.1f}",
            _share(r),
            f"{r['answer_words']:.0f}",
            f"{r['passage_words']:.0f}",
            f"{r['sentences']:.2f}",
        ]
        for r in rows
    ]
    return render_table(header, body)


RESULTS = Path(__file__).resolve().parents[1] / "results" / "extractive" / "dev.json"


def markdown(results: Path = RESULTS) -> str:
    """Render docs/evaluation.md's table from the saved rows (hopgraph.evals.rendering.docs)."""
    rows = json.loads(results.read_text(encoding="utf-8"))
    lines = [
        "| set | questions | gold answer in the answer | in the top-5 passages | kept "
        "| words: answer | words: passages | sentences | most characters |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['data']} | {r['questions']:,} | {r['answer_recall']:.1f} "
            f"| {r['passages_recall']:.1f} | {_share(r)} | {r['answer_words']:.0f} "
            f"| {r['passage_words']:.0f} | {r['sentences']:.2f} | {r['answer_chars_max']} |"
        )
    return "\n".join(lines)


def _share(row: dict) -> str:
    kept = row["passages_recall"]
    return f"{100 * row['answer_recall'] / kept:.0f}%" if kept else "–"


def main(argv: list[str] | None = None) -> int:
    """Measure each dataset and print (and save) the table."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.extractive",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--data", type=Path, action="append", required=True, help="dataset folder")
    parser.add_argument("--split", default="dev", help="question file (default dev)")
    parser.add_argument("--method", default="gnn_ret", help="retriever (default gnn_ret)")
    parser.add_argument("-k", type=int, default=5, help="passages read (default 5)")
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--train",
        action="store_true",
        help="fit the sentence model on --data (train sets, --split train) and write it to --out "
        "(a JSON file; the answer keeps its hand-set weights, agents/extractive_model.py)",
    )
    parser.add_argument(
        "--model", type=Path, help="measure with the fitted sentence model in this file (--train's)"
    )
    args = parser.parse_args(argv)
    if args.train:
        if args.out is None:
            parser.error("--train writes the fitted model to --out FILE: name the file")
        model = train(args.data, args.split, args.method, args.k, not args.quiet)
        write(model, args.out)
        print(f"wrote {args.out}: {model.record}")
        return 0
    fitted = None
    if args.model:
        try:
            fitted = load_model(args.model)
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            parser.error(f"--model {args.model}: {e} (write one with --train --out FILE)")
    rows = [measure(d, args.split, args.method, args.k, not args.quiet, fitted) for d in args.data]
    print(table(rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
