"""A write's update of the offline extractor's state, by tasks over its parts (``add --cluster``).

One process's write loads the whole corpus's readings, joins them with the chunks it reads
again, reorders and picks them: 1.3 GB loaded and a 4.4 GB peak at a million chunks, the write
driver's largest step (evals/results/scale/cluster-writes-1m-before.json). A graph build on a
cluster saves the readings in parts (cluster/readings.py); here tasks bring each part up to
date and the driver holds none of them:

1. the driver counts the change's words and titles into the state's shards (small as the
   change: extraction.state_shards); a task a shard counts its part into the saved shard,
   saves it in the new graph folder with its part of the title index new readings are made
   against, and sends back the keys whose links may have changed; a task joins the parts of
   the index. No task holds more of the state than a shard (a state an older hopgraph saved
   whole is cut into shards first, by one task);
2. a task per part drops its rows of removed or replaced chunks, finds its rows that may contain
   a changed key (readings.may_contain, the texts read from the previous generation's chunk
   table), reads those again with the added chunks given to the part (by a hash of their ids),
   saves the part unpicked with its document frequencies by string hash, and sends back its
   rows' count and digest before the change;
3. the driver checks that the parts held the previous corpus; a task a shard sums the
   frequencies (extraction.frequency_shards);
4. tasks pick their parts' keywords (cluster/readings.pick_rows, as a build's);
5. tasks cut the extractions into parts of rows (:func:`in_rows`): what a fresh reading
   leaves, from which tasks make both graphs (cluster/graph_parts.py), the driver joining none
   of them.

The result equals one process's update (tests/unit/graph_store/cluster/test_reading_update.py):
a chunk's reading depends on the corpus only through the title index, its keywords only through
the document frequencies and the corpus's size.
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
from hopgraph.core.id_lists import load_ids, save_ids
from hopgraph.core.threads import Map, in_process
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.offline import title_keys
from hopgraph.graph_store.graphs.extraction.reading_table import (
    ReadingTable,
    read_part,
    saved_parts,
)
from hopgraph.graph_store.graphs.extraction.readings import (
    CorpusReadings,
    candidate_ids,
    may_contain,
    read_table,
)
from hopgraph.graph_store.graphs.extraction.state_shards import (
    SHARDS_KEY,
    STATE_SHARDS,
    KeyTitles,
    StateShard,
    change_shards,
    remove_tables,
    save_shard,
    shard_path,
    split_counts,
)
from hopgraph.graph_store.graphs.extraction.table import EXTRACTION_PARTS, ExtractionTable
from hopgraph.graph_store.graphs.extraction.title_table import (
    SavedTitles,
    key_hash,
    string_hashes,
)
from hopgraph.graph_store.index.graph_build import Chunks, ReadingUpdate
from hopgraph.graph_store.stores.chunk_table import chunks_with_ids, ids_of, scan_chunks
from hopgraph.graph_store.stores.manifest import Manifest, graphs_hint

from .readings import (
    FREQUENCIES,
    Source,
    extracted,
    frequencies_of,
    hashed_blocks,
    join_titles,
    ordered_digest,
    pick_rows,
    remove_table,
    save_frequencies,
    sum_frequencies_of,
    unpicked,
)
from .tasks import Peaks, ray_map

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
        change: tuple[Chunks, Sequence[Chunk], Sequence[Chunk]],
        chunks: Chunks,
        target: Path,
    ) -> bool:
        before, removed, added = change
        source = (str(directory), previous.model_dump_json())
        state = run(state_parts, [(str(old_dir),)])[0]
        if state is None:
            return False  # one process's state: the driver updates it
        names = state[0]
        keys = _shifted(source, old_dir, (removed, added), state, target, run)
        gone = frozenset(c.id for c in removed) | frozenset(c.id for c in added)
        given = _given(added, len(names))
        calls = [
            (source, str(old_dir), name, (gone, keys), part, str(target), len(names))
            for name, part in zip(names, given, strict=True)
        ]
        (target / FREQUENCIES).mkdir()
        _check_parts(directory, before, run(update_part, calls))
        frequencies = sum_frequencies_of(names, target, run)
        (target / EXTRACTION_PARTS).mkdir()
        shards = len(names)  # of the frequencies, as update_part saved them
        run(pick_rows, [(str(target), name, frequencies, len(chunks), shards) for name in names])
        for name in names:
            remove_table(target / unpicked(name))
        shutil.rmtree(target / FREQUENCIES)
        in_rows(target, names, (ids_of(chunks), len(chunks)), directory, run)
        return True

    return update


def _shifted(
    source: Source,
    old_dir: Path,
    change: tuple[Sequence[Chunk], Sequence[Chunk]],
    state: tuple[list[str], int | None],
    target: Path,
    run: Map,
) -> list[str]:
    """Count a change into the state's shards, a task a shard; return the keys it may relink.

    The new state and its title index are saved in ``target``. ``state``: the parts' names and
    the shards' count (``None``: a state an older hopgraph saved whole, cut into shards first).
    """
    names, shards = state
    (target / STATE_SHARDS).mkdir()
    state_dir = old_dir
    if shards is None:
        shards, state_dir = len(names), target / CONVERTED
        (state_dir / STATE_SHARDS).mkdir(parents=True)
        run(shard_state, [(source, str(old_dir), str(state_dir), shards)])
    deltas = change_shards(*change, shards)
    shifted = run(shift_state, [(str(state_dir), s, d, str(target)) for s, d in enumerate(deltas)])
    run(join_titles, [(str(target), names, shards, max(longest for _, longest in shifted))])
    remove_tables(target, shards)
    shutil.rmtree(target / CONVERTED, ignore_errors=True)
    return sorted({key for keys, _ in shifted for key in keys})


def state_parts(old_dir: str) -> tuple[list[str], int | None] | None:
    """Return the parts' names and shards' count of the state saved in ``old_dir`` (a task).

    ``None`` for a state not saved in parts (one process's: read whole, it is the corpus's
    size); a count of ``None`` for parts an older hopgraph saved with the state whole.
    """
    found = saved_parts(Path(old_dir))
    return None if found is None else (found[0], found[1].get(SHARDS_KEY))


CONVERTED = "state-converted"
"""Where a write leaves, for its shift tasks, a whole saved state cut into shards."""


def shard_state(source: Source, old_dir: str, to: str, shards: int) -> None:
    """Cut a state saved whole (by an older hopgraph) into ``shards`` shards in ``to`` (a task).

    It holds the whole state once, as that hopgraph's writes did. ``source``: the previous
    generation's chunk table (its titles are counted).
    """
    directory, manifest_json = source
    corpus = scan_chunks(Path(directory), Manifest.model_validate_json(manifest_json))
    found = CorpusReadings.load_counts(Path(old_dir), corpus)
    if found is None:
        raise IndexStateError(
            f"{old_dir} holds no readings saved in parts", graphs_hint(Path(directory))
        )
    state = found[0]
    keys = {title: title_keys(title) for title in state.titles}
    for s, shard in enumerate(split_counts(state.lower, state.titles, keys, shards)):
        shard.save(shard_path(Path(to), s))


def shift_state(
    state_dir: str, shard: int, change: tuple[dict[str, int], KeyTitles], target: str
) -> tuple[list[str], int]:
    """Count a change into one shard of the state and save it in ``target`` (a task).

    ``change``: the shard's part of it (state_shards.change_shards). Returns the keys whose
    links may have changed and the shard's longest key's words.
    """
    state = StateShard.load(shard_path(Path(state_dir), shard))
    keys = state.shift(*change)
    return sorted(keys), save_shard(state, Path(target), shard)


def update_part(
    source: Source,
    old_dir: str,
    name: str,
    change: Change,
    added: list[Chunk],
    target: str,
    shards: int,
) -> tuple[int, int]:
    """Bring one part of the saved readings up to date (a task; see the module doc).

    Saves it unpicked as ``name`` in ``target``, its document frequencies by string hash beside
    it in ``shards`` files (readings.save_frequencies); returns its rows' count and digest
    before the change.
    """
    gone, keys = change
    table = read_part(Path(old_dir), name)
    held = (table.rows, digest(table.ids))
    directory, manifest_json = source
    manifest = Manifest.model_validate_json(manifest_json)
    # the texts of the rows the arrays cannot clear, read in one pass: no table of every id
    texts = chunks_with_ids(Path(directory), manifest, candidate_ids(table, keys) - gone)
    stale = may_contain(table, set(keys), texts, gone)
    del texts
    dropped = gone | {c.id for c in stale}
    kept = np.array([i for i, cid in enumerate(table.ids) if cid not in dropped], np.int64)
    titles = SavedTitles(Path(target))  # shift_state saved it
    fresh = read_table([*stale, *added], titles, table.vocab, fork=False)
    table = ReadingTable.concat([table.take(kept), fresh])
    table.save(Path(target), {}, unpicked(name))
    save_frequencies(frequencies_of(table), Path(target), name, shards)
    return held


def _given(added: Sequence[Chunk], parts: int) -> list[list[Chunk]]:
    """Give each added chunk to a part, by a hash of its id (the same on every machine)."""
    given: list[list[Chunk]] = [[] for _ in range(parts)]
    for chunk in added:
        given[key_hash(chunk.id) % parts].append(chunk)
    return given


def digest(ids: Iterable[str]) -> int:
    """Return a digest of a set of ids, whatever their order (a sum of their hashes)."""
    total = sum(int(hashes.sum(dtype=np.uint64)) for _, hashes in hashed_blocks(ids))
    return total % (1 << 64)


def _check_parts(directory: Path, before: Chunks, held: list[tuple[int, int]]) -> None:
    """Refuse parts that did not hold the previous generation's chunks (damage, or a stray)."""
    rows = sum(n for n, _ in held)
    same = sum(d for _, d in held) % (1 << 64) == digest(ids_of(before))
    if rows == len(before) and same:
        return
    raise IndexStateError(
        f"the saved readings of {directory}'s graphs hold other chunks than its table "
        f"({rows} rows, the table {len(before)})",
        graphs_hint(directory),
    )


