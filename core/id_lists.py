"""Ids in row order, held compactly, and lists of them written and read an id at a time.

A table's chunk ids, a graph's node order, a write's ids for its tasks: at ten million rows a
list of Python strings is 800 MB, and a dict from id to row as much again. :class:`ChunkIds`
holds them as one UTF-8 blob with a sorted array of their hashes; :func:`save_ids` and
:func:`load_ids` write and read the JSON list an id at a time.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import overload

import numpy as np


def id_hash(chunk_id: str) -> int:
    """Return an id's hash for :class:`ChunkIds`' lookup (Python's: one process's table)."""
    return hash(chunk_id)


class ChunkIds(Sequence[str]):
    """Chunk ids in row order, held as one UTF-8 blob: ``ids[row]`` and :meth:`row` of an id.

    About 12 bytes a chunk beside the ids' own bytes (each end, 4 while the blob is under
    4 GiB, and hash), and 4 more once an id is looked up (the hashes sorted, the row of each,
    and the rows' own hashes let go): a segment's ids, only ever looked up in the live table
    (:meth:`rows_of`), never pay for it. A list and a dict of Python strings took about 170.
    Two tables' ids compare equal by a digest taken as they were read.
    """

    def __init__(self, ids: Iterable[str]) -> None:
        # built as it is read, in the types kept: no list of every id as Python strings, and
        # no copy made after (a copy of a few hundred megabytes at 10M ids, freed into a heap
        # that keeps it, was the router's growth)
        blob, ends, hashes = bytearray(), array("I"), array("q")
        for chunk_id in ids:
            blob += chunk_id.encode("utf-8")
            if len(blob) > WIDE_END and ends.typecode == "I":  # past 4 GiB of ids: 8-byte ends
                ends = array("q", ends)
            ends.append(len(blob))
            hashes.append(id_hash(chunk_id))
        digest = hashlib.blake2b(blob, digest_size=16)
        digest.update(memoryview(ends).cast("B"))
        self._blob = blob
        self._ends = np.frombuffer(ends, dtype=np.uint32 if ends.typecode == "I" else np.int64)
        self._row_hashes: np.ndarray | None = np.frombuffer(hashes, dtype=np.int64)
        self.digest = digest.digest()

    def __getstate__(self) -> dict:
        # a hash is this process's (str hashes are salted per process): another one makes its own
        return {"blob": self._blob, "ends": self._ends, "digest": self.digest}

    def __setstate__(self, state: dict) -> None:
        self._blob, self._ends, self.digest = state["blob"], state["ends"], state["digest"]
        self._row_hashes = np.fromiter((id_hash(i) for i in self), np.int64, len(self._ends))

    @cached_property
    def _lookup(self) -> tuple[np.ndarray, np.ndarray]:
        """The hashes sorted, and the row of each: what :meth:`row` searches.

        The rows' own hashes are let go once sorted (the order gives them back): the table
        keeps 12 bytes a chunk for it, not 24.
        """
        hashes = self._hashes_by_row()
        order = np.argsort(hashes, kind="stable")
        rows = order.astype(np.uint32 if len(hashes) <= WIDE_END else np.int64)
        found = hashes[order]
        del order
        self._row_hashes = None  # _hashes_by_row makes them again if asked
        return found, rows

    def _hashes_by_row(self) -> np.ndarray:
        """Return each row's id hash (made again from the lookup once it sorted them)."""
        if self._row_hashes is not None:
            return self._row_hashes
        hashes, rows = self._lookup
        out = np.empty(len(hashes), dtype=np.int64)
        out[rows] = hashes
        return out

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, row: int) -> str: ...

    @overload
    def __getitem__(self, row: slice) -> list[str]: ...

    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return [self[r] for r in range(*row.indices(len(self)))]
        row = int(row)
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(row)
        start = int(self._ends[row - 1]) if row else 0
        return self._blob[start : int(self._ends[row])].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return (self[row] for row in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChunkIds):
            return other.digest == self.digest
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def row(self, chunk_id: str) -> int | None:
        """Return the row of ``chunk_id``, or None when it is not a chunk of this table."""
        hashes, order = self._lookup
        h = id_hash(chunk_id)
        at = int(np.searchsorted(hashes, h))
        while at < len(hashes) and hashes[at] == h:
            row = int(order[at])
            if self[row] == chunk_id:
                return row
            at += 1
        return None

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """Return the row of each of ``ids`` (-1: not a chunk of this table), searched at once.

        Another :class:`ChunkIds` (a segment's) is searched by the hashes it holds.
        """
        if isinstance(ids, ChunkIds):
            wanted = ids._hashes_by_row()
        else:
            wanted = np.fromiter((id_hash(i) for i in ids), np.int64, len(ids))
        hashes, order = self._lookup
        at = np.searchsorted(hashes, wanted)
        out = np.full(len(ids), -1, dtype=np.int64)
        hit = np.flatnonzero(at < len(hashes))
        hit = hit[hashes[at[hit]] == wanted[hit]]
        out[hit] = order[at[hit]]  # the first of a hash is nearly always the id: else look on
        if isinstance(ids, ChunkIds):  # compared as bytes, by blocks (no Python string each)
            unsure = hit[~self._same_as(out[hit], ids, hit)]
        else:
            unsure = np.array([k for k in hit.tolist() if self[int(out[k])] != ids[k]], np.int64)
        for k in unsure.tolist():
            row = self.row(ids[k])
            out[k] = -1 if row is None else row
        return out

    def _same_as(self, rows: np.ndarray, other: ChunkIds, at: np.ndarray) -> np.ndarray:
        """Tell, pair by pair, whether this table's id at ``rows`` is ``other``'s at ``at``."""
        out = np.zeros(len(rows), dtype=bool)
        mine, theirs = _bytes_of(self), _bytes_of(other)
        for start in range(0, len(rows), COMPARE_BLOCK):
            block = slice(start, start + COMPARE_BLOCK)
            a, a_end = self._span(rows[block])
            b, b_end = other._span(at[block])
            size = a_end - a
            same = size == b_end - b
            check = np.flatnonzero(same & (size > 0))
            if len(check):
                sizes = size[check]
                firsts = np.cumsum(sizes) - sizes
                offset = np.arange(int(sizes.sum())) - np.repeat(firsts, sizes)
                differ = mine[np.repeat(a[check], sizes) + offset]
                differ = differ != theirs[np.repeat(b[check], sizes) + offset]
                same[check[np.logical_or.reduceat(differ, firsts)]] = False
            out[block] = same
        return out

    def _span(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return where the ids at ``rows`` start and end in the blob."""
        ends = self._ends[rows].astype(np.int64)  # 4-byte ends: signed sums of sizes below
        starts = np.where(rows > 0, self._ends[np.maximum(rows - 1, 0)], 0).astype(np.int64)
        return starts, ends


WIDE_END = (1 << 32) - 1
"""The largest end (blob bytes) or row a 4-byte array holds: past it, 8-byte ones."""
COMPARE_BLOCK = 1 << 16
"""Ids whose bytes :meth:`ChunkIds.rows_of` compares at once (a few megabytes of indices)."""


def _bytes_of(ids: ChunkIds) -> np.ndarray:
    """Return the ids' blob as bytes in an array (a view)."""
    return np.frombuffer(ids._blob, dtype=np.uint8)


class ChunkRows(Mapping[str, int]):
    """Each chunk id's row, looked up in a :class:`ChunkIds` (no dict of every id)."""

    def __init__(self, ids: ChunkIds) -> None:
        self.ids = ids

    def __getitem__(self, chunk_id: str) -> int:
        row = self.ids.row(chunk_id) if isinstance(chunk_id, str) else None
        if row is None:
            raise KeyError(chunk_id)
        return row

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self.ids.row(chunk_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def save_ids(ids: Iterable[str], path: Path) -> None:
    """Write chunk ids as a JSON list (what ``json.dumps`` writes), an id at a time.

    A graph's node order and a write's ids for its tasks: the ids may come from a table as it
    is read, none held.
    """
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        out.write("[")
        for at, chunk_id in enumerate(ids):
            out.write(f", {json.dumps(chunk_id)}" if at else json.dumps(chunk_id))
        out.write("]")


IDS_BLOCK = 1 << 20
"""Characters of a list of ids read at a time."""


def load_ids(path: Path) -> Iterator[str]:
    """Yield the ids of a JSON list (:func:`save_ids`'s) one at a time, a block read at a time.

    A task that maps ten million ids holds them compactly (:class:`ChunkIds`), never as the
    list of Python strings ``json.loads`` makes of the whole file first.
    """
    decode = json.JSONDecoder().raw_decode
    with path.open(encoding="utf-8") as file:
        text, at, state = "", 0, "["
        while True:
            block = file.read(IDS_BLOCK)
            text, at = text[at:] + block, 0
            while True:
                while at < len(text) and text[at].isspace():
                    at += 1
                if at == len(text):
                    break
                if state == "[" or (state == "," and text[at] != "]"):
                    if text[at] != state:
                        raise ValueError(f"{path} is not a JSON list of ids (at {text[at]!r})")
                    at, state = at + 1, "id" if state == "," else "first"
                elif text[at] == "]" and state in ("first", ","):
                    return
                else:
                    try:
                        value, end = decode(text, at)
                    except json.JSONDecodeError:
                        if block:
                            break  # an id cut by the block's end: read on
                        raise ValueError(f"{path} is not a JSON list of ids") from None
                    if not isinstance(value, str):
                        raise ValueError(f"{path} holds {value!r}, not a chunk id")
                    yield value
                    at, state = end, ","
            if not block:
                raise ValueError(f"{path} ends before its list of ids does")
