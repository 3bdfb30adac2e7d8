"""The bundled sample indexed in four writes: three vector and BM25 segments, some rows dead."""

from pathlib import Path

from hopgraph.cli.commands.demo import sample_dir
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import add_documents, build_index, delete_documents, load_documents


def written_in_four_steps(path: Path) -> Path:
    """Build the sample's first 120 documents, add the rest in two writes, delete 30; no graphs."""
    docs = load_documents(sample_dir() / "corpus.jsonl")
    build_index(docs[:120], path, IndexSettings(model="hashing"), show_progress=False)
    add_documents(path, docs[120:200], show_progress=False)
    add_documents(path, docs[200:], show_progress=False)
    delete_documents(path, [d.id for d in docs[100:130]])
    return path
