"""Benchmark questions in the shared format: ``{id, question, answers, gold_ids, hops, type?}``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hopgraph.core.errors import InputError


@dataclass(frozen=True)
class Question:
    """One benchmark question with its gold passages and answers."""

    id: str
    question: str
    answers: tuple[str, ...]
    gold_ids: tuple[str, ...]
    hops: int | None = None
    type: str | None = None
    decomposition: tuple[tuple[str, str], ...] = ()
    """Gold (sub-question, answer) steps, where the dataset has them (MuSiQue)."""


def questions_path(data: Path, split: str) -> Path:
    """Return the question file of ``split`` in a dataset folder."""
    path = data / f"{split}.jsonl"
    if not data.is_dir():
        raise InputError(f"{data}: no such dataset folder", "give a folder with corpus.jsonl")
    if not path.is_file():
        found = sorted(p.stem for p in data.glob("*.jsonl") if p.stem != "corpus")
        raise InputError(f"{path}: no such split", f"splits here: {', '.join(found) or 'none'}")
    if not (data / "corpus.jsonl").is_file():
        raise InputError(f"{data}: no corpus.jsonl", "a dataset folder holds corpus.jsonl")
    return path


def load_questions(
    data: str | Path, split: str = "dev", limit: int | None = None
) -> list[Question]:
    """Read a split's questions; every malformed line is reported with its number."""
    path = questions_path(Path(data), split)
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            out.append(_parse(line, f"{path}:{number}"))
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise InputError(f"{path}: no questions")
    return out


def _parse(line: str, where: str) -> Question:
    try:
        raw = json.loads(line)
        return Question(
            id=str(raw["id"]),
            question=str(raw["question"]),
            answers=tuple(str(a) for a in raw.get("answers", [])),
            gold_ids=tuple(str(g) for g in raw["gold_ids"]),
            hops=raw.get("hops"),
            type=raw.get("type"),
            decomposition=tuple(
                (str(step["question"]), str(step["answer"]))
                for step in raw.get("decomposition") or []
            ),
        )
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise InputError(
            f"{where}: malformed question ({err!r})", "fix or remove that line"
        ) from err
