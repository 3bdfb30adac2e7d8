"""Extractions of a whole corpus as arrays: one vocabulary of strings, per-chunk lists of its ids.

A million chunks' entities, keywords and triples as Python objects take gigabytes and seconds to
load; as ragged integer arrays they take a few hundred megabytes and load at disk speed, and the
graphs are built from them with sparse products instead of loops over chunks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .base import Extraction, Triple

EXTRACTIONS_FILE = "extractions.npz"
"""Where a graph folder keeps its chunks' extractions (the strings in a .json beside it)."""


class Vocabulary:
    """Strings ↔ ids; ids are never reused, so arrays written earlier stay valid."""

    def __init__(self, strings: Iterable[str] = ()) -> None:
        self.strings: list[str] = []
        self.ids: dict[str, int] = {}
        for text in strings:
            self.id(text)

    def id(self, text: str) -> int:
        """Return the id of ``text``, adding it when new."""
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.strings)
            self.strings.append(text)
        return found

    def __len__(self) -> int:
        return len(self.strings)

    def order(self) -> np.ndarray:
        """Return each id's rank in string order (a tie-breaker that sorts as Python does)."""
        rank = np.empty(len(self.strings), dtype=np.int64)
        rank[np.argsort(np.array(self.strings, dtype=str), kind="stable")] = np.arange(len(rank))
        return rank


@dataclass(frozen=True)
class Ragged:
    """Per-row lists: row i is ``values[ptr[i]:ptr[i + 1]]`` (values may have a second axis)."""

    ptr: np.ndarray
    values: np.ndarray

    @classmethod
    def from_lists(cls, lists: Sequence[Sequence], width: int = 0) -> Ragged:
        """Build from Python lists of ids (of ``width``-tuples of ids when ``width``)."""
        lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
        ptr = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        flat = [v for x in lists for v in x]
        shape = (len(flat), width) if width else (len(flat),)
        values = np.array(flat, dtype=np.int64).reshape(shape)
        return cls(ptr, values)

    @property
    def rows(self) -> int:
        """Return the number of rows."""
        return len(self.ptr) - 1

    def lengths(self) -> np.ndarray:
        """Return each row's length."""
        return np.diff(self.ptr)

    def row_of_values(self) -> np.ndarray:
        """Return, for each value, the row it belongs to."""
        return np.repeat(np.arange(self.rows), self.lengths())

    def row(self, i: int) -> np.ndarray:
        """Return row ``i``'s values."""
        return self.values[self.ptr[i] : self.ptr[i + 1]]

    def take(self, rows: np.ndarray) -> Ragged:
        """Return the given rows, in that order."""
        lengths = self.lengths()[rows]
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        at = np.repeat(self.ptr[rows] - ptr[:-1], lengths) + np.arange(ptr[-1])
        return Ragged(ptr, self.values[at])

    @staticmethod
    def concat(parts: Sequence[Ragged]) -> Ragged:
        """Stack the rows of several ragged arrays."""
        ptr = [np.zeros(1, dtype=np.int64)]
        offset = 0
        for part in parts:
            ptr.append(part.ptr[1:] + offset)
            offset += int(part.ptr[-1])
        return Ragged(np.concatenate(ptr), np.concatenate([p.values for p in parts]))

    def incidence(self, columns: int) -> sp.csr_matrix:
        """Return the rows × ids 0/1 matrix (a repeated id counts once)."""
        ones = np.ones(len(self.values), dtype=np.float32)
        matrix = sp.csr_matrix(
            (ones, (self.row_of_values(), self.values)), shape=(self.rows, columns)
        )
        matrix.data[:] = 1.0
        return matrix


@dataclass(frozen=True)
class ExtractionTable:
    """Every chunk's entities, keywords and triples (subject, predicate, object ids), in order."""

    ids: list[str]
    vocab: Vocabulary
    entities: Ragged
    keywords: Ragged
    triples: Ragged

    @classmethod
    def from_extractions(cls, extractions: Sequence[Extraction]) -> ExtractionTable:
        """Encode a list of extractions."""
        vocab = Vocabulary()

        def ids(items: Iterable[str]) -> list[int]:
            return [vocab.id(x) for x in items]

        return cls(
            [e.chunk_id for e in extractions],
            vocab,
            Ragged.from_lists([ids(e.entities) for e in extractions]),
            Ragged.from_lists([ids(e.keywords) for e in extractions]),
            Ragged.from_lists(
                [[ids((t.subject, t.predicate, t.object)) for t in e.triples] for e in extractions],
                width=3,
            ),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def extraction(self, row: int) -> Extraction:
        """Decode one chunk's extraction."""
        words = self.vocab.strings
        return Extraction(
            self.ids[row],
            tuple(words[i] for i in self.entities.row(row)),
            tuple(words[i] for i in self.keywords.row(row)),
            tuple(Triple(*(words[i] for i in spo)) for spo in self.triples.row(row)),
        )

    def to_extractions(self) -> list[Extraction]:
        """Decode every chunk's extraction."""
        return [self.extraction(row) for row in range(len(self.ids))]

    def save(self, path: Path) -> None:
        """Write the arrays into ``path`` (.npz) and the strings beside it (.json)."""
        arrays = {
            f"{name}_{part}": getattr(getattr(self, name), part)
            for name in ("entities", "keywords", "triples")
            for part in ("ptr", "values")
        }
        np.savez(path, **arrays)
        text = json.dumps({"ids": self.ids, "vocab": self.vocab.strings}, ensure_ascii=False)
        path.with_suffix(".json").write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> ExtractionTable:
        """Read what :meth:`save` wrote."""
        strings = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        vocab = Vocabulary()
        vocab.strings = strings["vocab"]
        vocab.ids = {s: i for i, s in enumerate(vocab.strings)}
        with np.load(path) as data:
            parts = {
                name: Ragged(data[f"{name}_ptr"], data[f"{name}_values"])
                for name in ("entities", "keywords", "triples")
            }
        return cls(strings["ids"], vocab, **parts)
