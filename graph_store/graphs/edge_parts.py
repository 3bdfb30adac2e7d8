"""The passage graph's edges built in parts, each call holding a share of the rows, not the corpus.

:func:`~.passage_edges.build_passage_graph` holds every chunk's extractions and every edge at
once: the largest part of a graph build's driver at a million chunks. Here the same edges are
made in three steps of calls (a cluster's tasks: cluster/graph_parts.py), which pass files in a
scratch folder:

1. :func:`emit`, per part of rows (its extractions, in a vocabulary of its own): each item a
   row holds, as the 64-bit hash of its string (entities, keywords; a mention of a title; the
   row's own page; its document), into one of ``buckets`` files by that hash. Its semantic
   neighbours go straight to the parts of rows they join, both ways.
2. :func:`group`, per bucket: every item's rows are in one bucket, so its pairs are made there,
   as one process makes them (items in more than ``max_df`` rows make none; a page linked
   from more than ``max_df`` rows gets no links in), each into the part of its first row.
3. :func:`sum_rows`, per part of rows: its pairs summed into each type's CSR rows (weights as one
   process's), and each row's distinct neighbours counted (the graph's mean degree).

:func:`stitch` then writes each type's file by concatenating the parts' rows: what
``PassageGraph.save`` writes, read without holding more than one part.

Strings are compared by hash, not by a vocabulary of the whole corpus: two strings of one hash
would be one item (less than one chance in a million at five million strings, as the
document frequencies' hashes, cluster/readings.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .csr_parts import csr_rows, stitch_csr
from .extraction.offline import token_key
from .extraction.table import ExtractionTable, Ragged
from .extraction.title_table import string_hashes
from .passage_graph import DIRECTED, EDGE_TYPES, PassageGraphSettings
from .semantic import Neighbours

NO_ITEM = np.uint64(0)
"""The page hash of a row without a title (a string hashing to 0 is not told apart from it)."""
LINK_IN = "link_in"
"""A link edge seen from its target: counted in the target's degree, not saved."""
ROW_PARTS = (*EDGE_TYPES, LINK_IN)


@dataclass(frozen=True)
class RowsIn:
    """What :func:`emit` reads of one part of rows: rows ``start`` to ``start + len(table)``."""

    start: int
    table: ExtractionTable
    documents: Sequence[str]
    positions: np.ndarray
    titles: Sequence[str]
    neighbours: Neighbours


def emit(
    part: RowsIn,
    name: str,
    bounds: np.ndarray,
    buckets: int,
    out: Path,
    settings: PassageGraphSettings,
) -> None:
    """Write one part's items into ``buckets`` files and its semantic pairs into the row parts.

    ``bounds``: the first row of every part of rows, then the row count.
    """
    table, start = part.table, part.start
    strings = string_hashes(part.table.vocab.strings)
    rows = start + np.arange(len(table), dtype=np.int64)
    page = _pages(part, strings)
    documents = string_hashes(part.documents)
    mention_rows = table.entities.row_of_values()
    mentions = strings[table.entities.values].astype(np.uint64)
    other = mentions != page[mention_rows]  # a chunk naming its own page links nowhere by it
    titled = np.flatnonzero(page != NO_ITEM)
    items = {
        "entity": (*_unique_items(table.entities, strings, start),),
        "keyword": (*_unique_items(table.keywords, strings, start),),
        "mention": (mentions[other], rows[mention_rows[other]], documents[mention_rows[other]]),
        "page": (page[titled], rows[titled], documents[titled]),
        "document": (documents, rows, part.positions.astype(np.int64)),
    }
    split = {kind: _split(arrays, (arrays[0] % np.uint64(buckets)).astype(np.int64), buckets)
             for kind, arrays in items.items()}  # fmt: skip
    for b in range(buckets):
        saved = {}
        for kind, pieces in split.items():
            item, *values = pieces[b]
            saved[f"{kind}_item"] = item
            saved |= {f"{kind}_{j}": value for j, value in enumerate(values)}
        np.savez(out / f"emit-{name}-{b}.npz", **saved)
    _route({"semantic": _semantic_pairs(part, settings)}, bounds, out, f"semantic-{name}")


def _pages(part: RowsIn, strings: np.ndarray) -> np.ndarray:
    """Return each row's own page (its title's key) hash, :data:`NO_ITEM` for none."""
    pages = part.table.pages
    if pages is not None:
        found = np.full(len(pages), NO_ITEM, dtype=np.uint64)
        held = pages >= 0
        found[held] = strings[pages[held]]
        return found
    keys = [token_key(t) if t else "" for t in part.titles]
    found = string_hashes(keys)
    found[[not k for k in keys]] = NO_ITEM
    return found


