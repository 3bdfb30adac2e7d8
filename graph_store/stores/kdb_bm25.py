r"""BM25 (Lucene variant, as bm25s scores it) over "title\\ntext", English stemming and stop words.

The index is kept in **segments**, as Lucene keeps it, so a write costs what it changes: each
write that adds chunks tokenizes only them into a new segment (a sparse chunk × term matrix of
term frequencies and the chunks' lengths), and a delete only drops the chunks from the live set.
Scores use the statistics of the live chunks of every segment together (N, each term's document
frequency, the mean length), kept up to date by each write, so a segmented index scores exactly
as one built from scratch (tests/unit/graph_store/stores/test_bm25.py checks it against bm25s). Once
enough of the writes' small segments pile up, or a segment has a quarter of its rows dead, the next
write merges them into one (stores/segments.py: a build's or a partition's segment stays as it is),
from their stored term counts: only the write's own chunks are tokenized. A chunk
deleted and added back under its id (a replaced document) counts by its newest row only.

A query reads a segment with numpy alone (:class:`Postings`) and tokenizes as bm25s does without
importing it: bm25s brings scipy, 0.2 s of every keyword query's start. Writes build and merge
segments with scipy.
"""

from __future__ import annotations

import json
import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import Stemmer

from hopgraph.core.arrays import unique_rows
from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import mapped_members, saved_text, verify_file
from hopgraph.core.id_lists import ChunkIds
from hopgraph.graph_store.documents.schema import Chunk

from .base import Scored
from .chunk_table import ChunkTable, ids_of
from .segments import live_rows, to_merge

if TYPE_CHECKING:
    import scipy.sparse as sp

_STEMMER = Stemmer.Stemmer("english")
K1, B = 1.5, 0.75  # bm25s's defaults
SEGMENTS_FILE = "segments.json"
STATS_FILE = "stats.json"


STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)
"""bm25s's English stop words (Lucene's), which every index was tokenized without."""
_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s's (scikit-learn's) token pattern


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-case, stop words out, Snowball-stemmed tokens: ``bm25s.tokenize``'s, to the token.

    Written out rather than imported (see the module docstring);
    tests/unit/graph_store/stores/test_bm25.py holds it to bm25s's own. Each distinct word is
    stemmed once, as bm25s does.
    """
    words = [[w for w in _TOKEN.findall(text.lower()) if w not in STOPWORDS] for text in texts]
    distinct = list(dict.fromkeys(w for text in words for w in text))
    stems = dict(zip(distinct, _STEMMER.stemWords(distinct), strict=True))
    return [[stems[w] for w in text] for text in words]


@dataclass(frozen=True)
class Postings:
    """A chunks × terms CSC matrix (columns are terms) as its arrays: what a query reads.

    Read from scipy's ``save_npz`` file by numpy; :meth:`matrix` makes it scipy's for writes.
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, matrix: sp.spmatrix) -> Postings:
        """Take a scipy sparse matrix's CSC arrays."""
        csc = matrix.tocsc()
        return cls(csc.data, csc.indices, csc.indptr, (int(csc.shape[0]), int(csc.shape[1])))

    @classmethod
    def load(cls, path: Path) -> Postings:
        """Read what ``scipy.sparse.save_npz`` wrote (another format than CSC: through scipy).

        Memory-mapped where it was saved uncompressed (as :meth:`Segment.save` saves it): a
        query reads its terms' postings where they lie, and a write's tables' writer, which
        opens every segment, holds none of them (they were 330 MB a million chunks of its heap,
        and of the shards').
        """
        try:
            mapped = mapped_members(verify_file(path))
        except (KeyError, zipfile.BadZipFile) as err:  # the caller names a damaged file
            raise ValueError(f"{path} is not a saved matrix: {err}") from err
        if mapped is None:  # saved compressed: read whole
            with np.load(path, allow_pickle=False) as saved:
                mapped = {name: saved[name] for name in saved.files}
        if saved_text(mapped["format"]) == "csc":
            shape = tuple(int(n) for n in mapped["shape"])
            return cls(mapped["data"], mapped["indices"], mapped["indptr"], (shape[0], shape[1]))
        import scipy.sparse as sp

        return cls.of(sp.load_npz(path))

    def matrix(self) -> sp.csc_matrix:
        """Return the matrix as scipy's (its arrays shared)."""
        import scipy.sparse as sp

        return sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)


