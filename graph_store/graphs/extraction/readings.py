"""The offline extractor over a whole corpus, kept between writes, as arrays.

Every chunk's reading (extraction.offline.read_chunk) depends on the corpus only through the title
index (the titles, and the words written in lower case), and its keywords on the corpus's document
frequencies. So an add or delete re-reads only the new chunks and the chunks that may contain an
alias or a word whose standing changed, then brings the keywords up to date from the stored
counts (extraction.keywords): the result equals a fresh extraction of the final corpus
(tests/unit/graph_store/graphs/test_incremental_graphs.py).

The readings are kept as ragged integer arrays over one vocabulary (extraction.reading_table).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from hopgraph.core.forked import die_with_parent
from hopgraph.graph_store.documents.schema import Chunk

from .base import Extraction
from .keywords import pick_keywords
from .offline import (
    CONNECTORS,
    TitleIndex,
    content_words,
    lower_case_words,
    read_chunk,
    title_keys,
    token_key,
)
from .reading_table import ReadingTable, empty_table, save_in_parts, saved_parts
from .state_shards import SHARDS_KEY, apply_counts, load_whole
from .table import ExtractionTable, Ragged, Vocabulary, distinct
from .title_table import SavedTitles, save_titles

CorpusCounts = tuple[Counter[str], Counter[str], dict[str, Sequence[str]]]
"""What a first reading counts of chunks: lower-case words, titles, and the titles' keys."""


def corpus_counts(chunks: Iterable[Chunk]) -> CorpusCounts:
    """Count what a first reading of ``chunks`` needs of the corpus before reading any.

    Their lower-case words (offline.lower_case_words), their titles, and each title's keys
    (offline.title_keys); a cluster sums them over the parts of a corpus by shard
    (extraction.state_shards).
    """
    lower: Counter[str] = Counter()
    titles: Counter[str] = Counter()
    for chunk in chunks:
        lower.update(lower_case_words(chunk))
        if chunk.title:
            titles[chunk.title] += 1
    return lower, titles, {title: title_keys(title) for title in titles}


