"""The index: documents, chunks, Chroma vectors and BM25 in one directory."""

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
