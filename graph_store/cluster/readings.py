"""The offline extractor's first reading of a corpus, by tasks on a cluster (``graph build``).

One process reads every chunk (a quarter of a millisecond each, on forked workers that inherit
the whole corpus) and holds the chunks with their texts and the readings at once: 3.7 GB at a
million chunks. Here tasks share the work, each reading a range of rows of the committed chunk
table (which every node mounts at the same path), and the driver holds neither the chunks nor
the readings (every chunk's word counts: gigabytes at millions of chunks) nor their sums:
whatever the corpus, it holds names of files.

1. tasks count their rows' lower-case words, titles and the titles' keys
   (extraction.readings.corpus_counts), each into a file in the new graph folder (which the
   nodes share too);
2. one task sums them, gives each key to its title (``CorpusReadings.counted``) and saves the
   extractor's state (its counts and keys, the parts' names) and the title index every reading
   is made against (extraction.title_table): the driver holds none of it;
3. tasks read the title index, then their rows against it, each into a table of its own
   vocabulary saved in the new graph folder, beside its document frequencies by string hash;
4. one task sums the frequencies, arrays only (a corpus's keywords are scored with its own),
   into one file;
5. tasks pick their rows' keywords with them (extraction.keywords: a row's picks depend on the
   corpus only through them and its size), save their table as a part of the extractor's
   state (reading_table.save_in_parts) and their rows' extractions, only the strings those use,
   in parts (``EXTRACTION_PARTS``, where the graphs' tasks read them: cluster/graph_parts.py).

The readings equal one process's (tests/unit/graph_store/cluster/test_cluster_readings.py): a
chunk's reading depends on the corpus only through the title index, its keywords only through the
document frequencies and the corpus's size. A later write loads the parts joined and saves one file
again.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import numpy as np
import orjson

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.keywords import document_frequencies, pick_keywords
from hopgraph.graph_store.graphs.extraction.reading_table import ReadingTable, part_name, read_part
from hopgraph.graph_store.graphs.extraction.readings import (
    CorpusCounts,
    CorpusReadings,
    corpus_counts,
    read_table,
)
from hopgraph.graph_store.graphs.extraction.table import (
    EXTRACTION_PARTS,
    ExtractionTable,
    Vocabulary,
)
from hopgraph.graph_store.graphs.extraction.title_table import read_titles, string_hashes
from hopgraph.graph_store.index.graph_build import CorpusReader
from hopgraph.graph_store.stores.chunk_table import chunks_in, scan_ids
from hopgraph.graph_store.stores.manifest import Manifest, rebuild_hint, tables_hint

from .tasks import Map, Peaks, in_process, ray_map, task_count

Source = tuple[str, str]
"""The chunk table a call reads: (index folder, the committed manifest as JSON)."""
Frequencies = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Strings by their 64-bit hashes (title_table.key_hash) and, for each, the rows holding it as
an entity and as a word: a task sums arrays, never the strings (a million entities' strings
and their vocabulary were 200 MB of a write's driver)."""
FREQUENCIES = "frequencies"
"""The folder in the new graph folder where the reading tasks leave their frequencies, and one
task their sum (:data:`SUMMED`)."""
SUMMED = "summed.npz"