def _unique_items(lists: Ragged, strings: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (item hash, row) once per row holding the item."""
    item = strings[lists.values.ravel()].astype(np.uint64) if len(lists.values) else _no_hashes()
    row = start + lists.row_of_values().astype(np.int64)
    order = np.lexsort((row, item))
    item, row = item[order], row[order]
    keep = np.r_[True, (item[1:] != item[:-1]) | (row[1:] != row[:-1])] if len(item) else []
    return item[keep], row[keep]


def _no_hashes() -> np.ndarray:
    return np.zeros(0, dtype=np.uint64)


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Edges as (source row, target row, weight)."""


def _semantic_pairs(part: RowsIn, settings: PassageGraphSettings) -> Pairs:
    """Return the part's semantic edges both ways (one process takes the larger of the two)."""
    k = settings.semantic_k
    top, scores = part.neighbours.rows[:, :k], part.neighbours.scores[:, :k]
    keep = (top >= 0) & (scores >= settings.semantic_min_sim)
    source = part.start + np.nonzero(keep)[0].astype(np.int64)
    target, weight = top[keep].astype(np.int64), scores[keep].astype(np.float32)
    return np.r_[source, target], np.r_[target, source], np.r_[weight, weight]


def _route(kinds: dict[str, Pairs], bounds: np.ndarray, out: Path, source: str) -> None:
    """Write each kind's pairs into the file of the part of rows holding their source row."""
    parts = len(bounds) - 1
    split = {kind: _split(pair, np.searchsorted(bounds, pair[0], side="right") - 1, parts)
             for kind, pair in kinds.items()}  # fmt: skip
    for p in range(parts):
        arrays = {}
        for kind, pieces in split.items():
            a, b, w = pieces[p]
            arrays |= {f"{kind}_src": a, f"{kind}_dst": b, f"{kind}_weight": w}
        np.savez(out / f"to-{p}-from-{source}.npz", **arrays)


def _split(arrays: Sequence[np.ndarray], at: np.ndarray, count: int) -> list[list[np.ndarray]]:
    """Return, for each of ``count`` places, the values of ``arrays`` whose ``at`` is it.

    One stable sort and a cut, not a scan of every value for each place: a step's time stays
    linear in its values whatever the number of parts. Order within a place is kept.
    """
    order = np.argsort(at, kind="stable")
    cuts = np.searchsorted(at[order], np.arange(1, count))
    return [list(group) for group in zip(*(np.split(a[order], cuts) for a in arrays), strict=True)]


def group(
    bucket: int, names: Sequence[str], bounds: np.ndarray, out: Path, settings: PassageGraphSettings
) -> None:
    """Make the pairs of every item of one bucket and write them into the parts of rows."""
    files = [np.load(out / f"emit-{name}-{bucket}.npz") for name in names]
    got = {key: np.concatenate([f[key] for f in files]) for key in files[0].files} if files else {}
    for f in files:
        f.close()
    ones = {
        "entity": _shared(got["entity_item"], got["entity_0"], settings.max_df),
        "keyword": _shared(got["keyword_item"], got["keyword_0"], settings.max_df),
        "structural": _following(got["document_item"], got["document_0"], got["document_1"]),
    }
    link = _links(got, settings.max_df)
    kinds = {kind: (a, b, np.ones(len(a), np.float32)) for kind, (a, b) in ones.items()}
    kinds["link"] = (*link, np.ones(len(link[0]), np.float32))
    kinds[LINK_IN] = (link[1], link[0], np.ones(len(link[0]), np.float32))
    _route(kinds, bounds, out, f"bucket-{bucket}")  # its inputs stay: see sum_rows


def _groups(item: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return, for items sorted, where each run of one item starts and its length."""
    if not len(item):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]])
    return starts, np.diff(np.r_[starts, len(item)])


def _shared(item: np.ndarray, row: np.ndarray, max_df: int) -> tuple[np.ndarray, np.ndarray]:
    """Return every ordered pair of distinct rows sharing an item held by ≤ ``max_df`` rows."""
    order = np.lexsort((row, item))
    item, row = item[order], row[order]
    starts, sizes = _groups(item)
    kept = (sizes <= max_df) & (sizes > 1)
    starts, sizes = starts[kept], sizes[kept]
    # each element of a kept group, paired with every element of its group
    members = np.repeat(starts, sizes) + _within(sizes)
    per = np.repeat(sizes, sizes)
    first = np.repeat(members, per)
    second = np.repeat(np.repeat(starts, sizes), per) + _within(per)
    other = first != second
    return row[first[other]], row[second[other]]


def _within(sizes: np.ndarray) -> np.ndarray:
    """Return 0..size-1 for each size, concatenated."""
    total = int(sizes.sum())
    return np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)


def _following(
    document: np.ndarray, row: np.ndarray, position: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return both ways the pairs of a document's chunks at positions i and i + 1."""
    order = np.lexsort((position, document))
    document, row, position = document[order], row[order], position[order]
    follows = (document[1:] == document[:-1]) & (position[1:] == position[:-1] + 1)
    a, b = row[:-1][follows], row[1:][follows]
    return np.r_[a, b], np.r_[b, a]


def _links(got: dict[str, np.ndarray], max_df: int) -> tuple[np.ndarray, np.ndarray]:
    """Return each link (source, target) once, a target linked from > ``max_df`` rows left out.

    A row mentioning a title links to every row of that page in another document.
    """
    pages = np.argsort(got["page_item"], kind="stable")
    keys, targets, target_docs = (got[k][pages] for k in ("page_item", "page_0", "page_1"))
    mentioned, sources, source_docs = got["mention_item"], got["mention_0"], got["mention_1"]
    first = np.searchsorted(keys, mentioned, side="left")
    count = np.searchsorted(keys, mentioned, side="right") - first
    at = np.repeat(first, count) + _within(count)
    source, source_doc = np.repeat(sources, count), np.repeat(source_docs, count)
    across = source_doc != target_docs[at]
    target, source = targets[at][across], source[across]
    order = np.lexsort((source, target))
    target, source = target[order], source[order]
    once = np.r_[True, (target[1:] != target[:-1]) | (source[1:] != source[:-1])]
    target, source = target[once[: len(target)]], source[once[: len(target)]]
    _, sizes = _groups(target)
    kept = np.repeat(sizes <= max_df, sizes)
    return source[kept], target[kept]


def sum_rows(
    part: tuple[int, int, int],
    n: int,
    sources: tuple[Sequence[str], int],
    out: Path,
    settings: PassageGraphSettings,
) -> tuple[dict[str, int], int]:
    """Sum a part of rows' pairs into each type's CSR rows (saved); return nnz and degree sum.

    ``part``: its number, first row and the row after its last; ``sources``: every part's name,
    whose semantic pairs :func:`emit` wrote, and the number of buckets :func:`group` made. Its
    inputs stay (a call run again after its worker died reads them again): the caller removes
    them.
    """
    number, start, stop = part
    names, buckets = sources
    files = [f"semantic-{name}" for name in names] + [f"bucket-{b}" for b in range(buckets)]
    files = [np.load(out / f"to-{number}-from-{source}.npz") for source in files]
    got = {
        key: np.concatenate([f[key] for f in files if key in f.files])
        for key in {k for f in files for k in f.files}
    }
    for f in files:
        f.close()
    arrays, nnz, every = {}, {}, []
    for kind in ROW_PARTS:
        key = got[f"{kind}_src"].astype(np.int64) * n + got[f"{kind}_dst"]
        cells, weight = _summed(kind, key, got[f"{kind}_weight"], settings)
        every.append(cells)
        if kind == LINK_IN:
            continue
        arrays |= csr_rows(kind, cells // n - start, cells % n, weight, stop - start)
        nnz[kind] = len(cells)
    np.savez(out / f"rows-{number}.npz", **arrays)
    union = np.unique(np.concatenate(every))
    return nnz, len(union)


def _summed(
    kind: str, key: np.ndarray, weight: np.ndarray, settings: PassageGraphSettings
) -> tuple[np.ndarray, np.ndarray]:
    """Return each cell once with its weight: shared items counted, a similarity's larger side."""
    cells, at, count = np.unique(key, return_inverse=True, return_counts=True)
    if kind == "semantic":
        best = np.full(len(cells), -np.inf, dtype=np.float32)
        np.maximum.at(best, at, weight)
        # a pair one chunk lists and the other does not is max(score, 0), as scipy's maximum of
        # the lists and their transpose gives it (a negative score with semantic_min_sim < 0)
        best[count == 1] = np.maximum(best[count == 1], 0)
        kept = best != 0
        return cells[kept], best[kept]
    if kind in ("entity", "keyword"):
        least = settings.keyword_min_shared if kind == "keyword" else 1
        kept = count >= least
        return cells[kept], count[kept].astype(np.float32)
    return cells, np.ones(len(cells), np.float32)


def stitch(out: Path, nnz: Sequence[dict[str, int]], n: int, target: Path) -> None:
    """Write each type's ``passages-{kind}.npz`` from the parts' rows, one part at a time.

    ``nnz``: each part's values by type, as :func:`sum_rows` returned them. The file is what
    ``PassageGraph.save`` writes (csr_parts.stitch_csr).
    """
    files = [out / f"rows-{p}.npz" for p in range(len(nnz))]
    for kind in EDGE_TYPES:
        total = sum(part[kind] for part in nnz)
        stitch_csr(target / f"passages-{kind}.npz", files, kind, (n, n), total)
    for path in files:
        path.unlink()


def edge_counts(nnz: Sequence[dict[str, int]], degrees: int, n: int) -> dict[str, object]:
    """Return the graph's counts as ``passage_graph.passage_counts`` gives them."""
    edges = {k: sum(part[k] for part in nnz) for k in EDGE_TYPES}
    edges = {k: v if k in DIRECTED else v // 2 for k, v in edges.items()}
    return {"chunks": n, "edges": edges, "mean_degree": degrees / n if n else 0.0}
