"""The documentation benchmark (evals/docsets): its questions name sections our parsers find."""

import json
from pathlib import Path

import pytest

from hopgraph.graph_store.documents.chunking import chunk_document
from hopgraph.graph_store.documents.loaders import load_corpus

DOCSETS = Path(__file__).resolve().parents[4] / "evals" / "docsets"
SETS = ["marshmallow", "structlog"]


def words(text: str) -> int:
    return len(text.split())


def questions(name: str) -> list[dict]:
    lines = (DOCSETS / name / "dev.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("name", SETS)
def test_every_gold_section_is_a_section_the_chunker_gives(name):
    docs = load_corpus(DOCSETS / name / "docs").documents
    text: dict[tuple[str, str], str] = {}
    for doc in docs:
        for chunk in chunk_document(doc, 200, words):
            key = (chunk.doc_id, chunk.section)
            text[key] = text.get(key, "") + "\n" + chunk.text
    for q in questions(name):
        gold = [tuple(pair) for pair in q["gold_sections"]]
        assert q["gold_ids"] == list(dict.fromkeys(doc for doc, _ in gold)), q["id"]
        assert all(key in text for key in gold), (q["id"], [k for k in gold if k not in text])
        assert q["type"] == ("two-section" if len(gold) == 2 else "one-section"), q["id"]
        found = " ".join(text[key] for key in gold).casefold()
        assert any(answer.casefold() in found for answer in q["answers"]), q["id"]


def test_the_benchmark_is_as_large_as_promised():
    all_questions = [q for name in SETS for q in questions(name)]
    assert len(all_questions) >= 60
    assert sum(q["type"] == "two-section" for q in all_questions) >= 20
    assert len({q["id"] for q in all_questions}) == len(all_questions)
