"""Extractions of a whole corpus as arrays: one vocabulary of strings, per-chunk lists of its ids.

A million chunks' entities, keywords and triples as Python objects take gigabytes and seconds to
load; as ragged integer arrays they take a few hundred megabytes and load at disk speed, and the
graphs are built from them with sparse products instead of loops over chunks.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson

from hopgraph.core.arrays import unique_rows
from hopgraph.core.file_reads import verify_file

from .base import Extraction, Triple

if TYPE_CHECKING:  # scipy (0.2 s of imports) only where a matrix is built: not on a query's path
    import scipy.sparse as sp

VALUES = np.int32
"""The type of ragged values (ids of a vocabulary, counts, places): half the memory of int64,
and a million chunks' readings load, copy and scan twice as fast."""
EXTRACTIONS_FILE = "extractions.npz"
"""Where a graph folder keeps its chunks' extractions (the strings in a .json beside it)."""
EXTRACTION_PARTS = "extraction-parts"
"""Where a graph folder keeps them in parts instead (a cluster's graph build leaves them so):
each part's table, and ``parts.json`` listing [file, first row, the row after its last]."""


def distinct(values: np.ndarray) -> np.ndarray:
    """Return the distinct integers of ``values``, sorted.

    np.unique's default path in numpy 2.4 hashes, and is 10x slower than sorting on millions.
    """
    ordered = np.sort(np.asarray(values).ravel())
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


class Vocabulary:
    """Strings ↔ ids; ids are never reused, so arrays written earlier stay valid.

    Two derived arrays are kept as the vocabulary grows, so a write at a million chunks works out
    only its new strings': each id's rank in string order, and the ids of each string's words.
    """

    def __init__(
        self,
        strings: Iterable[str] = (),
        rank: np.ndarray | None = None,
        words: Ragged | None = None,
    ) -> None:
        """Start from distinct ``strings`` (their ids are their places) and any kept arrays."""
        self.strings: list[str] = list(strings)
        self.ids: dict[str, int] = {s: i for i, s in enumerate(self.strings)}
        self._rank = np.zeros(0, dtype=np.int64) if rank is None else rank.astype(np.int64)
        self._words = Ragged.from_lists([]) if words is None else words

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
        """Return each id's rank in string order (a tie-breaker that sorts as Python does).

        Kept ranks are extended: the new strings are placed among the old by bisection, and an
        old string moves down by the number placed before it.
        """
        known, strings = len(self._rank), self.strings
        if known == len(strings):
            return self._rank
        new = sorted(range(known, len(strings)), key=strings.__getitem__)
        by_rank = np.argsort(self._rank)
        old_sorted = [strings[i] for i in by_rank.tolist()]
        at = np.array([bisect_left(old_sorted, strings[i]) for i in new], dtype=np.int64)
        rank = np.empty(len(strings), dtype=np.int64)
        rank[:known] = self._rank + np.searchsorted(at, self._rank, side="right")
        rank[new] = at + np.arange(len(new))
        self._rank = rank
        return rank

    def words(self) -> Ragged:
        """Return, per id, the ids of its string's words (split on spaces), adding new words.

        A word that is an id of its own is its own split, so the vocabulary stops growing.
        """
        lists: list[list[int]] = []
        start = self._words.rows
        while start + len(lists) < len(self.strings):
            lists.append([self.id(w) for w in self.strings[start + len(lists)].split()])
        if lists:
            self._words = Ragged.concat([self._words, Ragged.from_lists(lists)])
        return self._words

    def kept_arrays(self) -> dict[str, np.ndarray]:
        """Return the derived arrays worked out so far, to save beside the strings."""
        return {
            "vocab_rank": self._rank,
            "vocab_words_ptr": self._words.ptr,
            "vocab_words_values": self._words.values,
        }


