import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

DOCS = [
    {
        "id": "d1",
        "title": "Larry Alcala",
        "text": "Larry Alcala was a Filipino cartoonist. "
        "He was educated at the University of Santo Tomas.",
    },
    {
        "id": "d2",
        "title": "University of Santo Tomas",
        "text": "The University of Santo Tomas "
        "is a private university in Manila. Military instruction started there in 1936.",
    },
    {"id": "d3", "title": "Manila", "text": "Manila is the capital of the Philippines."},
    {
        "id": "d4",
        "title": "Van Hook Township",
        "text": "Van Hook Township is a township in Mountrail County, North Dakota.",
    },
    {"id": "d5", "title": "Mountrail County", "text": "Mountrail County has its seat in Stanley."},
    {"id": "d6", "title": "Stanley", "text": "Stanley is a city in North Dakota."},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HOPGRAPH_INDEX", raising=False)
    monkeypatch.delenv("HOPGRAPH_MODEL", raising=False)
    monkeypatch.delenv("HOPGRAPH_CHROMA_URL", raising=False)


@pytest.fixture
def corpus_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", DOCS)
