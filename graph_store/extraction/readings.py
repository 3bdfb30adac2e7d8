"""The offline extractor over a whole corpus, kept between writes, as arrays.

Every chunk's reading (extraction.offline.read_chunk) depends on the corpus only through the title
index (the titles, and the words written in lower case), and its keywords on the corpus's document
frequencies. So an add or delete re-reads only the new chunks and the chunks that may contain an
alias or a word whose standing changed, then picks every chunk's keywords again from the stored
counts: the result equals a fresh extraction of the final corpus
(tests/unit/test_incremental_graphs.py).

The readings are kept as ragged integer arrays over one vocabulary (extraction.table), so a write
at a million chunks loads, re-picks and saves them in seconds, with vectorised arithmetic instead
of a Python loop per chunk.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from hopgraph.graph_store.documents import Chunk

from .base import Extraction
from .offline import (
    CONNECTORS,
    Reading,
    TitleIndex,
    content_words,
    lower_case_words,
    read_chunk,
    title_keys,
    token_key,
)
from .table import ExtractionTable, Ragged, Vocabulary, distinct, load_ragged, save_ragged

READINGS_FILE = "offline-readings.npz"
"""The arrays; the chunk ids, vocabulary, lower-case word counts and titles' keys go beside it as
.json."""
KEYWORDS_PER_CHUNK = 5
ARRAYS = ("entities", "entity_tf", "word_tf", "capitals", "triples")


@dataclass(frozen=True)
class ReadingTable:
    """The readings of chunks (rows in ``ids`` order), in ids of ``vocab``.

    ``page``: each chunk's own page entity (-1: no title). ``entity_tf`` / ``word_tf``: rows of
    (id, count) pairs. ``capitals``: the words a chunk writes with a capital. ``triples``: rows
    of (subject, predicate, object).
    """

    ids: list[str]
    vocab: Vocabulary
    page: np.ndarray
    entities: Ragged
    entity_tf: Ragged
    word_tf: Ragged
    capitals: Ragged
    triples: Ragged

    @classmethod
    def encode(
        cls, chunks: Sequence[Chunk], readings: Sequence[Reading], vocab: Vocabulary
    ) -> ReadingTable:
        """Encode the readings of ``chunks`` into ids of ``vocab`` (which grows)."""

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
        )

    def take(self, rows: np.ndarray) -> ReadingTable:
        """Return the given rows, in that order."""
        parts = {name: getattr(self, name).take(rows) for name in ARRAYS}
        return ReadingTable([self.ids[i] for i in rows], self.vocab, self.page[rows], **parts)

    @staticmethod
    def concat(tables: Sequence[ReadingTable]) -> ReadingTable:
        """Return the rows of every table in turn (they share the first one's vocabulary)."""
        parts = {n: Ragged.concat([getattr(t, n) for t in tables]) for n in ARRAYS}
        page = np.concatenate([t.page for t in tables])
        ids = [i for t in tables for i in t.ids]
        return ReadingTable(ids, tables[0].vocab, page, **parts)

    def into(self, vocab: Vocabulary) -> ReadingTable:
        """Return this table in ids of ``vocab`` (which grows), from its own vocabulary."""
        new = np.array([vocab.id(s) for s in self.vocab.strings], dtype=np.int64)

        def mapped(part: Ragged) -> Ragged:
            if part.values.ndim == 2 and part.values.shape[1] == 2:  # (id, count): ids move
                return Ragged(
                    part.ptr, np.column_stack([new[part.values[:, 0]], part.values[:, 1]])
                )
            return Ragged(part.ptr, new[part.values])

        parts = {name: mapped(getattr(self, name)) for name in ARRAYS}
        page = np.where(self.page >= 0, new[np.maximum(self.page, 0)], -1)
        return ReadingTable(self.ids, vocab, page, **parts)

    def save(self, directory: Path, extra: dict) -> None:
        """Write the arrays and, beside them, the ids, vocabulary and ``extra`` (JSON-ready)."""
        parts = {name: getattr(self, name) for name in ARRAYS}
        save_ragged(
            directory / READINGS_FILE,
            parts,
            self.ids,
            self.vocab,
            {"page": self.page},
            extra,
        )

    @classmethod
    def load(cls, directory: Path) -> tuple[ReadingTable, dict] | None:
        """Read what :meth:`save` wrote, and its ``extra``; ``None`` when absent."""
        path = directory / READINGS_FILE
        if not path.is_file() or not path.with_suffix(".json").is_file():
            return None
        parts, plain, ids, vocab, meta = load_ragged(path, ARRAYS, ["page"])
        return cls(ids, vocab, plain["page"], **parts), meta


def empty_table(vocab: Vocabulary | None = None) -> ReadingTable:
    """Return a table of no chunks."""
    return ReadingTable.encode([], [], Vocabulary() if vocab is None else vocab)


class CorpusReadings:
    """The offline extractor's state over a corpus, kept between writes (see the module doc)."""

    def __init__(
        self,
        corpus: Sequence[Chunk] = (),
        table: ReadingTable | None = None,
        lower: Counter[str] | None = None,
        alias_keys: dict[str, list[str]] | None = None,
    ) -> None:
        """Resume from a saved state of ``corpus``.

        That is its readings, lower-case word counts and titles' keys (offline.title_keys: kept,
        so a write does not work out a million titles' aliases again).
        """
        self.table = empty_table() if table is None else table
        self.lower: Counter[str] = lower or Counter()
        self.titles: Counter[str] = Counter(c.title for c in corpus if c.title)
        self.alias_keys: dict[str, Sequence[str]] = dict(alias_keys or {})

    def update(
        self,
        corpus: Sequence[Chunk],
        removed: Sequence[Chunk],
        added: Sequence[Chunk],
        show_progress: bool = False,
    ) -> ExtractionTable:
        """Apply a change (``removed`` and ``added`` chunks); return ``corpus``'s extractions."""
        # lower-case counts first: an alias that stays a common word never linked, nor will
        changed = self._shift_lower(removed, added)
        changed |= self._shift_titles(removed, added)
        titles = TitleIndex(list(self.titles), frozenset(self.lower), self.alias_keys)
        gone = {c.id for c in removed} | {c.id for c in added}
        stale = self._may_contain(changed, corpus, gone)
        todo = [*stale, *added]
        fresh = read_table(todo, titles, self.table.vocab, show_progress)
        redo = gone | {c.id for c in stale}
        kept = np.array([i for i, cid in enumerate(self.table.ids) if cid not in redo], np.int64)
        table = ReadingTable.concat([self.table.take(kept), fresh])
        row = {cid: i for i, cid in enumerate(table.ids)}
        self.table = table.take(np.array([row[c.id] for c in corpus], dtype=np.int64))
        keywords = pick_keywords(self.table, max(len(corpus), 1))
        t = self.table
        return ExtractionTable(t.ids, t.vocab, t.entities, keywords, t.triples)

    def save(self, directory: Path) -> None:
        """Write the readings, the lower-case word counts and the titles' keys."""
        self.table.save(directory, {"lower": self.lower, "alias_keys": self.alias_keys})

    @classmethod
    def load(cls, directory: Path, corpus: Sequence[Chunk]) -> CorpusReadings | None:
        """Resume the state saved with ``corpus``; ``None`` when there is none to resume."""
        found = ReadingTable.load(directory)
        if found is None or set(found[0].ids) != {c.id for c in corpus}:
            return None  # none, written by an older hopgraph, or not this corpus's: start afresh
        table, extra = found
        return cls(corpus, table, Counter(extra["lower"]), extra.get("alias_keys"))

    def _may_contain(self, keys: set[str], corpus: Sequence[Chunk], skip: set[str]) -> list[Chunk]:
        """Return the chunks of ``corpus`` (but ``skip``) that may contain one of ``keys``.

        A superset test in two steps. Arrays first, for every chunk at once: a name starts with
        a capital, so the key's first word is written with a capital in the chunk (any of its
        words when the first is a connector), and the chunk counts every content word of the
        key (the last one possibly only as a capital, "Guy's" read as "guy"). Then the text,
        for those only: the key's words stand together among the chunk's tokens, as the title
        index matches them.
        """
        pairs = _key_candidates(self.table, sorted(keys))
        chunk_of = {c.id: c for c in corpus}
        out = []
        for row, wanted in pairs.items():
            chunk = chunk_of.get(self.table.ids[row])
            if chunk is not None and chunk.id not in skip and _holds_any(chunk, wanted):
                out.append(chunk)
        return out

    def _shift_titles(self, removed: Sequence[Chunk], added: Sequence[Chunk]) -> set[str]:
        """Count the change's titles; return the linking alias keys of titles that came or went.

        A one-word alias the corpus writes in lower case links nowhere (TitleIndex); were that
        word's standing to change, :meth:`_shift_lower` reports it. None on a first reading:
        there is no earlier reading to make stale. Keeps ``alias_keys`` in step with the titles.
        """
        flipped = _shift(
            self.titles, [c.title for c in removed if c.title], [c.title for c in added if c.title]
        )
        keys = {k for t in flipped for k in self._keys_of(t)[1:]}
        self._keep_alias_keys(flipped)
        if not self.table.ids:
            return set()  # a first reading: no earlier reading to make stale
        return {k for k in keys if TitleIndex.indexes(k, self.lower)}

    def _keys_of(self, title: str) -> Sequence[str]:
        """Return a title's :func:`title_keys`, kept or worked out (and kept)."""
        if title not in self.alias_keys:
            self.alias_keys[title] = title_keys(title)
        return self.alias_keys[title]

    def _keep_alias_keys(self, flipped: set[str]) -> None:
        """Keep the alias keys of the corpus's titles: drop those gone, fill in those missing."""
        for title in flipped - self.titles.keys():
            self.alias_keys.pop(title, None)
        if len(self.alias_keys) < len(self.titles):  # a state kept without them: fill in once
            for title in self.titles.keys() - self.alias_keys.keys():
                self._keys_of(title)

    def _shift_lower(self, removed: Sequence[Chunk], added: Sequence[Chunk]) -> set[str]:
        """Count lower-case usage; return the words that became or stopped being common."""
        flipped = _shift(
            self.lower,
            (w for c in removed for w in lower_case_words(c)),
            (w for c in added for w in lower_case_words(c)),
        )
        return {w for w in flipped if w == w.lower()}


def _key_candidates(table: ReadingTable, keys: Sequence[str]) -> dict[int, list[str]]:
    """Return, per row of ``table``, the ``keys`` that pass the arrays' half of the test."""
    vocab, size = table.vocab, len(table.vocab)
    if not keys or not size:
        return {}
    cap_rows, cap_cols, need_rows, need_cols, need = [], [], [], [], []
    for k, key in enumerate(keys):
        words = key.split()
        required = [vocab.ids.get(w, -1) for w in content_words(words)]
        need.append(len(required))
        if -1 in required:
            continue  # a word no chunk counts: no chunk can hold the key
        # a name starts with a capital; a span may start with a connector ("van Gogh")
        starts = set(words) if words[0] in CONNECTORS else {words[0]}
        capital = [vocab.ids[w] for w in starts if w in vocab.ids]
        cap_rows += [k] * len(capital)
        cap_cols += capital
        need_rows += [k] * len(required)
        need_cols += required

    # only the key words matter: keep the (row, id) pairs of those, a few of the corpus's millions
    relevant = np.zeros(size, dtype=bool)
    relevant[cap_cols + need_cols] = True
    cap_at, cap_ids = _pairs_in(table.capitals.ptr, table.capitals.values, relevant)
    tf_at, tf_ids = _pairs_in(table.word_tf.ptr, table.word_tf.values[:, 0], relevant)
    touched = distinct(np.concatenate([cap_at, tf_at]))

    def incidence(rows: np.ndarray, cols: np.ndarray) -> sp.csr_matrix:
        ones = np.ones(len(rows), dtype=np.float32)
        local = np.searchsorted(touched, rows)
        matrix = sp.csr_matrix((ones, (local, cols)), shape=(len(touched), size))
        matrix.data[:] = 1.0  # a word both counted and capitalised is written once
        return matrix

    def keys_matrix(rows: list[int], cols: list[int]) -> sp.csr_matrix:
        ones = np.ones(len(rows), dtype=np.float32)
        return sp.csr_matrix((ones, (rows, cols)), shape=(len(keys), size))

    capitals = incidence(cap_at, cap_ids)
    written = incidence(np.concatenate([cap_at, tf_at]), np.concatenate([cap_ids, tf_ids]))
    hits = (capitals @ keys_matrix(cap_rows, cap_cols).T).tocoo()
    holds = (written @ keys_matrix(need_rows, need_cols).T).tocsr()
    counts = np.asarray(holds[hits.row, hits.col]).ravel()
    keep = counts >= np.asarray(need)[hits.col]
    found: dict[int, list[str]] = {}
    rows = touched[hits.row[keep]].tolist()
    for row, k in zip(rows, hits.col[keep].tolist(), strict=True):
        found.setdefault(row, []).append(keys[k])
    return found


def _pairs_in(
    ptr: np.ndarray, values: np.ndarray, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return (row, id) of the values of a ragged array whose id is ``wanted`` (a mask)."""
    at = np.flatnonzero(wanted[values])
    return np.searchsorted(ptr, at, side="right") - 1, values[at]


def _holds_any(chunk: Chunk, keys: Sequence[str]) -> bool:
    """Tell whether one of ``keys`` stands among the chunk's tokens (last word maybe as 's)."""
    tokens = f" {token_key(chunk.text)} "
    return any(f" {key} " in tokens or f" {key}'s " in tokens for key in keys)


PARALLEL_FROM = 4000
"""Chunks to read from which the reading is spread over worker processes (one per core)."""
BATCH = 1000
_WORK: tuple[Sequence[Chunk], TitleIndex] | None = None
"""What :func:`read_table`'s forked workers read (set only while it runs)."""


def read_table(
    chunks: Sequence[Chunk], titles: TitleIndex, vocab: Vocabulary, show_progress: bool = False
) -> ReadingTable:
    """Read every chunk against ``titles`` into a table in ids of ``vocab``.

    Reading is pure Python (a quarter of a millisecond per chunk), so from
    :data:`PARALLEL_FROM` chunks on it runs in forked worker processes, one per core: they
    inherit the chunks and the title index instead of receiving them, and send back batches
    already encoded (arrays and their own vocabulary), which only need their ids mapped.
    """
    global _WORK
    workers = min(os.cpu_count() or 1, len(chunks) // BATCH)
    bar = tqdm(total=len(chunks), desc="extracting", unit="chunk", disable=not show_progress)
    parallel = len(chunks) >= PARALLEL_FROM and workers > 1
    _WORK = (chunks, titles)
    parts = [empty_table(vocab)]
    try:
        if parallel and "fork" in get_all_start_methods():
            with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
                for part in pool.map(_read_batch, range(0, len(chunks), BATCH)):
                    parts.append(part.into(vocab))
                    bar.update(len(part.ids))
        else:
            for start in range(0, len(chunks), BATCH):
                parts.append(_read_batch(start, vocab))
                bar.update(len(parts[-1].ids))
    finally:
        _WORK = None
        bar.close()
    return ReadingTable.concat(parts)


def _read_batch(start: int, vocab: Vocabulary | None = None) -> ReadingTable:
    """Read and encode one batch of the chunks in ``_WORK`` (in a worker: its own vocabulary)."""
    assert _WORK is not None
    chunks, titles = _WORK
    batch = chunks[start : start + BATCH]
    readings = [read_chunk(c, titles) for c in batch]
    return ReadingTable.encode(batch, readings, Vocabulary() if vocab is None else vocab)


def _shift(counter: Counter[str], gone: Iterable[str], new: Iterable[str]) -> set[str]:
    """Apply counts; return the items whose presence (count > 0) changed.

    The change is counted first (Counter counts in C), so the work per distinct item is done
    once: a fresh build passes every word of the corpus, tens of millions at a million chunks.
    """
    change = Counter(new)
    change.subtract(Counter(gone))
    flipped = set()
    for x, delta in change.items():
        was = counter.get(x, 0)
        now = was + delta
        if (now > 0) != (was > 0):
            flipped.add(x)
        if now > 0:
            counter[x] = now
        elif was:
            del counter[x]
    return flipped


def pick_keywords(table: ReadingTable, n: int) -> Ragged:
    """Pick each chunk's most distinctive entities, then words, by tf·idf; never its own title.

    idf = log((n + 1) / (df + 0.5)) over the ``n`` chunks; ties go to the name first in string
    order. Up to :data:`KEYWORDS_PER_CHUNK` entities; words fill the rest, but none that is a
    word of a chosen entity or of the page's title.
    """
    rows_n, rank = table.page.shape[0], table.vocab.order()

    def scored(part: Ragged) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, ids, tf = part.row_of_values(), part.values[:, 0], part.values[:, 1]
        df = np.bincount(ids, minlength=len(table.vocab))  # one (id, count) per chunk and id
        return rows, ids, tf * np.log((n + 1) / (df[ids] + 0.5))

    rows, ids, score = scored(table.entity_tf)
    own = ids == table.page[rows]
    limit = np.full(rows_n, KEYWORDS_PER_CHUNK)
    e_rows, e_ids = _top_per_row(rows[~own], ids[~own], score[~own], rank, limit)
    need = limit - np.bincount(e_rows, minlength=rows_n)
    rows, ids, score = scored(table.word_tf)
    wanted = need[rows] > 0
    wanted &= ~_taken(rows, ids, _taken_words(table, e_rows, e_ids, need), len(table.vocab))
    w_rows, w_ids = _top_per_row(rows[wanted], ids[wanted], score[wanted], rank, need)
    # entities first, then words, each in rank order (the selections come out ordered by row)
    all_rows = np.concatenate([e_rows, w_rows])
    order = np.argsort(all_rows, kind="stable")
    ptr = np.zeros(rows_n + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_rows, minlength=rows_n), out=ptr[1:])
    return Ragged(ptr, np.concatenate([e_ids, w_ids])[order])


def _top_per_row(
    rows: np.ndarray, ids: np.ndarray, score: np.ndarray, rank: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the best ``limit[row]`` (row, id) pairs of each row, by score then name.

    ``rows`` come sorted (a ragged table's order). Each pass takes every row's best remaining
    pair: a handful of linear passes instead of sorting every candidate of the corpus.
    """
    if not len(rows):
        return rows, ids
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    lengths = np.diff(np.r_[starts, len(rows)])
    wanted = limit[rows[starts]]
    score, tie = score.astype(np.float64), rank[ids].astype(np.int64)
    picked: list[np.ndarray] = []
    for step in range(int(wanted.max(initial=0))):
        best = np.maximum.reduceat(score, starts)
        at_best = score == np.repeat(best, lengths)
        key = np.where(at_best, tie, np.iinfo(np.int64).max)
        first = np.minimum.reduceat(key, starts)  # the name first in order among equal scores
        open_row = (best > -np.inf) & (step < wanted)
        chosen = np.flatnonzero(at_best & (key == np.repeat(first, lengths)))
        chosen = chosen[open_row[np.searchsorted(starts, chosen, side="right") - 1]]
        picked.append(chosen)
        score[chosen] = -np.inf
    if not picked:
        return rows[:0], ids[:0]
    taken = np.concatenate(picked)
    taken = taken[np.argsort(rows[taken], kind="stable")]  # by row, each row's in pick order
    return rows[taken], ids[taken]


def _taken(rows: np.ndarray, ids: np.ndarray, taken: np.ndarray, size: int) -> np.ndarray:
    """Mask the (row, id) pairs whose code (row × ``size`` + id) is in ``taken``."""
    out = np.zeros(len(rows), dtype=bool)
    if not len(taken):
        return out
    in_names = np.zeros(size, dtype=bool)
    in_names[taken % size] = True
    maybe = np.flatnonzero(in_names[ids])  # only words of some chosen name need a lookup
    codes, known = rows[maybe] * size + ids[maybe], np.sort(taken)
    at = np.minimum(np.searchsorted(known, codes), len(known) - 1)
    out[maybe] = known[at] == codes
    return out


def _taken_words(
    table: ReadingTable, e_rows: np.ndarray, e_ids: np.ndarray, need: np.ndarray
) -> np.ndarray:
    """Return (row × vocabulary + word) codes of the words of chosen entities and of the page."""
    page_rows = np.flatnonzero((table.page >= 0) & (need > 0))
    mine = need[e_rows] > 0
    rows = np.concatenate([e_rows[mine], page_rows])
    names = np.concatenate([e_ids[mine], table.page[page_rows]])
    unique, where = np.unique(names, return_inverse=True)
    vocab = table.vocab
    split = Ragged.from_lists(
        [[vocab.ids[w] for w in vocab.strings[i].split() if w in vocab.ids] for i in unique]
    )
    words = split.take(where)
    return np.repeat(rows, words.lengths()) * len(vocab) + words.values


class OfflineExtractor:
    """Entities, keywords and triples by title linking and patterns (extraction.offline)."""

    name = "offline"

    def extract(self, chunks: Sequence[Chunk], show_progress: bool = False) -> list[Extraction]:
        """Extract every chunk (a fresh corpus: everything is new)."""
        return CorpusReadings().update(chunks, [], chunks, show_progress).to_extractions()
