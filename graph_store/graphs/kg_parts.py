"""The knowledge graph built in parts, each call holding a share of the chunks' extractions.

:func:`~.knowledge_graph.build_knowledge_graph` holds every chunk's extractions and triples at
once. Here calls (a cluster's tasks: cluster/graph_parts.py) pass files in a scratch folder:

1. :func:`part_triples`, per part of rows (its extractions, in a vocabulary of its own): its
   triples, as ``triples.jsonl`` lines, its chunk ids, and its entities sorted, a line each;
2. :func:`merge_entities` (the driver): the parts' sorted entities merged, a line at a time,
   into ``entities.json`` and each part's entities' places in it;
3. :func:`part_incidence`, per part: its chunks' and its triples' rows of the two incidence
   matrices, over those places;
4. :func:`stitch_graph` (the driver): each file written from the parts, one at a time.

The files are those ``KnowledgeGraph.save`` writes for the same extractions
(tests/unit/graph_store/cluster/test_cluster_graph_parts.py).
"""

from __future__ import annotations

import heapq
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import orjson

from .csr_parts import binary_rows, stitch_csr
from .extraction.table import ExtractionTable
from .knowledge_graph import chunk_mentions, distinct_triples, named_entities, stored_triples


def part_triples(table: ExtractionTable, out: Path, name: str) -> tuple[int, int]:
    """Write one part's triples, chunk ids and sorted entities; return how many of each."""
    spo, rows = distinct_triples(table)
    triples = stored_triples(table.ids, table.vocab.strings, spo, rows)
    lines = (orjson.dumps([t.id, t.subject, t.predicate, t.object, t.chunk_id]) for t in triples)
    (out / f"triples-{name}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    (out / f"chunks-{name}.json").write_bytes(orjson.dumps(table.ids))
    entities = _sorted_entities(table, spo)
    words = table.vocab.strings
    text = b"".join(orjson.dumps(words[i]) + b"\n" for i in entities.tolist())
    (out / f"entities-{name}.txt").write_bytes(text)
    return len(triples), len(entities)


def _sorted_entities(table: ExtractionTable, spo: np.ndarray) -> np.ndarray:
    """Return the ids of the part's entities, in their strings' order."""
    named = named_entities(table, spo)
    words = table.vocab.strings
    return np.array(sorted(named.tolist(), key=words.__getitem__), dtype=np.int64)


def merge_entities(out: Path, names: Sequence[str], counts: Sequence[int], target: Path) -> int:
    """Merge the parts' sorted entities into ``target/entities.json``; return how many.

    Saves each part's entities' places in it (``positions-{name}.npy``): a part's come in its
    own order, so each is written as it comes, and no process holds every part's.
    """
    streams = [_read(out / f"entities-{name}.txt", p) for p, name in enumerate(names)]
    places = [
        _Column(out / f"positions-{name}.npy", count)
        for name, count in zip(names, counts, strict=True)
    ]
    last, place = None, -1
    with (target / "entities.json").open("wb") as written:
        written.write(b"[")
        for entity, part, _ in heapq.merge(*streams):
            if entity != last:
                place, last = place + 1, entity
                written.write((b"," if place else b"") + orjson.dumps(entity))
            places[part].append(place)
        written.write(b"]")
    for column in places:
        column.close()
    return place + 1


class _Column:
    """An int64 .npy file of a known length, written a block of values at a time."""

    BLOCK = 1 << 16

    def __init__(self, path: Path, length: int) -> None:
        self.path, self.length, self.written, self.block = path, length, 0, []
        self.handle = path.open("wb")
        header = {"descr": "<i8", "fortran_order": False, "shape": (length,)}
        np.lib.format.write_array_header_2_0(self.handle, header)

    def append(self, value: int) -> None:
        self.block.append(value)
        if len(self.block) == self.BLOCK:
            self._flush()

    def _flush(self) -> None:
        self.handle.write(np.array(self.block, dtype="<i8").tobytes())
        self.written, self.block = self.written + len(self.block), []

    def close(self) -> None:
        """Write what is left; a part that gave another count than its file says is an error."""
        self._flush()
        self.handle.close()
        if self.written != self.length:
            raise ValueError(f"{self.path}: {self.written} places, not {self.length}")


def _read(path: Path, part: int) -> Iterator[tuple[str, int, int]]:
    """Yield (entity, part, its place in the part) of a part's sorted entities."""
    with path.open("rb") as lines:
        for at, line in enumerate(lines):
            yield orjson.loads(line), part, at


def part_incidence(table: ExtractionTable, out: Path, name: str, entities: int) -> None:
    """Save one part's rows of the triples × entities and chunks × entities matrices."""
    spo, rows = distinct_triples(table)
    position = np.full(len(table.vocab), -1, dtype=np.int64)
    position[_sorted_entities(table, spo)] = np.load(out / f"positions-{name}.npy")
    ends = np.arange(len(spo), dtype=np.int64)
    ends_cols = position[np.concatenate([spo[:, 0], spo[:, 2]])]
    arrays = binary_rows("triple", np.r_[ends, ends], ends_cols, len(spo), entities)
    mentions, named = chunk_mentions(table, spo, rows)
    arrays |= binary_rows("chunk", mentions, position[named], len(table), entities)
    np.savez(out / f"kg-rows-{name}.npz", **arrays)  # its inputs stay: the caller removes them


def stitch_graph(
    out: Path, names: Sequence[str], shape: tuple[int, int, int], target: Path
) -> None:
    """Write the graph's files from the parts' (``shape``: triples, chunks, entities)."""
    triples, chunks, entities = shape
    rows = [out / f"kg-rows-{name}.npz" for name in names]
    stitch_csr(target / "kg-triple-entity.npz", rows, "triple", (triples, entities))
    stitch_csr(target / "kg-chunk-entity.npz", rows, "chunk", (chunks, entities))
    with (target / "triples.jsonl").open("wb") as written:
        for name in names:
            with (out / f"triples-{name}.jsonl").open("rb") as part:
                shutil.copyfileobj(part, written)
    with (target / "kg-chunks.json").open("wb") as written:
        written.write(b"[")
        held = False  # a part before held ids: a comma before the next one's
        for name in names:
            ids = (out / f"chunks-{name}.json").read_bytes()[1:-1]
            if ids:
                written.write((b"," if held else b"") + ids)
                held = True
        written.write(b"]")
    for name in names:
        for path in (f"kg-rows-{name}.npz", f"triples-{name}.jsonl", f"chunks-{name}.json"):
            (out / path).unlink()
