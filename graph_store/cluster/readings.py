"""The offline extractor's first reading of a corpus, by tasks on a cluster (``graph build``).

One process reads every chunk (a quarter of a millisecond each, on forked workers that inherit
the whole corpus) and holds the chunks with their texts and the readings at once: 3.7 GB at a
million chunks. Here tasks share the work, each reading a range of rows of the committed chunk
table (which every node mounts at the same path), and the driver holds neither the texts nor
the readings (every chunk's word counts: gigabytes at millions of chunks):

1. tasks count their rows' lower-case words, titles and the titles' keys
   (extraction.readings.corpus_counts);
2. the driver sums them and gives each key to its title (``CorpusReadings.counted``): the title
   index every reading is made against, sent to the tasks once;
3. tasks read their rows against it, each into a table of its own vocabulary saved in the new
   graph folder (which the nodes share too), and send back its document frequencies by string;
4. the driver sums the frequencies (a corpus's keywords are scored with its own), sent once;
5. tasks pick their rows' keywords with them (extraction.keywords: a row's picks depend on the
   corpus only through them and its size), save their table as a part of the extractor's
   state (reading_table.save_in_parts) and their rows' extractions, only the strings those use;
6. the driver saves the state (its counts and titles, and the parts' names) and joins the
   extractions into one vocabulary, reading one part's at a time (holding every part's at once
   took 500 MB more than the joined table at a million chunks).

The readings equal one process's (tests/unit/graph_store/cluster/test_cluster_readings.py): a
chunk's reading depends on the corpus only through the title index, its keywords only through the
document frequencies and the corpus's size. A later write loads the parts joined and saves one file
again.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.keywords import document_frequencies, pick_keywords
from hopgraph.graph_store.graphs.extraction.offline import TitleIndex
from hopgraph.graph_store.graphs.extraction.reading_table import part_name, read_part
from hopgraph.graph_store.graphs.extraction.readings import (
    CorpusCounts,
    CorpusReadings,
    corpus_counts,
    read_table,
)
from hopgraph.graph_store.graphs.extraction.table import ExtractionTable, Vocabulary
from hopgraph.graph_store.index.graph_build import CorpusReader
from hopgraph.graph_store.stores.chunk_table import chunks_in
from hopgraph.graph_store.stores.manifest import Manifest, rebuild_hint, tables_hint

from .tasks import Map, Peaks, in_process, ray_map, task_count

Source = tuple[str, str]
"""The chunk table a call reads: (index folder, the committed manifest as JSON)."""
Frequencies = tuple[list[str], np.ndarray, np.ndarray]
"""Strings and, for each, the rows holding it as an entity and as a word."""


def readings_on(
    ray: ModuleType, partitions: int | None, peaks: Peaks | None = None
) -> CorpusReader:
    """Return how a graph build reads its corpus on the joined cluster.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    run = ray_map(ray, peaks)

    def read(
        directory: Path, manifest: Manifest, chunks: Sequence[Chunk], target: Path
    ) -> ExtractionTable:
        n, source = len(chunks), (str(directory), manifest.model_dump_json())
        table = read_corpus(source, n, task_count(ray, partitions, n), target, run)
        if table.ids != [c.id for c in chunks]:
            raise IndexStateError(
                f"the tasks read other chunks than {directory}'s committed table holds",
                rebuild_hint(directory),
            )
        return table

    return read


def read_corpus(
    source: Source, n: int, parts: int, target: Path, run: Map = in_process
) -> ExtractionTable:
    """Read the ``n`` chunk rows of ``source`` by ``parts`` calls a step (see the module doc).

    The extractor's state is saved into ``target`` (the new graph folder); returns the
    chunks' extractions.
    """
    rows = np.linspace(0, n, parts + 1).astype(int).tolist()
    ranges = [(source, a, b) for a, b in pairwise(rows)]
    state = CorpusReadings.counted(run(count_rows, ranges))
    titles = SharedTitles(state.title_index())
    names = [part_name(i) for i in range(len(ranges))]
    calls = [(*call, titles, str(target), name) for call, name in zip(ranges, names, strict=True)]
    frequencies = summed(run(read_rows, calls))
    run(pick_rows, [(str(target), name, frequencies, n) for name in names])
    for name in names:
        remove_table(target / unpicked(name))
    state.save(target, names)
    del state, titles, frequencies  # the driver's largest objects but the join's
    give_back_freed()
    return ExtractionTable.joined(taken_extractions(target, names))