def in_rows(target: Path, names: Sequence[str], ids: tuple[Iterable[str], int], directory: Path,
            run: Map) -> None:  # fmt: skip
    """Cut the parts' extractions (parts of ids, by hash) into parts of rows, in row order.

    What a fresh reading leaves (``EXTRACTION_PARTS``), so that tasks make the graphs
    (cluster/graph_parts.py). Each part is split by the parts of rows its chunks fall in, each
    part of rows joined from its pieces. ``ids``: the write's chunk ids in row order and their
    count, streamed into a file from which a task makes each id's 64-bit hash and row
    (:class:`SharedRows`): the driver holds a part of rows' ids at a time, for its digest.
    """
    stream, n = ids
    parts, ids_file = len(names), target / EXTRACTION_PARTS / WRITE_IDS
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)
    ranges, expected = list(pairwise(bounds.tolist())), []

    def digested(stream: Iterator[str]) -> Iterator[str]:
        for a, b in ranges:
            mine = list(itertools.islice(stream, b - a))
            expected.append(ordered_digest(mine))
            yield from mine

    save_ids(digested(iter(stream)), ids_file)
    rows_file = str(target / EXTRACTION_PARTS / ROWS_FILE)
    if run(rows_of, [(str(ids_file), rows_file)]) != [n]:
        raise IndexStateError(f"{ids_file} holds other than the write's {n} chunk ids")
    held = run(split_part, [(str(target), name, rows_file, bounds) for name in names])
    if sum(held) != n:
        raise IndexStateError(
            f"the readings' tasks gave {sum(held)} chunks' extractions, not the {n} of "
            "the write", graphs_hint(directory),
        )  # fmt: skip
    digests = run(join_pieces, [(str(target), list(names), r) for r in range(parts)])
    folder = target / EXTRACTION_PARTS  # the tasks' inputs, gone once every task has run
    for name in names:
        remove_table(folder / extracted(name))
        for r in range(parts):
            remove_table(folder / piece(name, r))
            (folder / piece(name, r)).with_suffix(".rows.npy").unlink()
    for name in (ids_file, Path(rows_file)):
        name.unlink()
    if digests != expected:
        raise IndexStateError(
            "the readings' tasks gave other chunks' extractions than the write's",
            graphs_hint(directory),
        )
    listed = [(row_part(r), a, b) for r, (a, b) in enumerate(ranges)]
    (target / EXTRACTION_PARTS / "parts.json").write_text(json.dumps(listed), encoding="utf-8")


