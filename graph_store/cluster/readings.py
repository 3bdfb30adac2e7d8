"""The offline extractor's first reading of a corpus, by tasks on a cluster (``graph build``).

One process reads every chunk (a quarter of a millisecond each, on forked workers that inherit
the whole corpus) and holds the chunks with their texts and the readings at once: 3.7 GB at a
million chunks. Here tasks share the work, each reading a range of rows of the committed chunk
table (which every node mounts at the same path), and the driver holds neither the chunks nor
the readings (every chunk's word counts: gigabytes at millions of chunks) nor their sums:
whatever the corpus, it holds names of files.

1. tasks count their rows' lower-case words, titles and the titles' keys
   (extraction.readings.corpus_counts), each into a file a shard of the extractor's state (by
   the hash of the strings: extraction.state_shards) in the new graph folder (which the nodes
   share too);
2. a task a shard sums its files, gives each of its keys to its title and saves the shard and
   its part of the title index every reading is made against (extraction.title_table); a task
   joins the parts, a part at a time. No task holds more of the state than a shard, the
   driver none of it;
3. tasks read their rows against the title index, each batch of rows asking it only for the
   keys it holds (title_table.SavedTitles), each into a table of its own vocabulary saved in
   the new graph folder, beside its document frequencies by string hash, in shards;
4. a task a shard sums the frequencies, arrays only (a corpus's keywords are scored with its
   own: extraction.frequency_shards);
5. tasks pick their rows' keywords with them, read a shard at a time (extraction.keywords: a
   row's picks depend on the corpus only through them and its size), save their table as a
   part of the extractor's state (reading_table.save_in_parts) and their rows' extractions,
   only the strings those use, in parts (``EXTRACTION_PARTS``, where the graphs' tasks read
   them: cluster/graph_parts.py).

The readings equal one process's (tests/unit/graph_store/cluster/test_cluster_readings.py): a
chunk's reading depends on the corpus only through the title index, its keywords only through the
document frequencies and the corpus's size. A later write loads the parts joined and saves one file
again.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.core.threads import Map, in_process
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.frequency_shards import (
    Frequencies,
    frequencies_in_shards,
    save_shards,
    shard_file,
    sum_shard,
)
from hopgraph.graph_store.graphs.extraction.keywords import document_frequencies, pick_keywords
from hopgraph.graph_store.graphs.extraction.reading_table import (
    ReadingTable,
    part_name,
    read_part,
    save_in_parts,
)
from hopgraph.graph_store.graphs.extraction.readings import corpus_counts, read_table
from hopgraph.graph_store.graphs.extraction.state_shards import (
    SHARDS_KEY,
    STATE_SHARDS,
    StateShard,
    merged,
    remove_tables,
    save_shard,
    split_counts,
    table_stems,
)
from hopgraph.graph_store.graphs.extraction.table import (
    EXTRACTION_PARTS,
    ExtractionTable,
    Vocabulary,
)
from hopgraph.graph_store.graphs.extraction.title_table import (
    TITLES,
    SavedTitles,
    join_tables,
    save_longest,
    string_hashes,
)
from hopgraph.graph_store.index.graph_build import CorpusReader
from hopgraph.graph_store.stores.chunk_table import chunks_in, scan_ids
from hopgraph.graph_store.stores.manifest import Manifest, rebuild_hint, tables_hint

from .tasks import Peaks, ray_map, task_count

Source = tuple[str, str]
"""The chunk table a call reads: (index folder, the committed manifest as JSON)."""
FREQUENCIES = "frequencies"
"""The folder in the new graph folder where the reading tasks leave their frequencies, and one
task a shard their sum (:data:`SUMMED`)."""
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
    shards = len(names)  # of the state and of the frequencies: one a part
    calls = [(*call, str(target), name, shards) for call, name in zip(ranges, names, strict=True)]
    (target / COUNTS).mkdir()
    (target / STATE_SHARDS).mkdir()
    run(count_rows, calls)
    longest = run(claim_titles, [(str(target), names, s) for s in range(shards)])
    run(join_titles, [(str(target), names, shards, max(longest, default=0))])
    shutil.rmtree(target / COUNTS)  # read: gone (not by the task, which may run again)
    remove_tables(target, shards)
    (target / FREQUENCIES).mkdir()
    run(read_rows, calls)
    frequencies = sum_frequencies_of(names, target, run)
    (target / EXTRACTION_PARTS).mkdir()
    digests = run(pick_rows, [(str(target), name, frequencies, n, shards) for name in names])
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


def frequencies_of(table: ReadingTable) -> Frequencies:
    """Return a table's document frequencies by string hash, for the strings its rows hold."""
    entity, word = document_frequencies(table)
    held = np.flatnonzero((entity > 0) | (word > 0))
    strings = table.vocab.strings
    return string_hashes([strings[i] for i in held.tolist()]), entity[held], word[held]


