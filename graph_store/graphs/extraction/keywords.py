"""Each chunk's keywords (IIER §2.2): its most distinctive entities, then words, by tf·idf.

idf = log((n + 1) / (df + 0.5)) over the corpus's ``n`` chunks, so any write can change any
chunk's keywords: n moves every score a little, and each word of the change moves its df. A
write does not pick a million chunks' keywords again. It checks each kept chunk's previous picks
against the new scores: still in strictly falling order, and nothing left out now beats the
last pick (nor, for entities, fills a place left empty). Only the chunks that fail, and the
chunks read anew, are picked again. The check is exact, with no margin: the result equals
picking every chunk afresh (tests/unit/graph_store/graphs/test_incremental_graphs.py,
tests/unit/graph_store/graphs/test_keywords.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reading_table import UNPICKED, ReadingTable
from .table import VALUES, Ragged

KEYWORDS_PER_CHUNK = 5
BLOCK = 1 << 22
"""Candidates checked against their chunk's names at once (bounds the check's memory)."""
ROWS_AT_ONCE = 1 << 16
"""Rows whose keywords are picked at once (bounds the scored pairs held: ~200 MB)."""


@dataclass(frozen=True)
class Candidates:
    """Every (row, id) pair of one kind (entities or words) with its score and name rank.

    ``at``: each pair's place among all the pairs of its kind (kept by :meth:`where`).
    """

    rows: np.ndarray
    ids: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    at: np.ndarray

    @classmethod
    def scored(cls, part: Ragged, n: int, df: np.ndarray, rank: np.ndarray) -> Candidates:
        """Score the (id, count) pairs of ``part`` by tf·idf over ``n`` chunks (``df``: per id)."""
        rows, ids, tf = part.row_of_values(), part.values[:, 0], part.values[:, 1]
        idf = np.log((n + 1) / (df + 0.5))  # per id, not per pair: the same values, fewer logs
        score = tf * idf[ids]
        return cls(rows, ids, score, rank[ids], np.arange(len(ids)))

    def where(self, mask: np.ndarray) -> Candidates:
        """Return the pairs of ``mask``."""
        fields = (self.rows, self.ids, self.score, self.rank, self.at)
        return Candidates(*(field[mask] for field in fields))


def document_frequencies(table: ReadingTable) -> tuple[np.ndarray, np.ndarray]:
    """Return each vocabulary id's number of rows as an entity, and as a word, of ``table``."""
    size = len(table.vocab)  # one (id, count) pair per row and id: counting ids counts rows
    return (
        np.bincount(table.entity_tf.values[:, 0], minlength=size),
        np.bincount(table.word_tf.values[:, 0], minlength=size),
    )


def pick_keywords(
    table: ReadingTable, n: int, df: tuple[np.ndarray, np.ndarray] | None = None
) -> ReadingTable:
    """Return ``table`` with every row's keywords current for a corpus of ``n`` chunks.

    Rows picked before are checked and kept when they still hold; the others are picked.
    Up to :data:`KEYWORDS_PER_CHUNK` entities (never the chunk's own page), by score, ties to
    the name first in string order; words fill the rest, but none that is a word of a chosen
    entity or of the page's title. ``df``: the corpus's document frequencies per id of
    ``table.vocab`` (:func:`document_frequencies`), when ``table`` holds only some of its rows.

    A row's picks depend on the corpus only through ``df`` and ``n``, so rows are picked
    :data:`ROWS_AT_ONCE` at a time: every (row, word) pair scored at once took 3.3 GB at a
    million chunks.
    """
    df = document_frequencies(table) if df is None else df
    rank = table.vocab.order()
    if table.rows <= ROWS_AT_ONCE:
        return _pick_rows(table, n, df, rank)
    done = [
        _pick_rows(table.take(np.arange(at, min(at + ROWS_AT_ONCE, table.rows))), n, df, rank)
        for at in range(0, table.rows, ROWS_AT_ONCE)
    ]
    return table.picked(
        Ragged.concat([part.keyword_at for part in done]),
        np.concatenate([part.keyword_entities for part in done]),
    )


