"""The index: documents, chunks, Chroma vectors and BM25 in one directory.

The names below are imported on first use (PEP 562): a command that only reads the manifest
does not import Chroma, networkx or the embedding model's libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .build import (
        SyncReport,
        WriteReport,
        add_documents,
        build_graphs,
        build_index,
        delete_documents,
        sync_documents,
    )
    from .documents import Chunk, Document
    from .index import Index
    from .live import LiveIndex
    from .loaders import Loaded, LoadReport, load_corpus, load_documents

_LAZY = {
    "SyncReport": "build",
    "WriteReport": "build",
    "add_documents": "build",
    "build_graphs": "build",
    "build_index": "build",
    "delete_documents": "build",
    "sync_documents": "build",
    "Chunk": "documents",
    "Document": "documents",
    "Index": "index",
    "LiveIndex": "live",
    "Loaded": "loaders",
    "LoadReport": "loaders",
    "load_corpus": "loaders",
    "load_documents": "loaders",
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