def save_frequencies(frequencies: Frequencies, target: Path, name: str, shards: int) -> None:
    """Save one part's frequencies as ``name``'s in ``target``'s :data:`FREQUENCIES`.

    In ``shards`` files (extraction.frequency_shards), one a task of :func:`sum_frequencies_of`.
    """
    save_shards(frequencies, target / FREQUENCIES, name, shards)


def sum_frequencies_of(names: Sequence[str], target: Path, run: Map) -> str:
    """Have a task a shard sum the parts' saved frequencies; return where the sums are.

    As many shards as parts: pass the result and that count to :func:`pick_rows`.
    """
    folder = target / FREQUENCIES
    calls = [
        ([str(shard_file(folder, name, s)) for name in names], str(shard_file(folder, SUMMED, s)))
        for s in range(len(names))
    ]
    run(sum_frequencies, calls)
    return str(folder)


def sum_frequencies(files: list[str], to: str) -> None:
    """Sum one shard of the frequencies saved in ``files`` and save it to ``to`` (a task)."""
    sum_shard([Path(f) for f in files], Path(to))


def unpicked(name: str) -> str:
    """Return the file of a part's table as read, before its keywords are picked."""
    return name.replace(".npz", "-unpicked.npz")


def extracted(name: str) -> str:
    """Return the file of a part's extractions (its rows', in a vocabulary of their own)."""
    return name.replace(".npz", "-extractions.npz")


COUNTS = "title-counts"
"""The folder in the new graph folder where the counting tasks leave their counts."""


def count_rows(source: Source, start: int, stop: int, target: str, name: str, shards: int) -> None:
    """Count what a first reading needs of chunk rows ``start``–``stop`` (a task).

    Saved as ``name``'s counts in ``target``'s :data:`COUNTS`, a file a shard of the state
    (extraction.state_shards), for :func:`claim_titles`.
    """
    counts = corpus_counts(chunk_rows(source, start, stop))
    for s, shard in enumerate(split_counts(*counts, shards)):
        shard.save(_counts_file(target, name, s))


def _counts_file(target: str, name: str, shard: int) -> Path:
    return Path(target) / COUNTS / name.replace(".npz", f".{shard:03d}.json")


def claim_titles(target: str, names: list[str], shard: int) -> int:
    """Sum one shard of the parts' counts and give its keys to their titles (a task).

    Saves the shard of the state and its part of the title index the readings are made
    against (extraction.title_table) in ``target``; returns its longest key's words.
    """
    counted = (StateShard.load(_counts_file(target, name, shard)) for name in names)
    return save_shard(merged(counted), Path(target), shard)


def join_titles(target: str, names: list[str], shards: int, longest: int) -> None:
    """Join the shards' parts of the title index and save the state's parts ``names`` (a task).

    ``longest``: the most words of a key, over the ``shards`` shards.
    """
    directory = Path(target)
    stems = [table_stems(directory, s) for s in range(shards)]
    join_tables([aliases for aliases, _ in stems], directory / f"{TITLES}-aliases")
    join_tables([common for _, common in stems], directory / f"{TITLES}-common")
    save_longest(directory, longest)
    save_in_parts(directory, names, {SHARDS_KEY: shards})


def read_rows(source: Source, start: int, stop: int, target: str, name: str, shards: int) -> None:
    """Read chunk rows ``start``–``stop`` against the title index (a task), none picked.

    The index is the one :func:`claim_titles` saved in ``target``, asked for the keys each
    batch of rows holds (title_table.SavedTitles). The rows' table is saved as ``name``
    (unpicked) in ``target``, its frequencies in ``shards`` files in :data:`FREQUENCIES`.
    """
    chunks = chunk_rows(source, start, stop)
    table = read_table(chunks, SavedTitles(Path(target)), Vocabulary(), fork=False)
    table.save(Path(target), {}, unpicked(name))
    save_frequencies(frequencies_of(table), Path(target), name, shards)


def pick_rows(target: str, name: str, frequencies: str, n: int, shards: int) -> int:
    """Pick the keywords of one part's rows (a task); save the part and its extractions.

    ``frequencies``: the folder of the corpus's, summed in ``shards`` shards
    (:func:`sum_frequencies_of`), read a shard at a time. Returns the :func:`ordered_digest` of
    its rows' ids.
    """
    table = read_part(Path(target), unpicked(name))
    found = frequencies_in_shards(Path(frequencies), SUMMED, shards, table.vocab)
    table = pick_keywords(table, max(n, 1), found)
    del found
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