WRITE_IDS, ROWS_FILE = "write-ids.json", "write-rows.npz"
"""The write's chunk ids (a JSON list, streamed out) and :class:`SharedRows` made of them."""


def rows_of(ids: str, to: str) -> int:
    """Save each id's hash and row (:class:`SharedRows`) of the ids file ``ids`` (a task).

    Returns how many ids it holds.
    """
    # hashed as read, a block at a time: no list of every id as Python strings
    blocks = [hashes for _, hashes in hashed_blocks(load_ids(Path(ids)))]
    hashes = np.concatenate(blocks) if blocks else np.zeros(0, np.uint64)
    del blocks
    order = np.argsort(hashes, kind="stable")
    with open(to, "wb") as file:  # np.savez would add ".npz" to a name without it
        np.savez(file, hashes=hashes[order], rows=order.astype(np.int64))
    return len(hashes)


class SharedRows:
    """Each chunk id's 64-bit hash (sorted) and its row (saved by :func:`rows_of`)."""

    def __init__(self, hashes: np.ndarray, rows: np.ndarray) -> None:
        self.hashes, self.rows = hashes, rows

    @classmethod
    def load(cls, path: Path) -> SharedRows:
        """Read what :func:`rows_of` saved."""
        with np.load(path) as saved:
            return cls(saved["hashes"], saved["rows"])

    def of(self, ids: Sequence[str]) -> np.ndarray:
        """Return the rows of ``ids`` (-1 for an id the write does not hold)."""
        wanted = string_hashes(ids)
        at = np.minimum(np.searchsorted(self.hashes, wanted), max(len(self.hashes) - 1, 0))
        found = self.hashes[at] == wanted if len(self.hashes) else np.zeros(len(ids), bool)
        return np.where(found, self.rows[at] if len(self.rows) else -1, -1)


