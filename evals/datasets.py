"""Benchmark questions in the shared format: ``{id, question, answers, gold_ids, hops, type?}``.

A documentation set (evals/docsets) holds a ``docs/`` folder instead of ``corpus.jsonl``, and
its questions name ``gold_sections``: ``[[doc id, section path], ...]``; they are scored by
section (a hit counts for the section of its chunk), not by document.
"""

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
    gold_sections: tuple[str, ...] = ()
    """Gold sections as :func:`section_key` gives them (documentation sets); empty otherwise."""

    @property
    def gold_units(self) -> tuple[str, ...]:
        """Return what a ranking is scored against: the gold sections, else the documents."""
        return self.gold_sections or self.gold_ids


def section_key(doc_id: str, section: str) -> str:
    """Return the unit a documentation question is scored by: a document's section."""
    return f"{doc_id}#{section}"


def corpus_of(data: Path) -> Path:
    """Return a dataset folder's corpus: ``corpus.jsonl``, or a documentation folder ``docs/``."""
    jsonl, docs = data / "corpus.jsonl", data / "docs"
    if jsonl.is_file():
        return jsonl
    if docs.is_dir():
        return docs
    raise InputError(
        f"{data}: no corpus.jsonl and no docs/ folder",
        "a dataset folder holds corpus.jsonl (passages) or docs/ (a documentation set)",
    )


def questions_path(data: Path, split: str) -> Path:
    """Return the question file of ``split`` in a dataset folder."""
    path = data / f"{split}.jsonl"
    if not data.is_dir():
        raise InputError(f"{data}: no such dataset folder", "give a folder with corpus.jsonl")
    if not path.is_file():
        found = sorted(p.stem for p in data.glob("*.jsonl") if p.stem != "corpus")
        raise InputError(f"{path}: no such split", f"splits here: {', '.join(found) or 'none'}")
    corpus_of(data)
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
            gold_sections=tuple(
                section_key(str(doc), str(section))
                for doc, section in raw.get("gold_sections") or []
            ),
        )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise InputError(
            f"{where}: malformed question ({err!r})", "fix or remove that line"
        ) from err