def _pick_rows(
    table: ReadingTable, n: int, df: tuple[np.ndarray, np.ndarray], rank: np.ndarray
) -> ReadingTable:
    """Return ``table`` with its rows' keywords current (see :func:`pick_keywords`)."""
    entities = Candidates.scored(table.entity_tf, n, df[0], rank)
    words = Candidates.scored(table.word_tf, n, df[1], rank)
    todo = ~_still_picked(table, entities, words)
    if not todo.any():
        return table
    places, counts = _pick(table, entities, words, todo)
    if todo.all():
        return table.picked(places, counts)
    index = np.arange(table.rows)
    index[todo] = table.rows + np.arange(int(todo.sum()))
    merged = Ragged.concat([table.keyword_at, places.take(np.flatnonzero(todo))]).take(index)
    return table.picked(merged, np.where(todo, counts, table.keyword_entities))


def _pick(
    table: ReadingTable, entities: Candidates, words: Candidates, todo: np.ndarray
) -> tuple[Ragged, np.ndarray]:
    """Pick the keywords of the ``todo`` rows.

    Returns them as places in their rows' pairs (other rows empty), and each row's entity count.
    """
    rows_n = table.rows
    limit = np.where(todo, KEYWORDS_PER_CHUNK, 0)
    mine = todo[entities.rows] & (entities.ids != table.page[entities.rows])
    chosen = _top_per_row(entities.where(mine), limit)
    counts = np.bincount(chosen.rows, minlength=rows_n)
    need = limit - counts
    wanted = need[words.rows] > 0
    at = np.flatnonzero(wanted)
    names = _names(table, chosen.rows, chosen.ids, need)
    wanted[at] = ~_is_word_of(words.rows[at], words.ids[at], names, table.vocab.words())
    filled = _top_per_row(words.where(wanted), need)
    places = [
        chosen.at - table.entity_tf.ptr[chosen.rows],
        filled.at - table.word_tf.ptr[filled.rows],
    ]
    # entities first, then words, each in rank order (the selections come out ordered by row)
    all_rows = np.concatenate([chosen.rows, filled.rows])
    order = np.argsort(all_rows, kind="stable")
    ptr = np.zeros(rows_n + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_rows, minlength=rows_n), out=ptr[1:])
    return Ragged(ptr, np.concatenate(places)[order].astype(VALUES)), counts


def _top_per_row(found: Candidates, limit: np.ndarray) -> Candidates:
    """Return the best ``limit[row]`` pairs of each row, by score then name, in that order.

    Rows come sorted (a ragged table's order). Each pass takes every row's best remaining
    pair: a handful of linear passes instead of sorting every candidate of the corpus.
    """
    rows = found.rows
    if not len(rows):
        return found
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    lengths = np.diff(np.r_[starts, len(rows)])
    wanted = limit[rows[starts]]
    score, tie = found.score.copy(), found.rank
    picked: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
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
    taken = np.concatenate(picked)
    return found.where(taken[np.argsort(rows[taken], kind="stable")])  # by row, in pick order


def _names(
    table: ReadingTable, e_rows: np.ndarray, e_ids: np.ndarray, need: np.ndarray
) -> np.ndarray:
    """Return a rows × (entities + 1) array of each row's chosen entities and page (-1: none).

    Only rows that still ``need`` words get names: their words may not be picked as words.
    """
    names = np.full((table.rows, KEYWORDS_PER_CHUNK + 1), -1, dtype=np.int64)
    mine = need[e_rows] > 0
    rows = e_rows[mine]
    names[rows, _place_in_row(rows)] = e_ids[mine]
    names[:, -1] = np.where(need > 0, table.page, -1)
    return names


def _place_in_row(rows: np.ndarray) -> np.ndarray:
    """Return each item's place among the items of its row (``rows`` sorted)."""
    if not len(rows):
        return rows
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    return np.arange(len(rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))


