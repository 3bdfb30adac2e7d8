"""Chroma's rows as one collection per partition (what a cluster's build writes).

The index here is built in one process and its rows then written again as partitions, the way
graph_store/cluster/partitions.py writes them (one collection a partition, in its own folder), so
that every later step (writes, recovery, check, repair, reading) is tested without Ray; the
cluster's own build is tests/integration/test_cluster.py's.
"""

import json
import shutil

import numpy as np
import pytest

from hopgraph.cli import main
from hopgraph.graph_store import Index, add_documents, delete_documents
from hopgraph.graph_store.documents.schema import Document
from hopgraph.graph_store.index import writes
from hopgraph.graph_store.index.generations import (
    CHROMA_DIR,
    Generation,
    drop_collection,
    passages_location,
    recover,
)
from hopgraph.graph_store.index.lock import write_lock
from hopgraph.graph_store.stores.chroma_parts import PartitionedStore, open_store
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.doc_table import read_documents
from hopgraph.graph_store.stores.manifest import read_manifest
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation, ChromaVectorStore
from hopgraph.graph_store.stores.vector_table import VectorTable
from tests.unit.graph_store.index.test_index import ALL, build

PARTS = 3


def partition(index, parts=PARTS):
    """Write the index's Chroma rows again as ``parts`` collections, as a new generation.

    On the index's Chroma server when it has one, else in a folder of their own."""
    with write_lock(index):
        old = read_manifest(index)
        chunks = read_chunks(index, old)
        vectors = VectorTable.load(index, old.vectors).matrix([c.id for c in chunks])
        fields = writes.document_fields(read_documents(index, old, chunks), chunks)
        with Generation(index, old) as gen:
            manifest = writes.successor_manifest(old, chunks)
            name, base = f"{old.collection}-parted", passages_location(index, old)
            folder = None if base.url else index / f"{CHROMA_DIR}-{gen.folder.name}"
            location = ChromaLocation(name, folder, base.url, parts)
            gen.journal(location)
            for n, rows in enumerate(np.array_split(np.arange(len(chunks)), parts)):
                store = ChromaVectorStore(location.part(n), create=True)
                store.upsert([chunks[i] for i in rows], vectors[rows], gen.number, fields)
                store.close()
            manifest.collection, manifest.chroma_parts = name, parts
            manifest.chroma_dir = location.path.name if location.path else None
            manifest.rows = {}
            gen.commit(manifest)
        drop_collection(passages_location(index, old))
    return location


@pytest.fixture(scope="module")
def parted(tmp_path_factory):
    index = tmp_path_factory.mktemp("parted") / "idx"
    build(index, ALL)
    partition(index)
    return index


def copy(parted, tmp_path):
    index = tmp_path / "idx"
    shutil.copytree(parted, index)
    return index


def rows_by_part(index):
    location = passages_location(index, read_manifest(index))
    found = []
    for part in location.each():
        store = ChromaVectorStore(part)
        found.append({row for ids, _, _, _ in store.records() for row in ids})
        store.close()
    return found


def test_each_partition_is_a_collection_in_a_folder_of_its_own(parted, tmp_path):
    parted = copy(parted, tmp_path)  # opening a store changes its files (chroma_seal.py)
    location = passages_location(parted, read_manifest(parted))
    assert location.parts == PARTS
    assert [p.path.name for p in location.each()] == ["p000", "p001", "p002"]
    assert len({p.collection for p in location.each()}) == PARTS
    held = rows_by_part(parted)
    assert all(held) and sum(map(len, held)) == len(set().union(*held))
    with Index.open(parted) as idx:
        assert idx.vectors.count() == len(idx.chunks)
        assert set().union(*held) == set(idx.chunks)


def test_the_index_answers_and_checks_sound(parted, tmp_path, capsys):
    assert main(["check", "--index", str(parted)]) == 0, capsys.readouterr().err
    parted = copy(parted, tmp_path)
    with Index.open(parted) as idx:
        question = idx.embed_query("Where was Larry Alcala educated?")
        merged = idx.vectors.query(question, 4)
        best = sorted(
            (pair for p in passages_location(parted, idx.manifest).each()
             for pair in _query(p, question)),
            key=lambda pair: -pair[1],
        )[:4]  # fmt: skip
        assert [c for c, _ in merged] == [c for c, _ in best]


def _query(location, vector):
    store = ChromaVectorStore(location)
    try:
        return store.query(vector, 4)
    finally:
        store.close()


def test_a_write_adds_to_the_last_partition_and_deletes_from_every_one(parted, tmp_path, capsys):
    index = copy(parted, tmp_path)
    new = Document("d9", "Lake Sakakawea", "Lake Sakakawea is a reservoir in North Dakota.")
    add_documents(index, [new], show_progress=False)
    *_, last = rows_by_part(index)
    assert "d9" in last
    removed = sorted({c.split("#")[0] for part in rows_by_part(index)[:2] for c in part})[:2]
    delete_documents(index, removed)
    assert main(["check", "--index", str(index)]) == 0, capsys.readouterr().err  # sealed
    left = set().union(*rows_by_part(index))
    assert not {row for row in left if row.split("#")[0] in removed}
    with Index.open(index) as idx:
        assert left == set(idx.chunks)