@dataclass
class Segment:
    """Term frequencies of some chunks: ``tf`` is chunks × ``vocab`` (CSC: columns are terms).

    A loaded segment holds its ids compactly (:class:`ChunkIds`).
    """

    ids: Sequence[str]
    vocab: dict[str, int]
    tf: Postings
    lengths: np.ndarray

    @classmethod
    def build(cls, chunks: Sequence[Chunk]) -> Segment:
        """Tokenize ``chunks`` into a segment."""
        import scipy.sparse as sp

        tokens = tokenize([c.embed_text for c in chunks])
        vocab: dict[str, int] = {}
        rows, cols = [], []
        for row, words in enumerate(tokens):
            for word in words:
                rows.append(row)
                cols.append(vocab.setdefault(word, len(vocab)))
        tf = sp.csc_matrix(
            (np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(chunks), len(vocab))
        )
        tf.sum_duplicates()
        lengths = np.array([len(words) for words in tokens], dtype=np.float32)
        return cls([c.id for c in chunks], vocab, Postings.of(tf), lengths)

    @classmethod
    def merge(cls, parts: Sequence[tuple[Segment, np.ndarray]]) -> Segment:
        """Return one segment of the rows of several (each with a mask of the rows to keep)."""
        import scipy.sparse as sp

        vocab: dict[str, int] = {}
        ids: list[str] = []
        rows, cols, data, lengths = [], [], [], []
        for segment, keep in parts:
            column = np.array([vocab.setdefault(t, len(vocab)) for t in segment.vocab], np.int64)
            kept = np.flatnonzero(keep)
            tf = segment.tf.matrix().tocsr()[kept].tocoo()
            rows.append(tf.row + len(ids))
            cols.append(column[tf.col])
            data.append(tf.data)
            lengths.append(segment.lengths[kept])
            ids += [segment.ids[i] for i in kept.tolist()]
        tf = sp.csc_matrix(
            (np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))),
            shape=(len(ids), len(vocab)),
        )
        return cls(ids, vocab, Postings.of(tf), np.concatenate(lengths).astype(np.float32))

    def save(self, folder: Path) -> None:
        """Write the segment into ``folder``."""
        import scipy.sparse as sp

        folder.mkdir(parents=True, exist_ok=True)
        sp.save_npz(folder / "tf.npz", self.tf.matrix(), compressed=False)
        np.save(folder / "lengths.npy", self.lengths)
        text = json.dumps({"ids": list(self.ids), "vocab": list(self.vocab)}, ensure_ascii=False)
        (folder / "terms.json").write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> Segment:
        """Read a segment written by :meth:`save`."""
        terms = json.loads(verify_file(folder / "terms.json").read_text(encoding="utf-8"))
        vocab = {term: i for i, term in enumerate(terms["vocab"])}
        tf = Postings.load(folder / "tf.npz")
        ids = ChunkIds(terms.pop("ids"))  # a segment's list at a time, not the corpus's
        return cls(ids, vocab, tf, np.load(verify_file(folder / "lengths.npy")))

    @cached_property
    def impact_ceilings(self) -> tuple[np.ndarray, float]:
        """Return each term's largest impact in this segment, and the mean length it used.

        The impact is ``tf / (tf + K1·(1 − B + B·length / mean))`` with the segment's own mean
        length; scaled by ``max(1, mean now / that mean)`` and the idf, it bounds the term's
        score in any chunk of the segment (bm25_query's MaxScore). One pass over the postings,
        made the first time a query needs it (0.7 s at a million chunks, 42M postings).
        """
        mean = float(self.lengths.mean()) if len(self.lengths) else 1.0
        tf, ptr = self.tf.data, self.tf.indptr
        impacts = tf / (tf + K1 * (1 - B + B * self.lengths[self.tf.indices] / mean))
        out = np.zeros(len(ptr) - 1, dtype=np.float64)
        held = np.flatnonzero(ptr[:-1] < ptr[1:])
        if len(held):
            out[held] = np.maximum.reduceat(impacts, ptr[held])
        return out, mean

    def document_frequencies(self, rows: np.ndarray) -> dict[str, int]:
        """Return, for each term, how many of ``rows`` (a boolean mask) contain it."""
        if not rows.any():
            return {}
        counts = np.asarray((self.tf.matrix()[np.flatnonzero(rows)] > 0).sum(axis=0)).ravel()
        terms = list(self.vocab)
        return {terms[col]: int(counts[col]) for col in np.flatnonzero(counts)}


def impact(idf: float, tf: np.ndarray, lengths: np.ndarray, mean_length: float) -> np.ndarray:
    """Return one term's BM25 score in chunks with these term counts and lengths (float32)."""
    return idf * tf / (tf + K1 * (1 - B + B * lengths / mean_length))


def _live_rows(segments: Sequence[Segment], ids: ChunkIds) -> list[np.ndarray]:
    """Each segment row's place in chunk order (``ids``), -1 for a dead row.

    A row is dead when its chunk was deleted since, or stored again in a later segment (a
    replaced chunk, deleted and added back under its id): only its newest row counts.
    """
    return live_rows(ids, [segment.ids for segment in segments])[0]