def readings_on(
    ray: ModuleType, partitions: int | None, peaks: Peaks | None = None
) -> CorpusReader:
    """Return how a graph build reads its corpus on the joined cluster.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    run = ray_map(ray, peaks)

    def read(directory: Path, manifest: Manifest, n: int, target: Path) -> None:
        source = (str(directory), manifest.model_dump_json())
        read = read_corpus(source, n, task_count(ray, partitions, n), target, run)
        ids = scan_ids(manifest.path(directory, "chunks"))  # streamed: none held
        if any(ordered_digest(itertools.islice(ids, b - a)) != found for a, b, found in read):
            raise IndexStateError(
                f"the tasks read other chunks than {directory}'s committed table holds",
                rebuild_hint(directory),
            )

    return read


def read_corpus(
    source: Source, n: int, parts: int, target: Path, run: Map = in_process
) -> list[tuple[int, int, int]]:
    """Read the ``n`` chunk rows of ``source`` by ``parts`` calls a step (see the module doc).

    The extractor's state and the chunks' extractions, in parts (``EXTRACTION_PARTS``), are
    saved into ``target`` (the new graph folder). Returns each part's rows and the
    :func:`ordered_digest` of the ids it read.
    """
    rows = np.linspace(0, n, parts + 1).astype(int).tolist()
    ranges = [(source, a, b) for a, b in pairwise(rows)]
    names = [part_name(i) for i in range(len(ranges))]
    (target / COUNTS).mkdir()
    run(count_rows, [(*call, str(target), name) for call, name in zip(ranges, names, strict=True)])
    run(claim_titles, [(str(target), names)])
    shutil.rmtree(target / COUNTS)  # read: gone (not by the task, which may run again)
    calls = [(*call, str(target), name) for call, name in zip(ranges, names, strict=True)]
    (target / FREQUENCIES).mkdir()
    run(read_rows, calls)
    frequencies = sum_frequencies_of(names, target, run)
    (target / EXTRACTION_PARTS).mkdir()
    digests = run(pick_rows, [(str(target), name, frequencies, n) for name in names])
    for name in names:
        remove_table(target / unpicked(name))
    shutil.rmtree(target / FREQUENCIES)
    listed = [(extracted(name), a, b) for name, (_, a, b) in zip(names, ranges, strict=True)]
    (target / EXTRACTION_PARTS / "parts.json").write_text(json.dumps(listed), encoding="utf-8")
    return [(a, b, found) for (_, a, b), found in zip(ranges, digests, strict=True)]


def remove_table(path: Path) -> None:
    """Remove a table of arrays (.npz) and its strings (.json)."""
    path.unlink()
    path.with_suffix(".json").unlink()


class SharedFrequencies:
    """The corpus's document frequencies by string hash, summed and saved by a task.

    Two strings of one hash would have their frequencies summed: with 64-bit hashes, less than
    one chance in a million at five million strings.
    """

    def __init__(self, hashes: np.ndarray, entity: np.ndarray, word: np.ndarray) -> None:
        self.hashes, self.entity, self.word = hashes, entity, word  # hashes sorted

    def save(self, path: Path) -> None:
        """Write the three arrays into one .npz at ``path``."""
        with path.open("wb") as file:  # np.savez would add ".npz" to a name without it
            np.savez(file, hashes=self.hashes, entity=self.entity, word=self.word)

    @classmethod
    def load(cls, path: Path) -> SharedFrequencies:
        """Read what :meth:`save` wrote."""
        with np.load(path) as saved:
            return cls(saved["hashes"], saved["entity"], saved["word"])

    def of(self, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
        """Return the frequencies of each id of ``vocab`` (0 for a string no row holds)."""
        wanted = string_hashes(vocab.strings)
        at = np.minimum(np.searchsorted(self.hashes, wanted), max(len(self.hashes) - 1, 0))
        held = self.hashes[at] == wanted if len(self.hashes) else np.zeros(len(wanted), bool)
        entity, word = np.zeros(len(wanted), np.int64), np.zeros(len(wanted), np.int64)
        entity[held], word[held] = self.entity[at[held]], self.word[at[held]]
        return entity, word


def frequencies_of(table: ReadingTable) -> Frequencies:
    """Return a table's document frequencies by string hash, for the strings its rows hold."""
    entity, word = document_frequencies(table)
    held = np.flatnonzero((entity > 0) | (word > 0))
    strings = table.vocab.strings
    return string_hashes([strings[i] for i in held.tolist()]), entity[held], word[held]


def save_frequencies(frequencies: Frequencies, target: Path, name: str) -> None:
    """Save one part's frequencies as ``name``'s in ``target``'s :data:`FREQUENCIES`."""
    SharedFrequencies(*frequencies).save(_frequencies_file(target, name))


def _frequencies_file(target: Path, name: str) -> Path:
    return target / FREQUENCIES / name


def sum_frequencies_of(names: Sequence[str], target: Path, run: Map) -> str:
    """Have one task sum the parts' saved frequencies; return the file of the sum."""
    files = [str(_frequencies_file(target, name)) for name in names]
    summed_file = str(_frequencies_file(target, SUMMED))
    run(sum_frequencies, [(files, summed_file)])
    return summed_file


def sum_frequencies(files: list[str], to: str) -> None:
    """Sum the frequencies saved in ``files`` and save them to ``to`` (a task)."""
    summed([_loaded(name) for name in files]).save(Path(to))


def _loaded(name: str) -> Frequencies:
    found = SharedFrequencies.load(Path(name))
    return found.hashes, found.entity, found.word


def summed(parts: Sequence[Frequencies]) -> SharedFrequencies:
    """Sum the parts' frequencies by string hash."""
    if not parts:
        empty = np.zeros(0, np.int64)
        return SharedFrequencies(np.zeros(0, np.uint64), empty, empty)
    hashes, at = np.unique(np.concatenate([h for h, _, _ in parts]), return_inverse=True)
    entity = np.bincount(at, np.concatenate([e for _, e, _ in parts]), len(hashes))
    word = np.bincount(at, np.concatenate([w for _, _, w in parts]), len(hashes))
    return SharedFrequencies(hashes, entity.astype(np.int64), word.astype(np.int64))