class CorpusReadings:
    """The offline extractor's state over a corpus, kept between writes (see the module doc)."""

    def __init__(
        self,
        corpus: Iterable[Chunk] = (),
        table: ReadingTable | None = None,
        lower: Counter[str] | None = None,
        alias_keys: Mapping[str, Sequence[str]] | None = None,
        claims: dict[str, str] | None = None,
    ) -> None:
        """Resume from a saved state of ``corpus``.

        That is its readings, lower-case word counts, titles' keys (offline.title_keys) and
        which title's entity claims each key (offline.TitleIndex): kept, so a write does not
        work out a million titles' aliases again.
        """
        self.table = empty_table() if table is None else table
        self.lower: Counter[str] = lower or Counter()
        self.titles: Counter[str] = Counter(c.title for c in corpus if c.title)
        self.alias_keys: dict[str, Sequence[str]] = dict(alias_keys or {})
        self.claims: dict[str, str] = {}
        self.key_words: Counter[int] = Counter()  # claimed keys by their number of words
        self.rows_elsewhere = False
        """The readings are saved in parts that tasks update (:meth:`load_counts`), not here."""
        if claims is None:
            self._reclaim({k for keys in self.alias_keys.values() for k in keys[1:]})
        else:
            self.claims = claims
            self.key_words.update(k.count(" ") + 1 for k in claims)

    def update(
        self,
        corpus: Sequence[Chunk],
        removed: Sequence[Chunk],
        added: Sequence[Chunk],
        show_progress: bool = False,
        texts: Mapping[str, Chunk] | None = None,
    ) -> ExtractionTable:
        """Apply a change (``removed`` and ``added`` chunks); return ``corpus``'s extractions.

        ``texts``: the chunks read before by id, with their texts, when ``corpus`` has none
        but the added ones' (a write's: graph_build); only those read again are looked up.
        """
        changed = self.shift(removed, added)
        gone = {c.id for c in removed} | {c.id for c in added}
        texts = {c.id: c for c in corpus} if texts is None else texts
        stale = may_contain(self.table, changed, texts, gone)
        todo = [*stale, *added]
        fresh = read_table(todo, self.title_index(), self.table.vocab, show_progress)
        # The old readings, their join with the fresh ones and the join in corpus order are
        # each about the corpus's size: each goes once the next is made (held together with
        # the picking, they took 2.5 GB more at a million chunks).
        table = ReadingTable.concat([self.table, fresh])
        del fresh
        self.table = empty_table(table.vocab)  # its rows are in ``table`` now
        row = {cid: i for i, cid in enumerate(table.ids)}  # a chunk read anew: its new row
        taken = table.take(np.array([row[c.id] for c in corpus], dtype=np.int64))
        del table, row
        return self.picked(taken)

    def shift(self, removed: Sequence[Chunk], added: Sequence[Chunk]) -> set[str]:
        """Count a change's words and titles; return the keys whose links may have changed.

        A chunk read before the change that may contain one of them (:func:`may_contain`) is
        read again.
        """
        # lower-case counts first: an alias that stays a common word never linked, nor will
        changed = self._shift_lower(removed, added)
        return changed | self._shift_titles(removed, added)

    def title_index(self) -> TitleIndex:
        """Return the index of the titles' claimed keys every reading is made against."""
        longest = max((n for n, count in self.key_words.items() if count), default=0)
        return TitleIndex.claimed(self.claims, frozenset(self.lower), longest)

    def picked(self, table: ReadingTable) -> ExtractionTable:
        """Keep ``table`` (the whole corpus's readings) with its keywords picked; return them."""
        self.table = t = pick_keywords(table, max(table.rows, 1))
        return ExtractionTable(t.ids, t.vocab, t.entities, t.keywords(), t.triples, t.page)

    def save(self, directory: Path, parts: Sequence[str] = ()) -> None:
        """Write the readings, the lower-case word counts and the titles' keys.

        ``parts``: the readings are those tables, already saved in ``directory`` (a cluster's
        tasks each saved their rows': reading_table.save_in_parts), not this state's table.
        """
        extra = {"lower": self.lower, "alias_keys": self.alias_keys, "claims": self.claims}
        save_titles(directory, self.title_index())  # what questions are linked against
        if parts:
            save_in_parts(directory, parts, extra)
        else:
            self.table.save(directory, extra)

    @classmethod
    def load(cls, directory: Path, corpus: Sequence[Chunk]) -> CorpusReadings | None:
        """Resume the state saved with ``corpus``; ``None`` when there is none to resume."""
        found = ReadingTable.load(directory)
        if found is None or set(found[0].ids) != {c.id for c in corpus}:
            return None  # none, written by an older hopgraph, or not this corpus's: start afresh
        return cls._resumed(corpus, *found, directory)

    @classmethod
    def _resumed(
        cls, corpus: Iterable[Chunk], table: ReadingTable | None, extra: dict, directory: Path
    ) -> CorpusReadings:
        """Return the state of ``corpus`` from its saved readings (if held) and ``extra``.

        A cluster's state lies in shards (extraction.state_shards): joined here, its titles'
        keys worked out again.
        """
        if SHARDS_KEY in extra:
            lower, claims = load_whole(directory, extra[SHARDS_KEY])
            state = cls(corpus, table, lower, {}, claims)
            state.alias_keys = {title: title_keys(title) for title in state.titles}
            return state
        lower, keys = Counter(extra["lower"]), extra.get("alias_keys")
        return cls(corpus, table, lower, keys, extra.get("claims") if keys is not None else None)

    @classmethod
    def load_counts(
        cls, directory: Path, corpus: Iterable[Chunk]
    ) -> tuple[CorpusReadings, list[str]] | None:
        """Resume the counts and keys of a state saved in parts, not its readings.

        Returns the state and its parts' names (a cluster's tasks update each part:
        cluster/reading_update.py); ``None`` when the state is not saved in parts.
        """
        found = saved_parts(directory)
        if found is None:
            return None
        names, extra = found
        state = cls._resumed(corpus, None, extra, directory)
        state.rows_elsewhere = True
        return state, names

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
        filled = self._keep_alias_keys(flipped)
        self._reclaim(keys | {k for t in filled for k in self.alias_keys[t][1:]})
        if not self.table.ids and not self.rows_elsewhere:
            return set()  # a first reading: no earlier reading to make stale
        return {k for k in keys if TitleIndex.indexes(k, self.lower)}

    def _keys_of(self, title: str) -> Sequence[str]:
        """Return a title's :func:`title_keys`, kept or worked out (and kept)."""
        if title not in self.alias_keys:
            self.alias_keys[title] = title_keys(title)
        return self.alias_keys[title]

    def _keep_alias_keys(self, flipped: set[str]) -> set[str]:
        """Keep the alias keys of the corpus's titles: drop those gone, fill in those missing.

        Returns the titles filled in.
        """
        for title in flipped - self.titles.keys():
            self.alias_keys.pop(title, None)
        missing = set()
        if len(self.alias_keys) < len(self.titles):  # a state kept without them: fill in once
            missing = self.titles.keys() - self.alias_keys.keys()
            for title in missing:
                self._keys_of(title)
        return missing

    def _reclaim(self, keys: set[str]) -> None:
        """Give each of ``keys`` to the entity of the first title, in string order, having it.

        One pass over the titles' kept keys: a write changes a few thousand keys, and working
        out the whole index of a million titles again took seconds.
        """
        first: dict[str, str] = {}
        for title, its_keys in self.alias_keys.items():
            for key in its_keys[1:]:
                if key in keys and (key not in first or title < first[key]):
                    first[key] = title
        for key in keys:
            if self.claims.pop(key, None) is not None:
                self.key_words[key.count(" ") + 1] -= 1
            if key in first:
                self.claims[key] = self.alias_keys[first[key]][0]
                self.key_words[key.count(" ") + 1] += 1

    def _shift_lower(self, removed: Sequence[Chunk], added: Sequence[Chunk]) -> set[str]:
        """Count lower-case usage; return the words that became or stopped being common."""
        flipped = _shift(
            self.lower,
            (w for c in removed for w in lower_case_words(c)),
            (w for c in added for w in lower_case_words(c)),
        )
        return {w for w in flipped if w == w.lower()}


