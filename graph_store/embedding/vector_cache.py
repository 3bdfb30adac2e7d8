"""Vectors kept on disk by the hash of what produced them: (source, model, text).

One SQLite file (CACHE/embeddings.sqlite) shared by every index and process: the endpoint
embedder keeps every vector it fetched there, and ``embedding.cached_embeddings`` keeps the
texts an index embeds beside its chunks (G-RAG's concepts), so a second process or a rebuild
pays only for text it never embedded. WAL mode lets readers and one writer work at once.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np


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
    from hopgraph.core.settings import cache_dir  # pydantic-settings: when a cache is opened

    return VectorCache(cache_dir() / "embeddings.sqlite")


def cached_vectors(
    cache: VectorCache,
    source: str,
    texts: Sequence[str],
    compute: Callable[[list[str]], np.ndarray],
    batch: int,
    progress: Callable[[int], None] | None = None,
) -> list[np.ndarray]:
    """Return each text's vector: kept ones from ``cache``, the rest from ``compute``.

    ``source`` names what makes the vectors (endpoint URL or ``local``, and the model): a key is
    the hash of source and text. Computed vectors are kept a batch at a time, so an
    interrupted run keeps what it paid for.
    """

    def key(text: str) -> str:
        return hashlib.sha256(f"{source}\0{text}".encode()).hexdigest()

    keys = [key(t) for t in texts]
    found = cache.get(list(dict.fromkeys(keys)))
    missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
    for start in range(0, len(missing), batch):
        part = missing[start : start + batch]
        fresh = dict(zip(map(key, part), compute(part), strict=True))
        cache.put(fresh)
        found.update(fresh)
        if progress:
            progress(len(part))
    if progress:
        progress(len(texts) - len(missing))
    return [found[k] for k in keys]