def row_part(number: int) -> str:
    """Return the file of the extractions of a write's part of rows ``number``."""
    return f"rows-{number:03d}-extractions.npz"


def split_part(target: str, name: str, rows: str, bounds: np.ndarray) -> int:
    """Split one part's extractions by the parts of rows of its chunks (a task).

    ``rows``: the file of :class:`SharedRows`. Each piece is saved in row order with its rows.
    Returns how many rows it held (-1 rows: chunks the write does not hold, which the
    driver's check refuses).
    """
    folder = Path(target) / EXTRACTION_PARTS
    table = ExtractionTable.load(folder / extracted(name))
    found = SharedRows.load(Path(rows)).of(table.ids)
    if (found < 0).any():
        return -len(table.ids)  # summed, never the write's count
    order = np.argsort(found, kind="stable")  # by row: each part of rows' piece in row order
    cuts = np.searchsorted(found[order], bounds[1:-1])
    for r, mine in enumerate(np.split(order, cuts)):
        table.take(mine).compact().save(folder / piece(name, r))
        np.save((folder / piece(name, r)).with_suffix(".rows.npy"), found[mine])
    return len(table.ids)


def piece(name: str, number: int) -> str:
    """Return the file of the rows of part ``name`` that fall in part of rows ``number``."""
    return f"piece-{Path(name).stem}-{number}.npz"


def join_pieces(target: str, names: list[str], number: int) -> int:
    """Join the pieces of one part of rows, in row order (a task); return its ids' digest."""
    folder = Path(target) / EXTRACTION_PARTS
    pieces = [folder / piece(name, number) for name in names]
    rows = np.concatenate([np.load(p.with_suffix(".rows.npy")) for p in pieces])
    joined = ExtractionTable.joined(ExtractionTable.load(p) for p in pieces)
    joined = joined.take(np.argsort(rows, kind="stable")).compact()
    joined.save(folder / row_part(number))  # its inputs stay: the driver removes them
    return ordered_digest(joined.ids)
