"""The offline readings of a corpus's chunks as arrays (extraction.readings keeps them current).

One row per chunk, every string an id of one vocabulary: a million chunks' readings load, change
and save in seconds, with vectorised arithmetic instead of a Python loop per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hopgraph.graph_store.documents.schema import Chunk

from .offline import Reading, token_key
from .table import VALUES, Ragged, Vocabulary, load_ragged, save_ragged

READINGS_FILE = "offline-readings.npz"
"""The arrays; the chunk ids, vocabulary, lower-case word counts and titles' keys go beside it as
.json."""
ARRAYS = ("entities", "entity_tf", "word_tf", "capitals", "triples", "keyword_at")
PLAIN = ("page", "keyword_entities")
UNPICKED = -1
"""``keyword_entities`` of a row whose keywords are not picked yet (extraction.keywords)."""


@dataclass(frozen=True)
class ReadingTable:
    """The readings of chunks (rows in ``ids`` order), in ids of ``vocab``.

    ``page``: each chunk's own page entity (-1: no title). ``entity_tf`` / ``word_tf``: rows of
    (id, count) pairs. ``capitals``: the words a chunk writes with a capital. ``triples``: rows
    of (subject, predicate, object). ``keyword_at``: the keywords last picked, entities first, as
    places in the row's ``entity_tf`` / ``word_tf`` pairs; ``keyword_entities``: how many are
    entities (:data:`UNPICKED`: none picked yet).
    """

    ids: list[str]
    vocab: Vocabulary
    page: np.ndarray
    entities: Ragged
    entity_tf: Ragged
    word_tf: Ragged
    capitals: Ragged
    triples: Ragged
    keyword_at: Ragged
    keyword_entities: np.ndarray

    @classmethod
    def encode(
        cls, chunks: Sequence[Chunk], readings: Sequence[Reading], vocab: Vocabulary
    ) -> ReadingTable:
        """Encode the readings of ``chunks`` into ids of ``vocab`` (which grows); none picked."""

        def ids(items: Sequence[str]) -> list[int]:
            return [vocab.id(x) for x in items]

        return cls(
            [c.id for c in chunks],
            vocab,
            np.array([vocab.id(token_key(c.title)) if c.title else -1 for c in chunks], np.int64),
            Ragged.from_lists([ids(r.entities) for r in readings]),
            Ragged.from_lists(
                [[(vocab.id(e), n) for e, n in r.entity_counts.items()] for r in readings], 2
            ),
            Ragged.from_lists(
                [[(vocab.id(w), n) for w, n in r.word_counts.items()] for r in readings], 2
            ),
            Ragged.from_lists([ids(sorted(r.capitals)) for r in readings]),
            Ragged.from_lists(
                [[ids((t.subject, t.predicate, t.object)) for t in r.triples] for r in readings], 3
            ),
            Ragged.from_lists([[] for _ in chunks]),
            np.full(len(chunks), UNPICKED, dtype=np.int64),
        )

    @property
    def rows(self) -> int:
        """Return the number of chunks."""
        return len(self.ids)

    def take(self, rows: np.ndarray) -> ReadingTable:
        """Return the given rows, in that order."""
        parts = {name: getattr(self, name).take(rows) for name in ARRAYS}
        plain = {name: getattr(self, name)[rows] for name in PLAIN}
        return ReadingTable([self.ids[i] for i in rows], self.vocab, **plain, **parts)

    @staticmethod
    def concat(tables: Sequence[ReadingTable]) -> ReadingTable:
        """Return the rows of every table in turn (they share the first one's vocabulary)."""
        parts = {n: Ragged.concat([getattr(t, n) for t in tables]) for n in ARRAYS}
        plain = {n: np.concatenate([getattr(t, n) for t in tables]) for n in PLAIN}
        ids = [i for t in tables for i in t.ids]
        return ReadingTable(ids, tables[0].vocab, **plain, **parts)

    def picked(self, keyword_at: Ragged, entities: np.ndarray) -> ReadingTable:
        """Return this table with keywords picked (``keyword_at``, ``entities`` of them)."""
        fields = {n: getattr(self, n) for n in (*ARRAYS, *PLAIN) if not n.startswith("keyword")}
        return ReadingTable(
            self.ids, self.vocab, keyword_at=keyword_at, keyword_entities=entities, **fields
        )

    def keyword_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Locate each kept keyword (one home for the split of ``keyword_at``).

        Returns its row, its place in the row's keyword list, whether it is an entity, and its
        pair's place among all the pairs of its kind (``entity_tf`` or ``word_tf``).
        """
        at, count = self.keyword_at, self.keyword_entities
        row = at.row_of_values()
        place = np.arange(len(at.values)) - at.ptr[row]
        is_entity = place < count[row]
        ptr = np.where(is_entity, self.entity_tf.ptr[row], self.word_tf.ptr[row])
        return row, place, is_entity, ptr + at.values

    def keywords(self) -> Ragged:
        """Return each row's keywords as ids, entities first."""
        _, _, is_entity, pair = self.keyword_pairs()
        ids = np.empty(len(pair), dtype=VALUES)
        ids[is_entity] = self.entity_tf.values[pair[is_entity], 0]
        ids[~is_entity] = self.word_tf.values[pair[~is_entity], 0]
        return Ragged(self.keyword_at.ptr, ids)

    def into(self, vocab: Vocabulary) -> ReadingTable:
        """Return this table in ids of ``vocab`` (which grows), from its own vocabulary."""
        new = np.array([vocab.id(s) for s in self.vocab.strings], dtype=VALUES)

        def mapped(part: Ragged) -> Ragged:
            if part.values.ndim == 2 and part.values.shape[1] == 2:  # (id, count): ids move
                return Ragged(
                    part.ptr, np.column_stack([new[part.values[:, 0]], part.values[:, 1]])
                )
            return Ragged(part.ptr, new[part.values])

        parts = {name: mapped(getattr(self, name)) for name in ARRAYS if name != "keyword_at"}
        parts["keyword_at"] = self.keyword_at  # places, not ids
        page = np.where(self.page >= 0, new[np.maximum(self.page, 0)], -1)
        return ReadingTable(self.ids, vocab, page, keyword_entities=self.keyword_entities, **parts)

    def save(self, directory: Path, extra: dict, name: str = READINGS_FILE) -> None:
        """Write the arrays and, beside them, the ids, vocabulary and ``extra`` (JSON-ready)."""
        parts = {part: getattr(self, part) for part in ARRAYS}
        plain = {part: getattr(self, part) for part in PLAIN} | self.vocab.kept_arrays()
        save_ragged(directory / name, parts, self.ids, self.vocab, plain, extra)

    @classmethod
    def load(cls, directory: Path) -> tuple[ReadingTable, dict] | None:
        """Read what :meth:`save` (or :func:`save_in_parts`) wrote, and its ``extra``.

        ``None`` when absent. A state saved before keywords were kept reads as none picked;
        one saved in parts reads as their rows in turn, in one vocabulary.
        """
        found = _load_file(directory, READINGS_FILE)
        if found is None:
            return None
        table, meta = found
        names = meta.pop(PARTS_KEY, None)
        if names is None:
            return table, meta
        vocab = Vocabulary()  # each part read, moved into it and let go in turn
        joined = [empty_table(vocab), *(read_part(directory, n).into(vocab) for n in names)]
        return cls.concat(joined), meta


PARTS_KEY = "parts"
"""The extra of a state saved in parts (:func:`save_in_parts`): their file names, in row order."""


def part_name(number: int) -> str:
    """Return the file of part ``number`` of a state saved in parts."""
    return READINGS_FILE.replace(".npz", f"-p{number:03d}.npz")


def save_in_parts(directory: Path, names: Sequence[str], extra: dict) -> None:
    """Write a state whose rows are the tables already saved as ``names`` (in row order).

    A cluster's graph build saves each task's rows as a part of their own (cluster/readings.py),
    so no process holds the whole corpus's readings; :meth:`ReadingTable.load` joins them.
    """
    empty_table().save(directory, extra | {PARTS_KEY: list(names)})


def saved_parts(directory: Path) -> tuple[list[str], dict] | None:
    """Return the parts' names and the extra of a state saved in parts; ``None`` otherwise."""
    found = _load_file(directory, READINGS_FILE)
    if found is None or found[1].get(PARTS_KEY) is None:
        return None
    extra = dict(found[1])
    return list(extra.pop(PARTS_KEY)), extra


def read_each(directory: Path) -> int:
    """Read a saved state a file at a time, its parts never joined (a check); return its rows.

    Raises what a missing or damaged file raises; 0 rows when none is saved.
    """
    found = _load_file(directory, READINGS_FILE)
    if found is None:
        return 0
    table, meta = found
    return table.rows + sum(read_part(directory, n).rows for n in meta.get(PARTS_KEY) or [])


def read_part(directory: Path, name: str) -> ReadingTable:
    """Read one part of a state saved in parts; a missing part is an error, not no state."""
    found = _load_file(directory, name)
    if found is None:
        raise FileNotFoundError(f"{directory / name} (a part of the saved readings) is missing")
    return found[0]


def _load_file(directory: Path, name: str) -> tuple[ReadingTable, dict] | None:
    """Read one table file and its extra; ``None`` when absent."""
    path = directory / name
    if not path.is_file() or not path.with_suffix(".json").is_file():
        return None
    parts, plain, ids, vocab, meta = load_ragged(path, ARRAYS, PLAIN)
    if "keyword_at" not in parts or "keyword_entities" not in plain:
        parts["keyword_at"] = Ragged.from_lists([[] for _ in ids])
        plain["keyword_entities"] = np.full(len(ids), UNPICKED, dtype=np.int64)
    return ReadingTable(ids, vocab, **plain, **parts), meta


def empty_table(vocab: Vocabulary | None = None) -> ReadingTable:
    """Return a table of no chunks."""
    return ReadingTable.encode([], [], Vocabulary() if vocab is None else vocab)