RUN_COPY_FROM = 64
"""Rows per run, on average, from which :meth:`Ragged.take` copies runs instead of values."""


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
        values = np.array(flat, dtype=VALUES).reshape(shape)
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
        """Return the given rows, in that order.

        Rows that follow one another are copied as one slice: a write keeps a million rows in
        a few thousand runs, and copying runs is ten times faster than gathering each value.
        """
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths()[rows]
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1] + 1]) if len(rows) else rows
        if not len(rows) or len(starts) * RUN_COPY_FROM > len(rows):
            at = np.repeat(self.ptr[rows] - ptr[:-1], lengths) + np.arange(ptr[-1])
            return Ragged(ptr, self.values[at])
        ends = np.r_[starts[1:], len(rows)]
        first, last = self.ptr[rows[starts]], self.ptr[rows[ends - 1] + 1]
        pieces = [self.values[a:b] for a, b in zip(first.tolist(), last.tolist(), strict=True)]
        values = np.concatenate(pieces) if pieces else self.values[:0]
        return Ragged(ptr, values)

    @staticmethod
    def concat(parts: Sequence[Ragged]) -> Ragged:
        """Stack the rows of several ragged arrays."""
        ptr = [np.zeros(1, dtype=np.int64)]
        offset = 0
        for part in parts:
            ptr.append(part.ptr[1:] + offset)
            offset += int(part.ptr[-1])
        return Ragged(np.concatenate(ptr), np.concatenate([p.values for p in parts]))

    def column_counts(self, columns: int) -> np.ndarray:
        """Return how many rows hold each id in ``range(columns)`` (a repeated id counts once).

        The column sums of :meth:`incidence`, without building it (or importing scipy).
        """
        pairs = unique_rows(self.row_of_values().astype(np.int64) * columns + self.values)
        return np.bincount(pairs % columns, minlength=columns)

    def incidence(self, columns: int) -> sp.csr_matrix:
        """Return the rows × ids 0/1 matrix (a repeated id counts once)."""
        import scipy.sparse as sp

        ones = np.ones(len(self.values), dtype=np.float32)
        matrix = sp.csr_matrix(
            (ones, (self.row_of_values(), self.values)), shape=(self.rows, columns)
        )
        matrix.data[:] = 1.0
        return matrix


@dataclass(frozen=True)
class ExtractionTable:
    """Every chunk's entities, keywords and triples (subject, predicate, object ids), in order.

    ``pages``: each chunk's own page entity (its title's key; -1: no title), when the extractor
    has it at hand; the passage graph works it out otherwise.
    """

    ids: list[str]
    vocab: Vocabulary
    entities: Ragged
    keywords: Ragged
    triples: Ragged
    pages: np.ndarray | None = None

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

    def compact(self) -> ExtractionTable:
        """Return this table with a vocabulary of only the strings it uses (to send it)."""
        pages = self.pages if self.pages is not None else np.zeros(0, dtype=np.int64)
        used = distinct(
            np.concatenate([
                self.entities.values.ravel(), self.keywords.values.ravel(),
                self.triples.values.ravel(), pages[pages >= 0],
            ]).astype(np.int64)
        )  # fmt: skip
        new = np.full(len(self.vocab), -1, dtype=np.int64)
        new[used] = np.arange(len(used))
        words = self.vocab.strings
        return self._moved(Vocabulary(words[i] for i in used.tolist()), new)

    @staticmethod
    def joined(parts: Iterable[ExtractionTable]) -> ExtractionTable:
        """Return the rows of every part in turn, in one vocabulary (each part has its own).

        ``parts`` may be read one at a time (a generator): only their ids and arrays are kept.
        """
        vocab = Vocabulary()
        moved = [
            part._moved(vocab, np.array([vocab.id(s) for s in part.vocab.strings], np.int64))
            for part in parts
        ]
        pages = [part.pages for part in moved]
        return ExtractionTable(
            [i for part in moved for i in part.ids],
            vocab,
            *(Ragged.concat([getattr(part, name) for part in moved]) for name in PARTS),
            None if any(p is None for p in pages) else np.concatenate(pages),  # type: ignore[arg-type]
        )

    def take(self, rows: np.ndarray) -> ExtractionTable:
        """Return the table of ``rows``, in that order."""
        return ExtractionTable(
            [self.ids[i] for i in rows.tolist()],
            self.vocab,
            *(getattr(self, name).take(rows) for name in PARTS),
            None if self.pages is None else self.pages[rows],
        )

    def _moved(self, vocab: Vocabulary, new: np.ndarray) -> ExtractionTable:
        """Return this table in ids of ``vocab``, ``new[i]`` being id ``i``'s there."""

        def mapped(part: Ragged) -> Ragged:
            return Ragged(part.ptr, new[part.values].astype(VALUES))

        pages = self.pages
        if pages is not None:  # -1 (no title) stays -1, even in an empty vocabulary
            pages = np.append(new, -1)[np.where(pages >= 0, pages, len(new))]
        return ExtractionTable(
            self.ids, vocab, *(mapped(getattr(self, name)) for name in PARTS), pages
        )

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
        pages = {"pages": self.pages} if self.pages is not None else None
        save_ragged(path, {n: getattr(self, n) for n in PARTS}, self.ids, self.vocab, pages)

    @classmethod
    def load(cls, path: Path) -> ExtractionTable:
        """Read what :meth:`save` wrote."""
        parts, arrays, ids, vocab, _ = load_ragged(path, PARTS, ("pages",))
        return cls(ids, vocab, **parts, pages=arrays.get("pages"))


