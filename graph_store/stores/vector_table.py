"""Every chunk's embedding, kept beside the index in segments, so no write reads Chroma back.

Chroma answers dense queries; but the graphs (semantic neighbours) and the methods that score
every chunk need the whole matrix, and reading it back from Chroma costs more than the rest of a
write at 100k chunks (its pages are fetched by offset). So each write that adds chunks also saves
their vectors as a segment (``vectors.npy`` + ``ids.json`` in its generation folder, memory-mapped
on read); a delete leaves the rows in place, dead. A segment of :data:`ivf.MIN_ROWS` rows or more
also gets its IVF partition (``ivf.npz``), for dense search that reads a few lists of it
(graph_store/stores/vector_search.py). Vectors are float32, or float16 when the index says so (half
the memory and disk; cosines change in the fourth decimal). As in the BM25 store, a write merges
the writes' small segments once there are enough of them, and rewrites a segment with a quarter
of its rows dead (stores/segments.py). An index written before the table existed has none: its
vectors are read from Chroma, and its next write saves them as a first segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import verify_file, verify_range
from hopgraph.core.id_lists import ChunkIds, load_ids, save_ids

from .ivf import IVF, IVF_FILE, MIN_ROWS
from .segments import live_rows, to_merge

VECTORS_FILE = "vectors.npy"
IDS_FILE = "ids.json"


@dataclass(frozen=True)
class VectorSegment:
    """Some chunks' vectors (rows in ``ids`` order), saved in folder ``path`` under the index.

    A loaded segment holds its ids compactly (:class:`ChunkIds`, read an id at a time).
    """

    path: str
    ids: Sequence[str]
    vectors: np.ndarray

    def save(self, root: Path, dtype: str = "float32", ann: bool = True) -> None:
        """Write the segment under ``root`` as ``dtype``, with its IVF if it is large enough.

        ``ann=False``: never an IVF (a table read whole, e.g. the triple vectors).
        """
        folder = root / self.path
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / VECTORS_FILE, np.ascontiguousarray(self.vectors, dtype=dtype))
        save_ids(self.ids, folder / IDS_FILE)
        if ann and len(self.ids) >= MIN_ROWS:
            IVF.build(np.asarray(self.vectors, dtype=np.float32)).save(folder / IVF_FILE)

    @classmethod
    def load(cls, root: Path, path: str) -> VectorSegment:
        """Read a segment (its vectors memory-mapped)."""
        folder = root / path
        try:
            # the header block (shape, type) now; the rows' blocks as searches read them
            verify_range(folder / VECTORS_FILE, 0, 1)
            vectors = np.load(folder / VECTORS_FILE, mmap_mode="r")
            ids = ChunkIds(load_ids(verify_file(folder / IDS_FILE)))
        except (OSError, ValueError) as err:
            raise IndexStateError(
                f"the vector segment {folder} is missing or damaged: {err}",
                "rebuild the index with `hopgraph index SOURCE --index DIR --force`",
            ) from err
        if len(ids) != len(vectors):
            raise IndexStateError(
                f"the vector segment {folder} holds {len(vectors)} vectors for {len(ids)} ids",
                "rebuild the index with `hopgraph index SOURCE --index DIR --force`",
            )
        return cls(path, ids, vectors)


class VectorTable:
    """The segments of an index's vectors; rows of chunks deleted since are dead."""

    def __init__(self, segments: list[VectorSegment]) -> None:
        self.segments = segments

    @property
    def paths(self) -> list[str]:
        """Return the segment folders (relative to the index), for the manifest."""
        return [s.path for s in self.segments]

    @property
    def dtype(self) -> str:
        """Return how the vectors are stored: float32, or float16."""
        return str(self.segments[0].vectors.dtype) if self.segments else "float32"

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        vectors: np.ndarray,
        root: Path,
        path: str,
        dtype: str = "float32",
    ) -> VectorTable:
        """Save ``vectors`` (rows in ``ids`` order) as the only segment, stored as ``dtype``."""
        segment = VectorSegment(path, list(ids), np.asarray(vectors, dtype=np.float32))
        segment.save(root, dtype)
        return cls([VectorSegment.load(root, path)])  # memory-mapped, as a reader has it

    @staticmethod
    def ann_files(root: Path, paths: Sequence[str], known: dict[str, str]) -> dict[str, str]:
        """Return the IVF file of each segment of ``paths`` (Manifest.ann), none opened.

        ``known`` ones, and those on disk; a segment's ids are not read (70 MB a million chunks).

        A segment the last generation recorded keeps its entry even when its file has gone,
        so `hopgraph check` names the loss.
        """
        out = {}
        for path in paths:
            if path in known:
                out[path] = known[path]
            elif (root / path / IVF_FILE).is_file():
                out[path] = f"{path}/{IVF_FILE}"
        return out

    @classmethod
    def load(cls, root: Path, paths: Sequence[str]) -> VectorTable:
        """Open the segments the manifest names."""
        return cls([VectorSegment.load(root, p) for p in paths])

    @staticmethod
    def appended_to(
        root: Path, paths: Sequence[str], added: Sequence[str], vectors: np.ndarray, path: str
    ) -> list[str]:
        """Save the ``added`` vectors as a new segment at ``path`` after the segments ``paths``.

        Returns the table's segments then, as :meth:`appended` would give them, without opening
        the others (their ids: 100 MB a million chunks): stored as the first one is.
        """
        if not len(added):
            return list(paths)
        dtype = str(np.load(root / paths[0] / VECTORS_FILE, mmap_mode="r").dtype)
        return [*paths, *VectorTable.build(added, vectors, root, path, dtype).paths]

    def places(self, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Return where each of ``ids`` (distinct) has its vector: its segment, and row there.

        A later segment wins a repeated id (:func:`segments.live_rows`); an id with no vector
        is an error that names it.
        """
        table = ids if isinstance(ids, ChunkIds) else ChunkIds(ids)
        rows, held = live_rows(table, [s.ids for s in self.segments])
        if not held.all():
            missing = np.flatnonzero(~held)
            raise IndexStateError(
                f"{len(missing)} chunks have no stored vector (e.g. {table[int(missing[0])]!r})",
                "the index is damaged: rebuild it with `hopgraph index SOURCE --force`",
            )
        segment = np.zeros(len(table), dtype=np.int64)
        local = np.zeros(len(table), dtype=np.int64)
        for s, live in enumerate(rows):
            mine = np.flatnonzero(live >= 0)
            segment[live[mine]], local[live[mine]] = s, mine
        return segment, local

    def matrix(self, ids: Sequence[str]) -> np.ndarray:
        """Return the vectors of ``ids`` (distinct), in that order (float16 rows widened)."""
        return self._gathered(*self.places(ids))

    def _gathered(self, segment: np.ndarray, local: np.ndarray) -> np.ndarray:
        """Return the vectors at these (segment, row) places, in their order."""
        dimension = self.segments[0].vectors.shape[1] if self.segments else 0
        out = np.empty((len(segment), dimension), dtype=np.float32)
        for s, held in enumerate(self.segments):
            mine = np.flatnonzero(segment == s)
            if len(mine):
                rows = local[mine]
                order = np.argsort(rows)  # memory-mapped: read the file forwards
                out[mine[order]] = held.vectors[rows[order]]
        return out

    def read_every(self, ids: Sequence[str], block: int = 1 << 16) -> None:
        """Read every row of the table, a block at a time; raise if one of ``ids`` has none.

        A check: what :meth:`matrix` of every id reads, without a matrix of them all (4.6 GB
        at 3M MiniLM rows).
        """
        self.places(ids)
        for segment in self.segments:
            for at in range(0, len(segment.ids), block):
                np.asarray(segment.vectors[at : at + block], dtype=np.float32)

    def updated(
        self,
        ids: Sequence[str],
        added: Sequence[str],
        vectors: np.ndarray,
        root: Path,
        path: str,
    ) -> VectorTable:
        """Return the table after a write that leaves ``ids``, ``added`` among them.

        The added vectors become a new segment at ``root / path``; then :meth:`compacted`, any
        merged segment at ``path``-merged.
        """
        return self.appended(added, vectors, root, path).compacted(ids, root, f"{path}-merged")

    def appended(
        self, added: Sequence[str], vectors: np.ndarray, root: Path, path: str
    ) -> VectorTable:
        """Return this table with the ``added`` vectors saved as a new segment at ``path``."""
        if not len(added):
            return VectorTable(list(self.segments))
        new = VectorTable.build(added, vectors, root, path, self.dtype)
        return VectorTable([*self.segments, *new.segments])

    def compacted(self, ids: Sequence[str], root: Path, path: str) -> VectorTable:
        """Return this table, or with some segments merged into one at ``path``.

        Which: :func:`segments.to_merge` (size-tiered: the writes' small segments once there
        are enough of them, and any segment with too many dead rows; a build's or a cluster
        partition's segment stays as it is). The merged segment, of the live rows (``ids``,
        distinct, held compactly when a :class:`ChunkIds`) those segments hold, comes last.
        """
        table = ids if isinstance(ids, ChunkIds) else ChunkIds(ids)
        segment, local = self.places(table)
        sizes = [len(s.ids) for s in self.segments]
        live = np.bincount(segment, minlength=len(self.segments))
        merge = set(to_merge(sizes, [size - int(n) for size, n in zip(sizes, live, strict=True)]))
        if not merge:
            return self
        kept = [s for number, s in enumerate(self.segments) if number not in merge]
        rest = np.flatnonzero(np.isin(segment, sorted(merge)))
        if not len(rest):  # every row of them is dead: they go, and nothing takes their place
            return VectorTable(kept)
        vectors = self._gathered(segment[rest], local[rest])
        merged = VectorTable.build([table[int(r)] for r in rest], vectors, root, path, self.dtype)
        return VectorTable([*kept, *merged.segments])
