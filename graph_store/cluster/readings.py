"""The offline extractor's first reading of a corpus, by tasks on a cluster (``graph build``).

One process reads every chunk (a quarter of a millisecond each, on forked workers that inherit
the whole corpus) and holds the chunks with their texts and the readings at once: 3.7 GB at a
million chunks. Here tasks share the work, each reading ranges of rows of the committed chunk
table (which every node mounts at the same path), and the driver holds no texts:

1. tasks count their rows' lower-case words, titles and the titles' keys
   (extraction.readings.corpus_counts);
2. the driver sums them and gives each key to its title (``CorpusReadings.counted``): the title
   index every reading is made against, sent to the tasks once;
3. tasks read their rows against it, each into a table of its own vocabulary;
4. the driver joins the tables into one vocabulary and picks every row's keywords with the
   corpus's document frequencies, a block of rows at a time (extraction.keywords).

The readings equal one process's (tests/unit/test_cluster_readings.py): a chunk's reading depends
on the corpus only through the title index, its keywords only through the document frequencies.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.offline import TitleIndex
from hopgraph.graph_store.graphs.extraction.reading_table import ReadingTable, empty_table
from hopgraph.graph_store.graphs.extraction.readings import (
    CorpusCounts,
    CorpusReadings,
    corpus_counts,
    read_table,
)
from hopgraph.graph_store.graphs.extraction.table import ExtractionTable, Vocabulary
from hopgraph.graph_store.index.graph_build import CorpusReader
from hopgraph.graph_store.stores.chunk_table import chunks_in
from hopgraph.graph_store.stores.manifest import Manifest, rebuild_hint

from .tasks import Map, Peaks, in_process, ray_map, task_count

Source = tuple[str, str]
"""The chunk table a call reads: (index folder, the committed manifest as JSON)."""


def readings_on(
    ray: ModuleType, partitions: int | None, peaks: Peaks | None = None
) -> CorpusReader:
    """Return how a graph build reads its corpus on the joined cluster.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    run = ray_map(ray, peaks)

    def read(
        directory: Path, manifest: Manifest, chunks: Sequence[Chunk]
    ) -> tuple[CorpusReadings, ExtractionTable]:
        n, source = len(chunks), (str(directory), manifest.model_dump_json())
        state, table = read_corpus(source, n, task_count(ray, partitions, n), run)
        if table.ids != [c.id for c in chunks]:
            raise IndexStateError(
                f"the tasks read other chunks than {directory}'s committed table holds",
                rebuild_hint(directory),
            )
        return state, table

    return read


def read_corpus(
    source: Source, n: int, parts: int, run: Map = in_process
) -> tuple[CorpusReadings, ExtractionTable]:
    """Read the ``n`` chunk rows of ``source`` by ``parts`` calls a step (see the module doc)."""
    rows = np.linspace(0, n, parts + 1).astype(int).tolist()
    ranges = [(source, a, b) for a, b in pairwise(rows)]
    state = CorpusReadings.counted(run(count_rows, ranges))
    titles = SharedTitles(state.title_index())
    tables = run(read_rows, [(*call, titles) for call in ranges])
    vocab = Vocabulary()
    joined = ReadingTable.concat([empty_table(vocab), *(t.into(vocab) for t in tables)])
    del tables  # each part's copy, before the keywords' pairs are scored
    return state, state.picked(joined)


class SharedTitles:
    """The title index, sent to the object store once for every task (tasks.ray_map)."""

    shared = True

    def __init__(self, index: TitleIndex) -> None:
        self.index = index


def count_rows(source: Source, start: int, stop: int) -> CorpusCounts:
    """Count what a first reading needs of chunk rows ``start``–``stop`` (a task)."""
    return corpus_counts(chunk_rows(source, start, stop))


def read_rows(source: Source, start: int, stop: int, titles: SharedTitles) -> ReadingTable:
    """Read chunk rows ``start``–``stop`` against the title index (a task), none picked."""
    chunks = chunk_rows(source, start, stop)
    return read_table(chunks, titles.index, Vocabulary(), fork=False)


def chunk_rows(source: Source, start: int, stop: int) -> list[Chunk]:
    """Read rows ``start``–``stop`` of the committed chunk table, line by line."""
    directory, manifest_json = source
    path = Manifest.model_validate_json(manifest_json).path(Path(directory), "chunks")
    try:
        chunks = chunks_in(path, start=start, stop=stop)
    except (OSError, ValueError, TypeError) as err:
        fix = rebuild_hint(Path(directory))
        raise IndexStateError(f"{path} is missing or damaged: {err}", fix) from err
    if len(chunks) != stop - start:
        raise IndexStateError(
            f"{path} is damaged: it ends before row {stop}", rebuild_hint(Path(directory))
        )
    return chunks
