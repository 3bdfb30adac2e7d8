"""Vectors kept on disk by the hash of what produced them: (source, model, text).

One SQLite file (CACHE/embeddings.sqlite) shared by every index and process: the endpoint
embedder keeps every vector it fetched there, and ``embedding.cached_embeddings`` keeps the
texts an index embeds beside its chunks (G-RAG's concepts), so a second process or a rebuild
pays only for text it never embedded. WAL mode lets readers and one writer work at once.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hopgraph.core.settings import cache_dir


class VectorCache:
    """Vectors by key, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, v BLOB)")
        self._lock = threading.Lock()

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Return the cached vectors among ``keys``."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(f"SELECT key, v FROM vectors WHERE key IN ({marks})", part)
                found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        """Keep ``vectors`` (one transaction)."""
        rows = [(k, v.astype(np.float32).tobytes()) for k, v in vectors.items()]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            self._db.execute("COMMIT")


def default_cache() -> VectorCache:
    """Return the cache in hopgraph's cache folder (the ``cache`` setting)."""
    return VectorCache(cache_dir() / "embeddings.sqlite")
