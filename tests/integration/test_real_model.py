"""The real embedding model end to end: index lifecycle equality and the README's demo."""

import os
import subprocess
import sys

import pytest

from graph_store import Index, add_documents, build_index, delete_documents
from hopgraph.settings import IndexSettings
from tools import make_retriever

pytestmark = pytest.mark.integration
QUERIES = [
    "What is the seat of the county where Van Hook Township is located?",
    "Who is the employer of the physicist who Mach number is named after?",
    "average salary of a working citizen",
]


def ranked(path):
    with Index.open(path) as idx:
        return {
            (m, q): [(h.id, round(h.score, 4)) for h in make_retriever(m, idx).retrieve(q, 10)]
            for m in ("bm25", "dense", "hybrid")
            for q in QUERIES
        }


def test_index_add_delete_equals_fresh_build(tmp_path, sample_docs):
    settings = IndexSettings(chunk_tokens=64)  # small chunks, so some documents split
    build_index(sample_docs[:150], tmp_path / "grown", settings, show_progress=False)
    add_documents(tmp_path / "grown", sample_docs[150:], show_progress=False)
    gone = [d.id for d in sample_docs[::7]]
    delete_documents(tmp_path / "grown", gone)
    final = [d for d in sample_docs if d.id not in set(gone)]
    build_index(final, tmp_path / "fresh", settings, show_progress=False)
    assert ranked(tmp_path / "grown") == ranked(tmp_path / "fresh")
    with Index.open(tmp_path / "grown") as idx:
        assert any(c.n_chunks > 1 for c in idx.chunks.values())
        assert idx.doc_ids == {d.id for d in final}


def test_demo_runs_offline(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": ""}
    result = subprocess.run(
        [sys.executable, "-m", "hopgraph", "demo", "--index", str(tmp_path / "demo"), "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\nQ") == 8
    assert "[gold]" in result.stdout
    assert "hybrid: Recall@4" in result.stdout