def _is_word_of(rows: np.ndarray, ids: np.ndarray, names: np.ndarray, split: Ragged) -> np.ndarray:
    """Tell, for each (row, word), whether the word is a word of one of the row's ``names``.

    ``split`` holds each vocabulary id's words. Checked in blocks, a few million at once.
    """
    out = np.zeros(len(rows), dtype=bool)
    width = names.shape[1]
    for start in range(0, len(rows), BLOCK // width):
        part = slice(start, start + BLOCK // width)
        mine = names[rows[part]].ravel()
        owner = np.repeat(np.arange(len(mine) // width), width)[mine >= 0]
        found = split.take(mine[mine >= 0])
        owner = np.repeat(owner, found.lengths())
        hit = found.values == ids[part][owner]
        out[part] = np.bincount(owner[hit], minlength=len(mine) // width) > 0
    return out


def _still_picked(table: ReadingTable, entities: Candidates, words: Candidates) -> np.ndarray:
    """Tell, per row, whether its previous keywords are still the ones it would pick now."""
    e_picks, w_picks = _split_picks(table)
    e_count = np.maximum(table.keyword_entities, 0)
    limit = np.where(table.keyword_entities != UNPICKED, KEYWORDS_PER_CHUNK, 0)
    own = entities.ids == table.page[entities.rows]
    holds, beaten = _holds(entities, e_picks, e_count, limit)
    holds[entities.rows[beaten & ~own]] = False
    need = limit - e_count
    w_holds, beaten = _holds(words, w_picks, table.keyword_at.lengths() - e_count, need)
    holds &= w_holds
    # a word that beats the last pick was rightly left out only if it is a word of a chosen
    # name (the chosen entities are the same: the row's entity check passed)
    beaten &= holds[words.rows]
    rows, ids = words.rows[beaten], words.ids[beaten]
    e_ids = np.where(e_picks >= 0, entities.ids[np.maximum(e_picks, 0)], -1)
    names = np.column_stack([e_ids, table.page])
    holds[rows[~_is_word_of(rows, ids, names, table.vocab.words())]] = False
    return holds & (limit > 0)


def _split_picks(table: ReadingTable) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's picked entities and words as rows × :data:`KEYWORDS_PER_CHUNK` arrays.

    Each pick is its pair's place among all the pairs of its kind; -1 where none.
    """
    row, place, is_entity, pair = table.keyword_pairs()
    e, w = np.flatnonzero(is_entity), np.flatnonzero(~is_entity)
    e_picks = _padded(row[e], place[e], pair[e], table.rows)
    w_place = place[w] - np.maximum(table.keyword_entities, 0)[row[w]]
    w_picks = _padded(row[w], w_place, pair[w], table.rows)
    return e_picks, w_picks


def _padded(rows: np.ndarray, places: np.ndarray, values: np.ndarray, rows_n: int) -> np.ndarray:
    """Return a rows × :data:`KEYWORDS_PER_CHUNK` array of ``values`` (-1: none)."""
    out = np.full((rows_n, KEYWORDS_PER_CHUNK), -1, dtype=np.int64)
    out[rows, places] = values
    return out


def _holds(
    found: Candidates, picks: np.ndarray, count: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Check each row's ``count`` ordered ``picks`` (places in ``found``) against new scores.

    Returns the rows whose picks are in strictly falling order (score, then name rank), and a
    mask of the candidates left out that now beat the row's last pick (any left out, when the
    row picked fewer than its ``limit``).
    """
    rows_n = picks.shape[0]
    given = picks >= 0
    score = np.where(given, found.score[np.maximum(picks, 0)], -np.inf)
    rank = np.where(given, found.rank[np.maximum(picks, 0)], 0)
    holds = np.ones(rows_n, dtype=bool)
    for j in range(picks.shape[1] - 1):
        beats = _beats(score[:, j], rank[:, j], score[:, j + 1], rank[:, j + 1])
        holds &= (count <= j + 1) | beats
    last = np.maximum(count - 1, 0)
    bar = np.where(count >= limit, score[np.arange(rows_n), last], -np.inf)
    bar_rank = rank[np.arange(rows_n), last]
    is_pick = np.zeros(len(found.rows), dtype=bool)
    is_pick[picks[given]] = True
    at = found.rows
    beaten = ~is_pick & (limit[at] > 0)
    beaten &= _beats(found.score, found.rank, bar[at], bar_rank[at])
    return holds, beaten


def _beats(
    score: np.ndarray, rank: np.ndarray, other: np.ndarray, other_rank: np.ndarray
) -> np.ndarray:
    """Tell where (score, name) comes before (other, its name): higher, or tied and first."""
    return (score > other) | ((score == other) & (rank < other_rank))