PARTS = ("entities", "keywords", "triples")


def save_ragged(
    path: Path,
    parts: dict[str, Ragged],
    ids: list[str],
    vocab: Vocabulary,
    arrays: dict[str, np.ndarray] | None = None,
    extra: dict | None = None,
) -> None:
    """Write ragged arrays (and plain ``arrays``) into ``path`` (.npz).

    The ids, the vocabulary's strings and any ``extra`` JSON-ready data go beside it (.json).
    """
    flat = dict(arrays or {})
    for name, part in parts.items():
        flat |= {f"{name}_ptr": part.ptr, f"{name}_values": part.values}
    np.savez(path, **flat)
    path.with_suffix(".json").write_bytes(
        orjson.dumps({"ids": ids, "vocab": vocab.strings, **(extra or {})})
    )


def load_ragged(
    path: Path, names: Sequence[str], arrays: Sequence[str] = ()
) -> tuple[dict[str, Ragged], dict[str, np.ndarray], list[str], Vocabulary, dict]:
    """Read what :func:`save_ragged` wrote.

    Returns the named ragged and plain arrays, the ids, the vocabulary and the rest of the .json.
    """
    meta = orjson.loads(verify_file(path.with_suffix(".json")).read_bytes())
    with np.load(verify_file(path)) as data:
        # a part or array the file lacks (written by an older hopgraph) is left out
        parts = {
            n: Ragged(data[f"{n}_ptr"], data[f"{n}_values"].astype(VALUES, copy=False))
            for n in names
            if f"{n}_ptr" in data.files
        }
        plain = {n: data[n] for n in arrays if n in data.files}
        kept = {}
        if "vocab_rank" in data.files:  # saved with Vocabulary.kept_arrays
            words = Ragged(data["vocab_words_ptr"], data["vocab_words_values"].astype(VALUES))
            kept = {"rank": data["vocab_rank"], "words": words}
    return parts, plain, meta.pop("ids"), Vocabulary(meta.pop("vocab"), **kept), meta


def extractions_saved(folder: Path) -> bool:
    """Tell whether a graph folder holds its extractions (one table, or in parts)."""
    return (folder / EXTRACTIONS_FILE).is_file() or (folder / EXTRACTION_PARTS).is_dir()


def extraction_parts(folder: Path) -> list[tuple[str, int, int]]:
    """Return a graph folder's extraction parts: (file, first row, row after the last)."""
    listed = orjson.loads(verify_file(folder / EXTRACTION_PARTS / "parts.json").read_bytes())
    return [(str(name), int(start), int(stop)) for name, start, stop in listed]


def load_extractions(folder: Path) -> ExtractionTable:
    """Read a graph folder's extractions: its one table, or its parts joined, in row order."""
    if (folder / EXTRACTIONS_FILE).is_file() or not (folder / EXTRACTION_PARTS).is_dir():
        return ExtractionTable.load(folder / EXTRACTIONS_FILE)
    parts = folder / EXTRACTION_PARTS
    return ExtractionTable.joined(
        ExtractionTable.load(parts / name) for name, _, _ in extraction_parts(folder)
    )