def may_contain(
    table: ReadingTable, keys: set[str], chunk_of: Mapping[str, Chunk], skip: Collection[str]
) -> list[Chunk]:
    """Return the chunks of ``table``'s rows (but ``skip``) that may contain one of ``keys``.

    ``chunk_of``: the chunks by id (those of a row it lacks are not in the corpus any more).
    A superset test in two steps. Arrays first, for every row at once: a name starts with a
    capital, so the key's first word is written with a capital in the chunk (any of its words
    when the first is a connector), and the chunk counts every content word of the key (the
    last one possibly only as a capital, "Guy's" read as "guy"). Then the text, for those
    only: the key's words stand together among the chunk's tokens, as the title index matches
    them.
    """
    out = []
    for row, wanted in _key_candidates(table, sorted(keys)).items():
        chunk_id = table.ids[row]
        if chunk_id in skip or chunk_id not in chunk_of:
            continue
        chunk = chunk_of[chunk_id]
        if _holds_any(chunk, wanted):
            out.append(chunk)
    return out


def candidate_ids(table: ReadingTable, keys: Collection[str]) -> set[str]:
    """Return the ids of ``table``'s rows that pass the arrays' half of :func:`may_contain`.

    The chunks whose texts :func:`may_contain` reads: a task reads those alone.
    """
    return {table.ids[row] for row in _key_candidates(table, sorted(keys))}


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

    # only the key words matter: a rows × key-words matrix, not rows × the whole vocabulary
    column = np.full(size, -1, dtype=np.int64)
    relevant = distinct(np.array(cap_cols + need_cols, dtype=np.int64))
    column[relevant] = np.arange(len(relevant))
    shape = (table.rows, len(relevant))
    capitals = _incidence(table.capitals, column, shape)
    written = capitals + _incidence(
        Ragged(table.word_tf.ptr, table.word_tf.values[:, 0]), column, shape
    )
    written.data[:] = 1.0  # a word both counted and capitalised is written once

    def keys_matrix(rows: list[int], cols: list[int]) -> sp.csr_matrix:
        ones = np.ones(len(rows), dtype=np.float32)
        return sp.csr_matrix((ones, (rows, column[cols])), shape=(len(keys), len(relevant)))

    hits = (capitals @ keys_matrix(cap_rows, cap_cols).T).tocoo()
    holds = (written @ keys_matrix(need_rows, need_cols).T).tocsr()
    counts = np.asarray(holds[hits.row, hits.col]).ravel()
    keep = counts >= np.asarray(need)[hits.col]
    found: dict[int, list[str]] = {}
    rows = hits.row[keep].tolist()
    for row, k in zip(rows, hits.col[keep].tolist(), strict=True):
        found.setdefault(row, []).append(keys[k])
    return found


