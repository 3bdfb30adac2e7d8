r"""BM25 (bm25s, Lucene variant) over "title\\ntext", English stemming and stop words."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from .base import Scored
from .documents import Chunk

_STEMMER = Stemmer.Stemmer("english")
IDS_FILE = "ids.json"


def _tokenize(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(
        texts, stopwords="en", stemmer=_STEMMER.stemWords, return_ids=False, show_progress=False
    )


class BM25Store:
    """An in-memory bm25s index with its chunk ids, saved as plain files."""

    def __init__(self, retriever: bm25s.BM25, ids: list[str]) -> None:
        self.retriever = retriever
        self.ids = ids

    @classmethod
    def build(cls, chunks: Sequence[Chunk]) -> BM25Store:
        """Index the chunks' title and text."""
        retriever = bm25s.BM25()
        retriever.index(_tokenize([c.embed_text for c in chunks]), show_progress=False)
        return cls(retriever, [c.id for c in chunks])

    def save(self, directory: Path) -> None:
        """Write the index and its id list into ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        self.retriever.save(str(directory), show_progress=False)
        (directory / IDS_FILE).write_text(json.dumps(self.ids), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> BM25Store:
        """Read an index written by :meth:`save` (memory-mapped, nothing recomputed)."""
        retriever = bm25s.BM25.load(str(directory), mmap=True, show_progress=False)
        ids = json.loads((directory / IDS_FILE).read_text(encoding="utf-8"))
        return cls(retriever, ids)

    def scores(self, text: str) -> np.ndarray:
        """Return the BM25 score of every chunk for ``text``, in the order of ``self.ids``."""
        tokens = [t for t in _tokenize([text])[0] if t in self.retriever.vocab_dict]
        if not tokens:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self.retriever.get_scores(tokens), dtype=np.float32)

    def query(self, text: str, k: int) -> Scored:
        """Return up to ``k`` (id, score) pairs with a positive score, best first."""
        tokens = [t for t in _tokenize([text])[0] if t in self.retriever.vocab_dict]
        k = min(k, len(self.ids))
        if not tokens or k <= 0:
            return []
        docs, scores = self.retriever.retrieve([tokens], k=k, show_progress=False, n_threads=1)
        return [
            (self.ids[int(d)], float(s))
            for d, s in zip(docs[0], scores[0], strict=True)
            if s > 0 and np.isfinite(s)
        ]