def give_back_freed() -> None:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``).

    The counts and frequencies summed here are gone, but their pages stayed in the driver's
    RSS: 108 MB at a million chunks. Elsewhere than glibc there is nothing to do.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def taken_extractions(target: Path, names: Sequence[str]) -> Iterator[ExtractionTable]:
    """Yield the extractions of each part (:func:`pick_rows` saved them), removing them."""
    for name in names:
        path = target / extracted(name)
        part = ExtractionTable.load(path)
        remove_table(path)
        yield part


def remove_table(path: Path) -> None:
    """Remove a table of arrays (.npz) and its strings (.json)."""
    path.unlink()
    path.with_suffix(".json").unlink()


class SharedTitles:
    """The title index, sent to the object store once for every task (tasks.ray_map)."""

    shared = True

    def __init__(self, index: TitleIndex) -> None:
        self.index = index


class SharedFrequencies:
    """The corpus's document frequencies by string, sent once for every task (tasks.ray_map)."""

    shared = True

    def __init__(self, strings: list[str], entity: np.ndarray, word: np.ndarray) -> None:
        self.strings, self.entity, self.word = strings, entity, word

    def of(self, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
        """Return the frequencies of each id of ``vocab`` (0 for a string no row holds)."""
        at = dict(zip(self.strings, range(len(self.strings)), strict=True))
        place = np.array([at.get(s, -1) for s in vocab.strings], dtype=np.int64)
        held = place >= 0
        entity, word = np.zeros(len(place), np.int64), np.zeros(len(place), np.int64)
        entity[held], word[held] = self.entity[place[held]], self.word[place[held]]
        return entity, word


def summed(parts: Sequence[Frequencies]) -> SharedFrequencies:
    """Sum the parts' frequencies by string."""
    vocab = Vocabulary()
    ids = [np.array([vocab.id(s) for s in strings], np.int64) for strings, _, _ in parts]
    entity, word = np.zeros(len(vocab), np.int64), np.zeros(len(vocab), np.int64)
    for at, (_, e, w) in zip(ids, parts, strict=True):
        entity[at] += e  # a string once a part: no repeated index within one
        word[at] += w
    return SharedFrequencies(vocab.strings, entity, word)


def unpicked(name: str) -> str:
    """Return the file of a part's table as read, before its keywords are picked."""
    return name.replace(".npz", "-unpicked.npz")


def extracted(name: str) -> str:
    """Return the file of a part's extractions (its rows', in a vocabulary of their own)."""
    return name.replace(".npz", "-extractions.npz")


def count_rows(source: Source, start: int, stop: int) -> CorpusCounts:
    """Count what a first reading needs of chunk rows ``start``–``stop`` (a task)."""
    return corpus_counts(chunk_rows(source, start, stop))


def read_rows(
    source: Source, start: int, stop: int, titles: SharedTitles, target: str, name: str
) -> Frequencies:
    """Read chunk rows ``start``–``stop`` against the title index (a task), none picked.

    Their table is saved as ``name`` (unpicked) in ``target``; returns its frequencies.
    """
    chunks = chunk_rows(source, start, stop)
    table = read_table(chunks, titles.index, Vocabulary(), fork=False)
    table.save(Path(target), {}, unpicked(name))
    entity, word = document_frequencies(table)
    held = np.flatnonzero((entity > 0) | (word > 0))
    return [table.vocab.strings[i] for i in held.tolist()], entity[held], word[held]


def pick_rows(target: str, name: str, frequencies: SharedFrequencies, n: int) -> None:
    """Pick the keywords of one part's rows (a task); save the part and its extractions."""
    table = read_part(Path(target), unpicked(name))
    table = pick_keywords(table, max(n, 1), frequencies.of(table.vocab))
    table.save(Path(target), {}, name)
    extractions = ExtractionTable(
        table.ids, table.vocab, table.entities, table.keywords(), table.triples, table.page
    )
    extractions.compact().save(Path(target) / extracted(name))


def chunk_rows(source: Source, start: int, stop: int) -> list[Chunk]:
    """Read rows ``start``–``stop`` of the committed chunk table, line by line."""
    directory, manifest_json = source
    path = Manifest.model_validate_json(manifest_json).path(Path(directory), "chunks")
    try:
        chunks = chunks_in(path, start=start, stop=stop)
    except (OSError, ValueError, TypeError) as err:
        fix = tables_hint(Path(directory))
        raise IndexStateError(f"{path} is missing or damaged: {err}", fix) from err
    if len(chunks) != stop - start:
        raise IndexStateError(
            f"{path} is damaged: it ends before row {stop}", tables_hint(Path(directory))
        )
    return chunks
