"""A disk cache of LLM replies keyed by model and prompt, so no prompt is ever paid for twice.

SQLite in WAL mode, one commit per reply: a run that crashes keeps every reply it received, and
the next run picks up where it stopped.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CachedReply:
    """A reply and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int


class ReplyCache:
    """Thread-safe reply cache in one SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT, reply TEXT, "
            "prompt_tokens INTEGER, completion_tokens INTEGER)"
        )
        self._db.commit()

    @staticmethod
    def key(model: str, prompt: str) -> str:
        """Return the cache key of a prompt sent to a model."""
        return hashlib.sha256(f"{model}\x1f{prompt}".encode()).hexdigest()

    def get(self, model: str, prompt: str) -> CachedReply | None:
        """Return the cached reply, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT reply, prompt_tokens, completion_tokens FROM replies WHERE key = ?",
                (self.key(model, prompt),),
            ).fetchone()
        return CachedReply(*row) if row else None

    def put(self, model: str, prompt: str, reply: CachedReply) -> None:
        """Store a reply (committed at once)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?)",
                (
                    self.key(model, prompt),
                    model,
                    reply.text,
                    reply.prompt_tokens,
                    reply.completion_tokens,
                ),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