def _incidence(part: Ragged, column: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """Return the rows × key-words 0/1 matrix of a ragged array's values (``column``: -1 none).

    Built as CSR directly: the ragged rows are already in order, so nothing is sorted.
    """
    # a 0/1 lookup of tens of millions of values: bytes, not the int64 columns (7x faster)
    at = np.flatnonzero((column >= 0)[part.values])
    indptr = np.searchsorted(at, part.ptr).astype(np.int64)
    data = np.ones(len(at), dtype=np.float32)
    return sp.csr_matrix((data, column[part.values[at]], indptr), shape=shape)


def _holds_any(chunk: Chunk, keys: Sequence[str]) -> bool:
    """Tell whether one of ``keys`` stands among the chunk's tokens (last word maybe as 's)."""
    tokens = f" {token_key(chunk.text)} "
    return any(f" {key} " in tokens or f" {key}'s " in tokens for key in keys)


PARALLEL_FROM = 4000
"""Chunks to read from which the reading is spread over worker processes (one per core)."""
BATCH = 1000
_WORK: tuple[Sequence[Chunk], TitleIndex | SavedTitles] | None = None
"""What :func:`read_table`'s forked workers read (set only while it runs)."""


def read_table(
    chunks: Sequence[Chunk],
    titles: TitleIndex | SavedTitles,
    vocab: Vocabulary,
    show_progress: bool = False,
    fork: bool = True,
) -> ReadingTable:
    """Read every chunk against ``titles`` into a table in ids of ``vocab``.

    ``titles``: the index, or a saved one each batch looks its keys up in.

    Reading is pure Python (a quarter of a millisecond per chunk), so from
    :data:`PARALLEL_FROM` chunks on it runs in forked worker processes, one per core: they
    inherit the chunks and the title index instead of receiving them, and send back batches
    already encoded (arrays and their own vocabulary), which only need their ids mapped.
    Not with ``fork`` off (a cluster's task: its worker is one of many on the node already).
    """
    global _WORK
    workers = min(os.cpu_count() or 1, len(chunks) // BATCH)
    bar = tqdm(total=len(chunks), desc="extracting", unit="chunk", disable=not show_progress)
    parallel = fork and len(chunks) >= PARALLEL_FROM and workers > 1
    _WORK = (chunks, titles)
    parts = [empty_table(vocab)]
    try:
        if parallel and "fork" in get_all_start_methods():
            with ProcessPoolExecutor(
                workers,
                mp_context=get_context("fork"),
                initializer=die_with_parent,  # none reads on for a writer killed mid-write
                initargs=(os.getpid(),),
            ) as pool:
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
    index = titles.batch() if isinstance(titles, SavedTitles) else titles
    readings = [read_chunk(c, index) for c in batch]
    return ReadingTable.encode(batch, readings, Vocabulary() if vocab is None else vocab)


def _shift(counter: Counter[str], gone: Iterable[str], new: Iterable[str]) -> set[str]:
    """Apply counts; return the items whose presence (count > 0) changed.

    The change is counted first (Counter counts in C), so the work per distinct item is done
    once: a fresh build passes every word of the corpus, tens of millions at a million chunks.
    """
    change = Counter(new)
    change.subtract(Counter(gone))
    return apply_counts(counter, change)


class OfflineExtractor:
    """Entities, keywords and triples by title linking and patterns (extraction.offline)."""

    name = "offline"

    def extract(self, chunks: Sequence[Chunk], show_progress: bool = False) -> list[Extraction]:
        """Extract every chunk (a fresh corpus: everything is new)."""
        return CorpusReadings().update(chunks, [], chunks, show_progress).to_extractions()
