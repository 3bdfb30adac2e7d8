"""The index: documents, chunks, Chroma vectors and BM25 in one directory.

Its rooms, from the ground up: ``documents`` (reading a source into documents and chunks),
``embedding`` and ``stores`` (the embedders; where chunks, vectors and keywords are kept),
``graphs`` (extraction, the passage and knowledge graphs), ``index`` (the index's life:
opened, written, checked and mended) and ``cluster`` (writes on a Ray cluster). Each imports
only the rooms below it (pyproject.toml's contracts).

The names below are imported on first use (PEP 562): a command that only reads the manifest
does not import Chroma, networkx or the embedding model's libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .documents.loaders import Loaded, LoadReport, load_corpus, load_documents
    from .documents.schema import Chunk, Document
    from .index.build import build_graphs, build_index
    from .index.changes import SyncReport, add_documents, delete_documents, sync_documents
    from .index.live import LiveIndex
    from .index.reader import Index
    from .index.writes import WriteReport

_LAZY = {
    "SyncReport": "index.changes",
    "WriteReport": "index.writes",
    "add_documents": "index.changes",
    "build_graphs": "index.build",
    "build_index": "index.build",
    "delete_documents": "index.changes",
    "sync_documents": "index.changes",
    "Chunk": "documents.schema",
    "Document": "documents.schema",
    "Index": "index.reader",
    "LiveIndex": "index.live",
    "Loaded": "documents.loaders",
    "LoadReport": "documents.loaders",
    "load_corpus": "documents.loaders",
    "load_documents": "documents.loaders",
}

__all__ = [
    "Chunk",
    "Document",
    "Index",
    "LiveIndex",
    "LoadReport",
    "Loaded",
    "SyncReport",
    "WriteReport",
    "add_documents",
    "build_graphs",
    "build_index",
    "delete_documents",
    "load_corpus",
    "load_documents",
    "sync_documents",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