def test_a_write_given_store_calls_opens_no_chroma_itself(parted, tmp_path, monkeypatch):
    from hopgraph.core.threads import in_process
    from hopgraph.graph_store.index import generations
    from hopgraph.graph_store.index.graph_build import GraphTasks
    from hopgraph.graph_store.stores import chroma_parts

    index = copy(parted, tmp_path)
    calls, inside = [], [False]

    def tasks_here(function, arguments):  # as a cluster's tasks: elsewhere, recorded
        calls.append((function.__name__, len(arguments)))
        inside[0] = True
        try:
            return in_process(function, arguments)
        finally:
            inside[0] = False

    def only_in_a_task(opened):
        def opening(*args, **kwargs):
            assert inside[0], "the writing process opened Chroma itself"
            return opened(*args, **kwargs)

        return opening

    monkeypatch.setattr(chroma_parts, "open_store", only_in_a_task(chroma_parts.open_store))
    monkeypatch.setattr(generations, "open_store", only_in_a_task(generations.open_store))
    tasks = GraphTasks(stores=tasks_here)
    new = Document("d9", "Lake Sakakawea", "Lake Sakakawea is a reservoir in North Dakota.")
    add_documents(index, [new], show_progress=False, tasks=tasks)
    assert calls == [("upsert_rows", 1)]
    assert "d9" in rows_by_part(index)[-1]
    delete_documents(index, ["d9"], tasks)
    assert calls[1:] == [("delete_rows", PARTS)]  # a call a partition
    assert "d9" not in set().union(*rows_by_part(index))


def test_a_killed_write_leaves_no_row_in_any_partition(parted, tmp_path):
    index = copy(parted, tmp_path)
    committed = read_manifest(index)
    location = passages_location(index, committed)
    (index / f"g{committed.generation + 1:06d}").mkdir()  # a write began, then was killed
    store = ChromaVectorStore(location.part(1))
    chunk = read_chunks(index, committed)[0]
    stray = np.ones((1, int(committed.embedder["dimension"])), np.float32)
    store.upsert_records(["stray#0"], stray, [chunk.text],
                         [{"generation": committed.generation + 1}])  # fmt: skip
    store.close()
    with write_lock(index):
        recover(index, committed)
    assert "stray#0" not in set().union(*rows_by_part(index))


def test_a_build_that_stopped_before_its_commit_drops_every_partition(parted, tmp_path):
    index = copy(parted, tmp_path)
    committed = read_manifest(index)
    location = ChromaLocation("half-built", index / "chroma-g000099", parts=PARTS)
    with write_lock(index):
        gen = Generation(index, committed)
        gen.__enter__()
        gen.journal(location)
        ChromaVectorStore(location.part(0), create=True).close()  # one of three made
    with write_lock(index):
        recover(index, committed)
    store = PartitionedStore(location, missing_ok=True)
    assert store.count() == 0
    with pytest.raises(Exception, match="missing"):
        open_store(location).count()


def test_a_damaged_partition_is_named_and_repair_writes_one_collection(parted, tmp_path, capsys):
    index = copy(parted, tmp_path)
    manifest = read_manifest(index)
    manifest.chroma_files = {}  # read the store for itself, not against the seal
    manifest.write(index)
    [header] = (index / manifest.chroma_dir / "p001").rglob("header.bin")
    data = bytearray(header.read_bytes())
    data[50] ^= 0xFF
    header.write_bytes(bytes(data))
    assert main(["check", "--index", str(index)]) == 2
    assert "p001" in capsys.readouterr().err
    assert main(["check", "--repair", "--index", str(index)]) == 0
    repaired = read_manifest(index)
    assert repaired.chroma_parts == 0 and not (index / manifest.chroma_dir).exists()
    assert main(["check", "--index", str(index)]) == 0
    capsys.readouterr()
    scores = []
    for where in (index, parted):
        assert (
            main(["retrieve", "Stanley", "--method", "dense", "--json", "--index", str(where)]) == 0
        )
        scores.append([round(h["score"], 4) for h in json.loads(capsys.readouterr().out)])
    assert scores[0] == scores[1]


def test_a_missing_row_is_named(parted, tmp_path, capsys):
    index = copy(parted, tmp_path)
    manifest = read_manifest(index)
    manifest.chroma_files = {}
    manifest.write(index)
    location = passages_location(index, manifest)
    store = ChromaVectorStore(location.part(2))
    gone = next(iter(store.records()))[0][0]
    store.delete([gone])
    store.close()
    assert main(["check", "--index", str(index)]) == 2
    assert f"no row for chunk {gone!r}" in capsys.readouterr().err


def test_replacing_a_partitioned_index_drops_its_partitions(parted, tmp_path):
    index = copy(parted, tmp_path)
    old = passages_location(index, read_manifest(index))
    build(index, ALL)  # --force: one collection in chroma/ again
    assert read_manifest(index).chroma_parts == 0
    assert json.loads((index / "manifest.json").read_text())["chroma_dir"] == CHROMA_DIR
    assert PartitionedStore(old, missing_ok=True).count() == 0  # dropped at the commit
    # its folder stays while the previous generation's readers may look; the next write's
    # commit removes it
    add_documents(index, [Document("d9", "Lake", "Lake Sakakawea.")], show_progress=False)
    assert not old.path.exists()
