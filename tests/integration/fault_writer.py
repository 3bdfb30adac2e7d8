"""Run one write to an index and SIGKILL this process at a chosen stage (fault injection).

``python -m tests.integration.fault_writer OP INDEX STAGE CHROMA_URL PAYLOAD`` where OP is
index, add, sync, delete or graph; STAGE one of :data:`STAGES` or ``none``; CHROMA_URL ``-`` for
embedded; PAYLOAD a JSON list of documents (index, add, sync) or of document ids (delete).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hopgraph.core import forked
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import (
    Document,
    add_documents,
    build_graphs,
    build_index,
    delete_documents,
    sync_documents,
)
from hopgraph.graph_store.index import generations, graph_build
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.stores import manifest, vdb_chroma

GRAPHS = GraphSettings(semantic_min_sim=0.1, max_df=4, embed_triples=True)  # the "triples" stage


def settings(url: str) -> IndexSettings:
    """The settings every index of these tests is built with."""
    return IndexSettings(model="hashing", chunk_tokens=24, chroma_url=None if url == "-" else url)


def _die(*_: Any, **__: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _after(owner: Any, name: str, when: Callable[..., bool] = lambda *a, **k: True) -> None:
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if when(*args, **kwargs):
            _die()
        return result

    setattr(owner, name, wrapper)


def _on_tables(work: forked.Forked, *_: Any, **__: Any) -> bool:
    """The tables are written (by this process or its child) once the write has the result."""
    return work.what.startswith("writing the chunk and document tables")


def _on_triples(store: vdb_chroma.ChromaVectorStore, *_: Any, **__: Any) -> bool:
    return store.location.collection.endswith("-triples")


def _die_at_next_purge(*_: Any, **__: Any) -> bool:
    """Once a manifest is committed, die at the purge that follows it.

    (A recovery purges too, but before any commit.)
    """
    generations.purge = _die
    return False


STAGES: dict[str, Callable[[], None]] = {
    "rows": lambda: _after(vdb_chroma.ChromaVectorStore, "upsert"),
    "tables": lambda: _after(forked.Forked, "result", _on_tables),
    "extraction": lambda: _after(graph_build, "save_extractions"),
    "triples": lambda: _after(vdb_chroma.ChromaVectorStore, "upsert_records", _on_triples),
    "commit": lambda: setattr(manifest.Manifest, "write", _die),
    "purge": lambda: _after(manifest.Manifest, "write", _die_at_next_purge),
}


def run(op: str, directory: Path, url: str, payload: list) -> None:
    """Do the write."""
    if op in {"index", "add", "sync"}:
        docs = [Document(**d) for d in payload]
    if op == "index":
        build_index(docs, directory, settings(url), show_progress=False, replace=True)
    elif op == "add":
        add_documents(directory, docs, show_progress=False)
    elif op == "sync":
        sync_documents(directory, docs, show_progress=False)
    elif op == "delete":
        delete_documents(directory, payload)
    elif op == "graph":
        build_graphs(directory, GRAPHS, show_progress=False)
    else:
        raise SystemExit(f"unknown op {op}")


if __name__ == "__main__":
    op, where, stage, url, payload = sys.argv[1:]
    if stage != "none":
        STAGES[stage]()
    run(op, Path(where), url, json.loads(payload))
