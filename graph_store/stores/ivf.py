"""An inverted-file (IVF) index over a vector segment: dense search that reads a few lists.

A query is compared with ``nlist`` k-means centroids, and only the rows of its ``nprobe``
nearest lists are scored (Jégou et al., 2011). The index is faiss's IndexIVFScalarQuantizer:
each list holds its rows' ids and 8-bit codes of their vectors, contiguous, so a probe reads a
quarter of what the float32 rows would take, with SIMD. It only proposes candidates: the
:mod:`vector_search` scores them again, exactly, from the vector table, so

- every score a search returns is an exact cosine; damage to the IVF file can cost recall, never
  give a wrong score (and its CRC-32 is checked before faiss reads it);
- the file is memory-mapped (faiss's ``IO_FLAG_MMAP``): every process on the machine shares its
  pages, as it shares the vector table's.

Sizes: lists of about 256 rows (3,906 at a million rows), 128 of them read per query: about
32,000 rows' codes, 1.36 ms at 100k rows and 1.55 ms at 1M (p95). Chosen on the dev sets and on
MiniLM vectors tiled to 100k and 1M rows (docs/scaling.md, ``python -m
hopgraph.evals.bench.ivf_recall``): 128 lists keep 99.4 % of dense's exact top 10 at 100k and
99.9 % at 1M; with 2·√rows lists, 16 of 169 kept 88 % on 2wiki and 64 kept 99 %.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError

IVF_FILE = "ivf.faiss"
LIST_ROWS = 256
"""Rows per list: lists grow in number, not size, so a query reads about as many rows at any
size (128 lists × 256 rows), and its time stays flat as the corpus grows."""
PROBES = 128
"""Lists a query reads."""
MIN_ROWS = PROBES * LIST_ROWS
"""Segments smaller than this (32,768 rows) are scanned exactly: a query would read every list
of their IVF anyway. The eval sets (2,600–7,100 chunks) stay exact unless asked (``--search
ann``)."""
PREFETCH = 4096
"""The most candidates asked of faiss beyond ``depth`` (its heap grows with them)."""
TRAIN_PER_LIST = 64
"""Sample rows per centroid for k-means (faiss's default is 256: 4× the training time)."""


@dataclass(frozen=True)
class IVF:
    """A faiss IVF index over one segment's rows (ids = row numbers in the segment)."""

    index: object  # faiss.IndexIVFScalarQuantizer
    _last: list = field(default_factory=list, compare=False, repr=False)
    """The last query's candidates, [(query bytes, rows, whether faiss had no more)]: a deeper
    ask for the same query reuses them."""

    @property
    def lists(self) -> int:
        """Return the number of lists."""
        return int(self.index.nlist)

    @property
    def nprobe(self) -> int:
        """Return how many lists a query reads."""
        return min(self.lists, PROBES)

    @classmethod
    def build(cls, vectors: np.ndarray) -> IVF:
        """Index ``vectors`` (rows, dim; unit length): k-means lists, 8-bit codes."""
        import faiss

        rows, dim = vectors.shape
        nlist = max(1, round(rows / LIST_ROWS))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.cp.max_points_per_centroid = TRAIN_PER_LIST
        index.cp.min_points_per_centroid = 1  # a small segment: few rows a list is fine
        index.cp.seed = 1
        sample = np.sort(np.random.default_rng(0).choice(rows, min(rows, nlist * TRAIN_PER_LIST),
                                                         replace=False))  # fmt: skip
        index.train(np.ascontiguousarray(vectors[sample], dtype=np.float32))
        for start in range(0, rows, 65_536):
            index.add(np.ascontiguousarray(vectors[start : start + 65_536], dtype=np.float32))
        return cls(index)

    def candidates(self, query: np.ndarray, depth: int) -> np.ndarray:
        """Return up to ``depth`` segment rows whose coded vectors score best for ``query``.

        Asks faiss for 4 × ``depth`` (up to :data:`PREFETCH`): the lists read are the same, and
        a deeper ask for the same query (GNN-Ret widening its candidates) is then free. (Always
        asking for 4,096 slowed a 42-deep dense search from 1.9 to 3.4 ms: faiss's heap.)
        """
        import faiss

        key = np.asarray(query, dtype=np.float32).tobytes()
        last = (self._last[-1:] or [None])[0]  # one read: threads may replace it
        if last is not None and last[0] == key and (len(last[1]) >= depth or last[2]):
            return last[1][:depth]
        params = faiss.SearchParametersIVF(nprobe=self.nprobe)
        asked = max(depth, min(4 * depth, PREFETCH))
        _, found = self.index.search(query.reshape(1, -1).astype(np.float32), asked, params=params)
        found = found[0][found[0] >= 0]
        self._last[:] = [(key, found, len(found) < asked)]  # the last flag: nothing more there
        return found[:depth]

    def forget(self) -> None:
        """Drop the last search's candidates (so a timing includes the search)."""
        self._last.clear()

    def save(self, path: Path) -> None:
        """Write the index to ``path``."""
        import faiss

        faiss.write_index(self.index, str(path))

    @classmethod
    def load(cls, path: Path, rows: int, dim: int) -> IVF:
        """Map the index at ``path`` (read-only); IndexStateError if it is not this segment's."""
        import faiss

        try:
            index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        except RuntimeError as err:  # faiss names what it could not read
            raise IndexStateError(f"{path} is damaged: {str(err).splitlines()[0]}") from err
        if index.ntotal != rows or index.d != dim or not hasattr(index, "nlist"):
            raise IndexStateError(
                f"{path} is damaged: it indexes {index.ntotal} {index.d}-d rows, "
                f"its segment holds {rows} {dim}-d ones"
            )
        return cls(index)