class BM25Store:
    """Segments, the live chunks in chunk order (``ids``), and the corpus statistics."""

    def __init__(
        self,
        segments: list[Segment],
        paths: list[str],
        ids: Sequence[str],
        stats: dict,
        rows: list[np.ndarray] | None = None,
    ) -> None:
        """Hold the store; ``rows``: :func:`_live_rows` of the segments, when worked out.

        ``ids`` are held compactly (:class:`ChunkIds`), as a served table holds them.
        """
        self.segments = segments
        self.paths = paths
        self.ids = ids if isinstance(ids, ChunkIds) else ChunkIds(ids)
        self.stats = stats
        self.rows = _live_rows(segments, self.ids) if rows is None else rows

    @classmethod
    def build(cls, chunks: Sequence[Chunk], root: Path | None = None, name: str = "") -> BM25Store:
        """Index ``chunks`` as one segment, saved at ``root / name`` when ``root`` is given."""
        segment = Segment.build(chunks)
        if root is not None:
            segment.save(root / name)
        store = cls([segment], [name], [c.id for c in chunks], {})
        every = np.ones(len(chunks), dtype=bool)
        store.stats = {
            "n": len(chunks),
            "total_length": float(segment.lengths.sum()),
            "df": segment.document_frequencies(every),
        }
        return store

    def updated(
        self, chunks: Sequence[Chunk], added: Sequence[Chunk], root: Path, name: str
    ) -> BM25Store:
        """Return the store after a write that leaves ``chunks``, ``added`` among them.

        The added chunks become a new segment at ``root / name``; the statistics move by what
        came and went. When :func:`segments.to_merge` says so (the writes' small segments once
        there are enough of them, a segment with too many dead rows), those segments' live rows
        and the new ones are merged into one segment there instead, from their stored term
        counts: only the write's own chunks are tokenized.
        """
        ids = ChunkIds(ids_of(chunks))  # a write's scan of the table: no list of every id
        new = [Segment.build(added)] if added else []
        segments = [*self.segments, *new]
        rows = _live_rows(segments, ids)
        stats = self._moved(rows[: len(self.segments)], new, len(ids))
        merge = set(to_merge([len(s.ids) for s in segments], [int((r < 0).sum()) for r in rows]))
        if not merge:
            for segment in new:
                segment.save(root / name)
            paths = [*self.paths, *([name] if new else [])]
            return BM25Store(segments, paths, ids, stats, rows)
        if new:
            merge.add(len(segments) - 1)  # the write's rows join the merge: one folder
        parts = [(seg, rows[s] >= 0) for s, seg in enumerate(segments) if s in merge]
        kept = [s for s in range(len(self.segments)) if s not in merge]
        held, paths = [self.segments[s] for s in kept], [self.paths[s] for s in kept]
        if any(live.any() for _, live in parts):  # else they all go, and nothing replaces them
            merged = Segment.merge(parts)
            merged.save(root / name)
            held, paths = [*held, merged], [*paths, name]
        return BM25Store(held, paths, ids, stats)

    def _moved(self, after: list[np.ndarray], new: list[Segment], n: int) -> dict:
        """Return the statistics after a write leaving ``n`` chunks.

        ``after``: this store's rows then (-1: dead); ``new``: the added segment, if any.
        """
        df = dict(self.stats["df"])
        total = self.stats["total_length"]
        for segment, was, now in zip(self.segments, self.rows, after, strict=True):
            died = (was >= 0) & (now < 0)
            if died.any():
                total -= float(segment.lengths[died].sum())
                for term, count in segment.document_frequencies(died).items():
                    df[term] -= count
                    if not df[term]:
                        del df[term]
        for segment in new:
            total += float(segment.lengths.sum())
            every = np.ones(len(segment.ids), bool)
            for term, count in segment.document_frequencies(every).items():
                df[term] = df.get(term, 0) + count
        return {"n": n, "total_length": total, "df": df}

    def save(self, folder: Path) -> None:
        """Write which segments make the store (paths relative to the index) and its statistics."""
        save_store(folder, self.paths, self.stats)

    @classmethod
    def load(
        cls, folder: Path, root: Path, chunks: Sequence[Chunk] | Mapping[str, Chunk]
    ) -> BM25Store:
        """Read the store of ``folder`` for ``chunks``; segment paths are relative to ``root``.

        ``chunks``: a list, or a mapping by id (an index's table, whose texts are not read). An
        index of format 1 holds a bm25s index instead: its chunks are tokenized again, in memory
        (seconds for thousands of chunks), until its next write saves segments.
        """
        ids: Sequence[str]
        if isinstance(chunks, ChunkTable):  # an index's table: its compact ids, not a list
            ids = chunks.ids
        elif isinstance(chunks, Mapping):
            ids = list(chunks)
        else:
            ids = [c.id for c in chunks]
        if (folder / "params.index.json").is_file() and not (folder / SEGMENTS_FILE).exists():
            return cls.build(list(chunks.values()) if isinstance(chunks, Mapping) else chunks)
        try:
            paths = json.loads(verify_file(folder / SEGMENTS_FILE).read_text(encoding="utf-8"))
            stats = json.loads(verify_file(folder / STATS_FILE).read_text(encoding="utf-8"))
            segments = [Segment.load(root / p) for p in paths]
        except (OSError, ValueError) as err:
            raise IndexStateError(
                f"the BM25 index in {folder} is missing or damaged: {err}",
                "rebuild the index with `hopgraph index SOURCE --index DIR --force`",
            ) from err
        return cls(segments, paths, ids, stats)

    @property
    def mean_length(self) -> float:
        """The live chunks' mean length in tokens."""
        return self.stats["total_length"] / max(self.stats["n"], 1)

    def query_terms(self, text: str) -> list[tuple[str, float]]:
        """Return the query's indexed terms and their idf, in query order.

        A repeated query term is listed again: it counts again, as in bm25s.
        """
        n, df = self.stats["n"], self.stats["df"]
        return [
            (term, math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5)))
            for term in tokenize([text])[0]
            if term in df
        ]

    @cached_property
    def places(self) -> tuple[np.ndarray, np.ndarray]:
        """Each chunk's segment and row in it: the inverse of ``rows``, for score look-ups."""
        segment = np.full(len(self.ids), -1, dtype=np.int32)
        local = np.full(len(self.ids), -1, dtype=np.int64)
        for at, rows in enumerate(self.rows):
            live = np.flatnonzero(rows >= 0)
            segment[rows[live]] = at
            local[rows[live]] = live
        return segment, local

    def scores(self, text: str) -> np.ndarray:
        """Return the BM25 score of every chunk for ``text``, in the order of ``self.ids``."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        rows, values = self.sparse_scores(text)
        out[rows] = values
        return out

    def sparse_scores(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Return the rows with a positive BM25 score for ``text`` (ascending) and their scores.

        Reads only the query terms' postings: what a query costs does not grow with the chunks
        that share none of its words.
        """
        mean_length = self.mean_length
        found: list[np.ndarray] = []
        parts: list[np.ndarray] = []
        # A repeated term's postings are read once (a 1 MB query repeats its words thousands
        # of times; reading each again cost its hybrid retrieve 1.1 of its 2.0 s); it still
        # counts at each place it comes, so the sums are the same.
        read: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
        for term, idf in self.query_terms(text):
            if term not in read:
                read[term] = self._postings(term, idf, mean_length)
            found += read[term][0]
            parts += read[term][1]
        if not found:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        at, weights = np.concatenate(found), np.concatenate(parts).astype(np.float64)
        # Summed in the order the terms came, in float64, as one dense array += per term did.
        # Past a third of the chunks in postings, a tally over every row beats sorting them
        # (a million chunks: 6.5 against 20 ms for a million postings; 1.3 ms sorted at 100k).
        if 3 * len(at) > len(self.ids):
            tally = np.bincount(at, weights=weights, minlength=len(self.ids))
            rows = np.flatnonzero(tally)  # every contribution is positive
            return rows.astype(np.int64), tally[rows].astype(np.float32)
        rows = unique_rows(at)
        inverse = np.searchsorted(rows, at)
        return rows.astype(np.int64), np.bincount(inverse, weights=weights).astype(np.float32)

    def _postings(
        self, term: str, idf: float, mean_length: float
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Return the live rows holding ``term`` in each segment, and their BM25 scores for it."""
        found, parts = [], []
        for segment, rows in zip(self.segments, self.rows, strict=True):
            col = segment.vocab.get(term)
            if col is None:
                continue
            start, end = segment.tf.indptr[col], segment.tf.indptr[col + 1]
            at, tf = segment.tf.indices[start:end], segment.tf.data[start:end]
            live = rows[at] >= 0
            at, tf = at[live], tf[live]
            found.append(rows[at])
            parts.append(impact(idf, tf, segment.lengths[at], mean_length))
        return found, parts

    def query(self, text: str, k: int) -> Scored:
        """Return up to ``k`` (id, score) pairs with a positive score, best first."""
        scores = self.scores(text)
        k = min(k, len(self.ids))
        if k <= 0 or not scores.any():
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.ids[i], float(scores[i])) for i in top if scores[i] > 0]


def save_store(folder: Path, paths: Sequence[str], stats: dict) -> None:
    """Write a store's files: its segments (paths relative to the index) and its statistics.

    ``stats``: ``n`` (live chunks), ``total_length`` (their tokens) and ``df`` (each term's
    document frequency), over every segment together. A partitioned build sums its partitions'.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SEGMENTS_FILE).write_text(json.dumps(list(paths)), encoding="utf-8")
    (folder / STATS_FILE).write_text(json.dumps(stats), encoding="utf-8")
