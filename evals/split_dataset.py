"""Split a dataset's questions in two: a training half and an evaluation half, same corpus.

    python -m hopgraph.evals.split_dataset --data ../shared/data/nq --into runs/folds

NQ comes with dev questions only, and G-RAG is trained in-domain in the paper (its NQ model on NQ
train, spec g_rag §8). This writes ``INTO/nq-train`` (corpus.jsonl + train.jsonl: a seeded
random half of the questions) and ``INTO/nq-dev`` (corpus.jsonl + dev.jsonl: the other half),
so `hopgraph train grag --data INTO/nq-train` learns from one half and
`python -m hopgraph.evals.studies.grag_reranking --data INTO/nq-dev` scores only questions the
network never saw. Same seed, same halves.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def split_questions(
    lines: Sequence[str], fraction: float, seed: int
) -> tuple[list[str], list[str]]:
    """Return (training, evaluation) lines: a seeded permutation cut at ``fraction``."""
    order = np.random.default_rng(seed).permutation(len(lines))
    cut = round(len(lines) * fraction)
    if not 0 < cut < len(lines):
        raise ValueError(f"{fraction} of {len(lines)} questions leaves one side empty")
    return [lines[i] for i in sorted(order[:cut])], [lines[i] for i in sorted(order[cut:])]


def write_half(source: Path, target: Path, split: str, lines: Sequence[str]) -> None:
    """Write one half: the corpus copied, the questions as ``split``.jsonl (atomically)."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    shutil.copyfile(source / "corpus.jsonl", partial / "corpus.jsonl")
    (partial / f"{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the two halves and say how many questions each holds."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.split_dataset",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, required=True, metavar="DIR", help="dataset folder")
    parser.add_argument("--split", default="dev", help="question file to split (default dev)")
    parser.add_argument("--into", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument("--fraction", type=float, default=0.5, help="training share (0.5)")
    parser.add_argument("--seed", type=int, default=0, help="fixes the halves (0)")
    args = parser.parse_args(argv)
    source = args.data / f"{args.split}.jsonl"
    if not source.is_file() or not (args.data / "corpus.jsonl").is_file():
        print(f"error: {args.data} needs corpus.jsonl and {args.split}.jsonl", file=sys.stderr)
        return 2
    lines = [line if line.endswith("\n") else line + "\n" for line in source.open() if line.strip()]
    try:
        train, held = split_questions(lines, args.fraction, args.seed)
    except ValueError as err:
        print(f"error: {err}; choose a --fraction between 0 and 1", file=sys.stderr)
        return 2
    name = args.data.name
    write_half(args.data, args.into / f"{name}-train", "train", train)
    write_half(args.data, args.into / f"{name}-dev", "dev", held)
    for part, count in (("train", len(train)), ("dev", len(held))):
        print(f"{args.into / f'{name}-{part}'}: {count} questions ({part}.jsonl)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
