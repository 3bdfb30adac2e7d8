"""The index: documents, chunks, Chroma vectors and BM25 in one directory."""

from .build import WriteReport, add_documents, build_graphs, build_index, delete_documents
from .documents import Chunk, Document
from .index import Index
from .loaders import load_documents

__all__ = [
    "Chunk",
    "Document",
    "Index",
    "WriteReport",
    "add_documents",
    "build_graphs",
    "build_index",
    "delete_documents",
    "load_documents",
]