def unpicked(name: str) -> str:
    """Return the file of a part's table as read, before its keywords are picked."""
    return name.replace(".npz", "-unpicked.npz")


def extracted(name: str) -> str:
    """Return the file of a part's extractions (its rows', in a vocabulary of their own)."""
    return name.replace(".npz", "-extractions.npz")


COUNTS = "title-counts"
"""The folder in the new graph folder where the counting tasks leave their counts."""


def count_rows(source: Source, start: int, stop: int, target: str, name: str) -> None:
    """Count what a first reading needs of chunk rows ``start``–``stop`` (a task).

    Saved as ``name``'s counts in ``target``'s :data:`COUNTS`, for :func:`claim_titles`.
    """
    lower, titles, keys = corpus_counts(chunk_rows(source, start, stop))
    path = Path(target) / COUNTS / name.replace(".npz", ".json")
    path.write_bytes(orjson.dumps([dict(lower), dict(titles), keys]))


def claim_titles(target: str, names: list[str]) -> None:
    """Sum the parts' counts, give each key to its title and save the state (a task).

    The state's counts and keys, as a state saved in parts ``names``, and the title index the
    readings are made against (extraction.title_table), both in ``target``.
    """
    folder = Path(target) / COUNTS
    files = [folder / name.replace(".npz", ".json") for name in names]
    state = CorpusReadings.counted(_counts(path) for path in files)
    state.save(Path(target), names)


def _counts(path: Path) -> CorpusCounts:
    lower, titles, keys = orjson.loads(path.read_bytes())
    return Counter(lower), Counter(titles), keys


def read_rows(source: Source, start: int, stop: int, target: str, name: str) -> None:
    """Read chunk rows ``start``–``stop`` against the title index (a task), none picked.

    The index is the one :func:`claim_titles` saved in ``target``. The rows' table is saved as
    ``name`` (unpicked) in ``target``, its frequencies in :data:`FREQUENCIES`.
    """
    chunks = chunk_rows(source, start, stop)
    table = read_table(chunks, read_titles(Path(target)), Vocabulary(), fork=False)
    table.save(Path(target), {}, unpicked(name))
    save_frequencies(frequencies_of(table), Path(target), name)


def pick_rows(target: str, name: str, frequencies: str, n: int) -> int:
    """Pick the keywords of one part's rows (a task); save the part and its extractions.

    ``frequencies``: the file of the corpus's (:func:`sum_frequencies`). Returns the
    :func:`ordered_digest` of its rows' ids.
    """
    table = read_part(Path(target), unpicked(name))
    summed = SharedFrequencies.load(Path(frequencies))
    table = pick_keywords(table, max(n, 1), summed.of(table.vocab))
    del summed
    table.save(Path(target), {}, name)
    extractions = ExtractionTable(
        table.ids, table.vocab, table.entities, table.keywords(), table.triples, table.page
    )
    extractions.compact().save(Path(target) / EXTRACTION_PARTS / extracted(name))
    return ordered_digest(table.ids)


def ordered_digest(ids: Iterable[str]) -> int:
    """Return a digest of ids that tells their order too (read a block at a time)."""
    total = 0
    for at, hashes in hashed_blocks(ids):
        weights = np.arange(at + 1, at + 1 + len(hashes), dtype=np.uint64)
        total += int((hashes * weights).sum(dtype=np.uint64))  # wraps
    return total % (1 << 64)


def hashed_blocks(ids: Iterable[str]) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ids' 64-bit hashes a block at a time, with each block's first place.

    The ids may come from a table as it is read: a block of them is held at once.
    """
    stream, at = iter(ids), 0
    while block := list(itertools.islice(stream, DIGEST_BLOCK)):
        yield at, string_hashes(block)
        at += len(block)


DIGEST_BLOCK = 1 << 16


def chunk_rows(source: Source, start: int, stop: int, texts: bool = True) -> list[Chunk]:
    """Read rows ``start``–``stop`` of the committed chunk table, line by line.

    ``texts``: with their texts (else empty, read faster).
    """
    directory, manifest_json = source
    path = Manifest.model_validate_json(manifest_json).path(Path(directory), "chunks")
    try:
        chunks = chunks_in(path, texts, start=start, stop=stop)
    except (OSError, ValueError, TypeError) as err:
        fix = tables_hint(Path(directory))
        raise IndexStateError(f"{path} is missing or damaged: {err}", fix) from err
    if len(chunks) != stop - start:
        raise IndexStateError(
            f"{path} is damaged: it ends before row {stop}", tables_hint(Path(directory))
        )
    return chunks
