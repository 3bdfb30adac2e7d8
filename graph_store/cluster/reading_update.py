"""A write's update of the offline extractor's state, by tasks over its parts (``add --cluster``).

One process's write loads the whole corpus's readings, joins them with the chunks it reads
again, reorders and picks them: 1.3 GB loaded and a 4.4 GB peak at a million chunks, the write
driver's largest step (evals/results/scale/cluster-writes-1m-before.json). A graph build on a
cluster saves the readings in parts (cluster/readings.py); here tasks bring each part up to
date and the driver holds none of them:

1. the driver loads the state's counts and keys only (``CorpusReadings.load_counts``) and counts
   the change's words and titles (``CorpusReadings.shift``): the keys whose links may have
   changed, and the title index new readings are made against, sent to the tasks once;
2. a task per part drops its rows of removed or replaced chunks, finds its rows that may contain
   a changed key (readings.may_contain, the texts read from the previous generation's chunk
   table), reads those again with the added chunks given to the part (by a hash of their ids),
   saves the part unpicked and sends back its rows' count and digest before the change and its
   document frequencies by string hash;
3. the driver checks that the parts held the previous corpus and sums the frequencies;
4. tasks pick their parts' keywords (cluster/readings.pick_rows, as a build's);
5. the driver saves the state in parts and joins the extractions, in the corpus's order.

The result equals one process's update (tests/unit/graph_store/cluster/test_reading_update.py):
a chunk's reading depends on the corpus only through the title index, its keywords only through
the document frequencies and the corpus's size.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.reading_table import ReadingTable, read_part
from hopgraph.graph_store.graphs.extraction.readings import (
    CorpusReadings,
    may_contain,
    read_table,
)
from hopgraph.graph_store.graphs.extraction.table import EXTRACTION_PARTS, ExtractionTable
from hopgraph.graph_store.graphs.extraction.title_table import key_hash
from hopgraph.graph_store.index.graph_build import ReadingUpdate
from hopgraph.graph_store.stores.chunk_table import open_chunks
from hopgraph.graph_store.stores.manifest import Manifest, graphs_hint

from .readings import (
    Frequencies,
    SharedTitles,
    Source,
    frequencies_of,
    give_back_freed,
    part_extractions,
    pick_rows,
    remove_table,
    string_hashes,
    summed,
    unpicked,
)
from .tasks import Map, Peaks, in_process, ray_map

Change = tuple[frozenset[str], list[str]]
"""What every part's task is told of a write: the ids whose rows go (removed or read again as
added), and the keys whose links may have changed."""


def reading_updated_on(ray: ModuleType, peaks: Peaks | None = None) -> ReadingUpdate:
    """Return how a write updates its readings on the joined cluster: a task per saved part.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    return reading_updated_by(ray_map(ray, peaks))


def reading_updated_by(run: Map = in_process) -> ReadingUpdate:
    """Return how a write updates its readings by ``run``'s calls (see the module doc)."""

    def update(
        directory: Path,
        previous: Manifest,
        old_dir: Path,
        change: tuple[Sequence[Chunk], Sequence[Chunk], Sequence[Chunk]],
        chunks: Sequence[Chunk],
        target: Path,
    ) -> ExtractionTable | None:
        before, removed, added = change
        found = CorpusReadings.load_counts(old_dir, before)
        if found is None:
            return None
        state, names = found
        keys = sorted(state.shift(removed, added))
        gone = frozenset(c.id for c in removed) | frozenset(c.id for c in added)
        given = _given(added, len(names))
        source = (str(directory), previous.model_dump_json())
        titles = SharedTitles(state.title_index())
        calls = [
            (source, str(old_dir), name, (gone, keys), titles, part, str(target))
            for name, part in zip(names, given, strict=True)
        ]
        results = run(update_part, calls)
        _check_parts(directory, before, [(rows, digest) for rows, digest, _ in results])
        frequencies = summed([part for _, _, part in results])
        del results
        (target / EXTRACTION_PARTS).mkdir()
        run(pick_rows, [(str(target), name, frequencies, len(chunks)) for name in names])
        for name in names:
            remove_table(target / unpicked(name))
        state.save(target, names)
        del state, titles, frequencies
        give_back_freed()
        joined = ExtractionTable.joined(part_extractions(target, names))
        shutil.rmtree(target / EXTRACTION_PARTS)  # parts of ids by hash, not of rows: no edges
        return in_order(joined, chunks, directory)

    return update


def update_part(
    source: Source,
    old_dir: str,
    name: str,
    change: Change,
    titles: SharedTitles,
    added: list[Chunk],
    target: str,
) -> tuple[int, int, Frequencies]:
    """Bring one part of the saved readings up to date (a task; see the module doc).

    Saves it unpicked as ``name`` in ``target``; returns its rows' count and digest before the
    change and its document frequencies by string hash.
    """
    gone, keys = change
    table = read_part(Path(old_dir), name)
    held = (table.rows, digest(table.ids))
    directory, manifest_json = source
    texts = open_chunks(Path(directory), Manifest.model_validate_json(manifest_json))
    stale = may_contain(table, set(keys), texts, gone)
    del texts
    dropped = gone | {c.id for c in stale}
    kept = np.array([i for i, cid in enumerate(table.ids) if cid not in dropped], np.int64)
    fresh = read_table([*stale, *added], titles.index, table.vocab, fork=False)
    table = ReadingTable.concat([table.take(kept), fresh])
    table.save(Path(target), {}, unpicked(name))
    return (*held, frequencies_of(table))


def _given(added: Sequence[Chunk], parts: int) -> list[list[Chunk]]:
    """Give each added chunk to a part, by a hash of its id (the same on every machine)."""
    given: list[list[Chunk]] = [[] for _ in range(parts)]
    for chunk in added:
        given[key_hash(chunk.id) % parts].append(chunk)
    return given


def digest(ids: Sequence[str]) -> int:
    """Return a digest of a set of ids, whatever their order (a sum of their hashes)."""
    return int(string_hashes(ids).sum(dtype=np.uint64))  # wraps: a sum modulo 2**64


def _check_parts(directory: Path, before: Sequence[Chunk], held: list[tuple[int, int]]) -> None:
    """Refuse parts that did not hold the previous generation's chunks (damage, or a stray)."""
    rows = sum(n for n, _ in held)
    same = sum(d for _, d in held) % (1 << 64) == digest([c.id for c in before])
    if rows == len(before) and same:
        return
    raise IndexStateError(
        f"the saved readings of {directory}'s graphs hold other chunks than its table "
        f"({rows} rows, the table {len(before)})",
        graphs_hint(directory),
    )


def in_order(joined: ExtractionTable, chunks: Sequence[Chunk], directory: Path) -> ExtractionTable:
    """Return the parts' joined extractions in the order of ``chunks``.

    Matched by the ids' 64-bit hashes, sorted: a dictionary of a million ids took 130 MB of
    the driver at its peak. The result's ids are compared with the chunks' (a collision, or
    tasks that gave other chunks, is an error).
    """
    ids = [c.id for c in chunks]
    have, want = string_hashes(joined.ids), string_hashes(ids)
    by = np.argsort(have, kind="stable")
    at = np.minimum(np.searchsorted(have[by], want), max(len(have) - 1, 0))
    taken = joined.take(by[at]) if len(have) == len(want) and len(have) else joined
    if taken.ids != ids:
        raise IndexStateError(
            f"the readings' tasks gave {len(joined.ids)} chunks' extractions, not the "
            f"{len(chunks)} of the write",
            graphs_hint(directory),
        )
    return taken
