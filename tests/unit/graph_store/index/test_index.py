import gc
import json
import os

import numpy as np
import pytest

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Document, Index, add_documents, build_index, delete_documents
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.embedding.embedders import HashingEmbedder
from hopgraph.graph_store.index import changes, generations, writes
from hopgraph.graph_store.index.generations import folder_name, passages_location
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.manifest import FORMAT_VERSION, MANIFEST, read_manifest
from hopgraph.graph_store.stores.vdb_chroma import ChromaVectorStore
from hopgraph.tools import make_retriever
from tests.conftest import DOCS

HASHING = IndexSettings(model="hashing", chunk_tokens=16)
ALL = [Document(d["id"], d["title"], d["text"]) for d in DOCS]
QUERIES = ["Where was Larry Alcala educated?", "military instruction 1936", "seat of Mountrail"]


def build(path, docs=ALL):
    return build_index(docs, path, HASHING, show_progress=False, replace=True)


def results(path):
    """Top hits per method and query; hits with no similarity at all (the hashing embedder's
    many exact zeros, whose order is arbitrary) are left out."""
    with Index.open(path) as idx:
        return {
            (m, q): [
                (h.id, round(h.score, 5))
                for h in make_retriever(m, idx).retrieve(q, 5)
                if m != "dense" or h.score > 1e-6
            ]
            for m in ("bm25", "dense")
            for q in QUERIES
        }


def test_build_writes_every_store_and_a_manifest(tmp_path):
    report = build(tmp_path / "idx")
    assert (report.documents, report.chunks) == (6, report.added_chunks)
    manifest = json.loads((tmp_path / "idx" / MANIFEST).read_text())
    assert manifest["counts"] == {"documents": 6, "chunks": report.chunks}
    assert manifest["settings"]["model"] == "hashing"
    assert {"chromadb", "bm25s", "hopgraph"} <= set(manifest["versions"])
    with Index.open(tmp_path / "idx") as idx:
        assert idx.vectors.count() == len(idx.chunks) == len(idx.keywords.ids) == report.chunks
        # d2 is longer than 16 words: split into neighbouring chunks of one document
        assert [c.id for c in idx.chunks.values() if c.doc_id == "d2"] == ["d2#0", "d2#1"]


def test_reopening_recomputes_nothing(tmp_path, monkeypatch):
    build(tmp_path / "idx")
    calls = []
    original = HashingEmbedder.embed

    def counting(self, texts, progress=None):
        calls.append(len(texts))
        return original(self, texts, progress)

    monkeypatch.setattr(HashingEmbedder, "embed", counting)
    monkeypatch.setattr(writes.BM25Store, "build", None)  # any rebuild would crash
    with Index.open(tmp_path / "idx") as idx:
        make_retriever("hybrid", idx).retrieve("Stanley", 3)
    assert calls == [1]  # only the query is embedded


def test_add_then_delete_equals_fresh_build(tmp_path):
    first, extra = ALL[:4], ALL[4:]
    build(tmp_path / "grown", first)
    add_documents(
        tmp_path / "grown",
        [*extra, Document("tmp", "Temp", "Temporary Stanley note.")],
        show_progress=False,
    )
    delete_documents(tmp_path / "grown", ["tmp", "d3"])
    build(tmp_path / "fresh", [d for d in ALL if d.id != "d3"])
    assert results(tmp_path / "grown") == results(tmp_path / "fresh")
    with Index.open(tmp_path / "grown") as idx:
        assert idx.doc_ids == {"d1", "d2", "d4", "d5", "d6"}
        assert idx.vectors.count() == len(idx.chunks)


def test_add_embeds_only_new_documents(tmp_path, monkeypatch):
    build(tmp_path / "idx", ALL[:4])
    seen = []
    original = HashingEmbedder.embed
    monkeypatch.setattr(
        HashingEmbedder,
        "embed",
        lambda self, texts, progress=None: seen.extend(texts) or original(self, texts),
    )
    add_documents(tmp_path / "idx", ALL[4:], show_progress=False)
    assert seen == [f"{d.title}\n{d.text}" for d in ALL[4:]]


def test_failed_build_and_failed_add_leave_previous_index_intact(tmp_path, monkeypatch):
    build(tmp_path / "idx")
    before = results(tmp_path / "idx")
    snapshot = sorted(os.listdir(tmp_path / "idx"))

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(writes, "write_tables", boom)
    with pytest.raises(RuntimeError):
        build(tmp_path / "idx", ALL[:2])
    with pytest.raises(RuntimeError):
        add_documents(tmp_path / "idx", [Document("new", "N", "new text")], show_progress=False)
    with pytest.raises(RuntimeError):
        delete_documents(tmp_path / "idx", ["d1"])
    assert sorted(os.listdir(tmp_path / "idx")) == snapshot
    assert results(tmp_path / "idx") == before


def test_interrupted_swap_is_recovered_on_open(tmp_path):
    build(tmp_path / "idx")
    os.rename(tmp_path / "idx", tmp_path / ".idx.old-deadbeef")  # died between the two renames
    with Index.open(tmp_path / "idx") as idx:
        assert len(idx.doc_ids) == 6


def test_bad_writes_are_refused_and_change_nothing(tmp_path):
    path = tmp_path / "idx"
    build(path)
    with pytest.raises(InputError, match="already in the index: 'd1'"):
        add_documents(path, [ALL[0]], show_progress=False)
    with pytest.raises(InputError, match="not in the index: 'zzz'"):
        delete_documents(path, ["d1", "zzz"])
    with pytest.raises(InputError, match="would leave the index empty"):
        delete_documents(path, [d.id for d in ALL])
    with pytest.raises(InputError, match="duplicate document ids"):
        build(tmp_path / "other", [ALL[0], ALL[0]])
    with pytest.raises(InputError, match="empty"):
        build(tmp_path / "other", [])
    with Index.open(path) as idx:
        assert len(idx.doc_ids) == 6


def test_foreign_directory_is_never_overwritten(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(InputError, match="not a hopgraph index"):
        build(tmp_path / "mine")
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"


def test_index_from_another_version_or_model_is_refused(tmp_path):
    path = tmp_path / "idx"
    build(path)
    with pytest.raises(IndexStateError, match="built with embedding model 'hashing'"):
        Index.open(path, model="all-MiniLM-L6-v2")
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["format_version"] = 99
    (path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IndexStateError, match="format 99"):
        Index.open(path)
    with pytest.raises(IndexStateError, match="no index at"):
        Index.open(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(IndexStateError, match="not a hopgraph index"):
        Index.open(tmp_path / "plain")
    build(path)  # a rebuild replaces the old-format index
    with Index.open(path) as idx:
        assert idx.manifest.format_version == FORMAT_VERSION


def test_a_second_writer_is_refused_and_told_who_writes(tmp_path, monkeypatch):
    from hopgraph.graph_store.index.lock import write_lock

    build(tmp_path / "idx")
    held = f"is being written by PID {os.getpid()}"
    with write_lock(tmp_path / "idx"), pytest.raises(IndexStateError, match=held):
        delete_documents(tmp_path / "idx", ["d1"])
    embedded = []
    monkeypatch.setattr(writes, "embed_chunks", lambda *a: embedded.append(a))
    with write_lock(tmp_path / "idx"), pytest.raises(IndexStateError, match=held):
        build(tmp_path / "idx")
    assert embedded == []  # refused before embedding: the lock covers the whole write


def test_index_refuses_to_replace_an_index_without_force(tmp_path, capsys):
    from hopgraph.cli import main

    build(tmp_path / "idx")
    before = results(tmp_path / "idx")
    with pytest.raises(InputError, match=r"already holds an index \(6 documents\)"):
        build_index(ALL[:2], tmp_path / "idx", HASHING, show_progress=False)
    assert results(tmp_path / "idx") == before
    corpus = tmp_path / "two.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS[:2]))
    argv = ["index", str(corpus), "--index", str(tmp_path / "idx"), "--model", "hashing", "-q"]
    assert main(argv) == 2
    assert "hopgraph index --force" in capsys.readouterr().err
    assert main([*argv, "--force"]) == 0
    with Index.open(tmp_path / "idx") as idx:
        assert len(idx.doc_ids) == 2


def test_delete_needs_no_embedding_model(tmp_path, monkeypatch):
    build(tmp_path / "idx")

    def no_model(*args, **kwargs):
        raise AssertionError("delete loaded an embedding model")

    monkeypatch.setattr(changes, "embedder_for", no_model)
    delete_documents(tmp_path / "idx", ["d3"])
    with Index.open(tmp_path / "idx") as idx:
        assert "d3" not in idx.doc_ids
        assert idx.manifest.embedder == {"name": "hashing", "dimension": 256}


def test_lock_files_stay_inside_the_index_folder(tmp_path):
    with pytest.raises(IndexStateError, match="no index at"):
        delete_documents(tmp_path / "nowhere", ["d1"])
    with pytest.raises(IndexStateError, match="no index at"):
        add_documents(tmp_path / "nowhere", ALL[:1], show_progress=False)
    assert list(tmp_path.iterdir()) == []  # nothing written for an index that is not there
    build(tmp_path / "idx", ALL[:2])
    delete_documents(tmp_path / "idx", ["d1"])
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]
    assert (tmp_path / "idx" / ".lock").is_file()


def test_force_replaces_only_what_hopgraph_wrote(tmp_path):
    build(tmp_path / "idx")
    (tmp_path / "idx" / "models").mkdir()
    (tmp_path / "idx" / "models" / "gnn_ret.pt").write_bytes(b"weights")
    (tmp_path / "idx" / "notes.txt").write_text("mine")
    build(tmp_path / "idx", ALL[:2])  # replace=True
    build(tmp_path / "idx", ALL[:3])  # a second write clears the first's folders
    assert (tmp_path / "idx" / "models" / "gnn_ret.pt").read_bytes() == b"weights"
    assert (tmp_path / "idx" / "notes.txt").read_text() == "mine"
    with Index.open(tmp_path / "idx") as idx:
        assert idx.doc_ids == {"d1", "d2", "d3"}


def test_chat_and_live_readers_see_the_next_commit(tmp_path, capsys):
    from langgraph.checkpoint.memory import InMemorySaver

    from hopgraph.cli.commands.chat import ChatSession
    from hopgraph.graph_store import LiveIndex

    build(tmp_path / "idx", ALL)
    with LiveIndex(tmp_path / "idx") as live:
        session = ChatSession(live, None, InMemorySaver(), "t", "bm25", 3)
        session.ask("zebra quagga")
        assert not any(s["doc_id"] == "z1" for s in session.sources)
        add_documents(tmp_path / "idx", [Document("z1", "Zebra", "A zebra quagga.")], False)
        session.ask("zebra quagga")
        assert session.sources[0]["doc_id"] == "z1" and live.reopened == 1


def test_a_generation_kept_for_its_segments_keeps_only_them(tmp_path):
    directory = tmp_path / "idx"
    docs = ALL
    build_index(docs[:-2], directory, IndexSettings(model="hashing"), show_progress=False)
    first = read_manifest(directory)
    add_documents(directory, docs[-2:-1], show_progress=False)
    add_documents(directory, docs[-1:], show_progress=False)
    manifest = read_manifest(directory)
    old = directory / folder_name(first.generation)
    assert any(s.startswith(old.name) for s in manifest.segments)  # its BM25 segment is in use
    assert sorted(p.name for p in old.iterdir()) == ["bm25-segment", "vectors"]
    with Index.open(directory) as index:
        assert len(index.chunks) == len(read_chunks(directory, manifest))


def test_a_write_pauses_the_garbage_collector_and_restores_it(tmp_path, monkeypatch):
    seen = []
    original = writes.chunk_documents

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(writes, "chunk_documents", spy)
    build_index(ALL[:2], tmp_path / "idx", IndexSettings(model="hashing"), show_progress=False)
    add_documents(tmp_path / "idx", ALL[2:3], show_progress=False)
    assert seen == [False, False]
    assert gc.isenabled()


def _stray_row(directory, tag_folder=True):
    """Leave what a write killed after tagging a row leaves: its folder and the row."""
    manifest = read_manifest(directory)
    number = manifest.generation + 1
    if tag_folder:
        (directory / folder_name(number)).mkdir()
    store = ChromaVectorStore(passages_location(directory, manifest))
    try:
        stray = Chunk("stray#0", "stray", "Stray", "A stray row.", 0, 1)
        store.upsert([stray], np.ones((1, HashingEmbedder().dimension), np.float32), number)
        return store.count()
    finally:
        store.close()


def test_rows_of_a_write_that_died_are_removed_by_the_next_write(tmp_path):
    build(tmp_path / "idx", ALL[:4])
    before = _stray_row(tmp_path / "idx")
    add_documents(tmp_path / "idx", ALL[4:5], show_progress=False)
    with Index.open(tmp_path / "idx") as idx:
        assert "stray#0" not in idx.chunks
        assert (
            idx.vectors.count()
            == len(idx.chunks)
            == before - 1 + len([c for c in idx.chunks.values() if c.doc_id == ALL[4].id])
        )


def test_a_write_after_a_clean_commit_does_not_search_rows_by_tag(tmp_path, monkeypatch):
    build(tmp_path / "idx", ALL[:4])

    def scan(*_, **__):
        raise AssertionError("no write was under way: nothing to search for")

    monkeypatch.setattr(ChromaVectorStore, "ids_after", scan)
    add_documents(tmp_path / "idx", ALL[4:], show_progress=False)
    delete_documents(tmp_path / "idx", ["d1"])
    with Index.open(tmp_path / "idx") as idx:
        assert idx.vectors.count() == len(idx.chunks)


def test_a_failure_after_the_commit_keeps_the_committed_write(tmp_path, monkeypatch):
    build(tmp_path / "idx", ALL[:4])
    built = read_manifest(tmp_path / "idx").generation
    original = generations.purge

    def fails_once_committed(directory, manifest, *run):
        if manifest.generation > built:  # the delete's own purge, after its commit
            raise OSError("store gone")
        original(directory, manifest, *run)

    monkeypatch.setattr(generations, "purge", fails_once_committed)
    with pytest.raises(OSError):
        delete_documents(tmp_path / "idx", ["d1"])
    monkeypatch.undo()
    with Index.open(tmp_path / "idx") as idx:  # the delete is committed
        assert "d1" not in idx.doc_ids
    add_documents(tmp_path / "idx", ALL[4:5], show_progress=False)  # finishes the purge
    with Index.open(tmp_path / "idx") as idx:
        assert idx.vectors.count() == len(idx.chunks)


def test_a_rollback_that_cannot_reach_the_store_leaves_the_folder_for_the_next_write(
    tmp_path, monkeypatch
):
    build(tmp_path / "idx", ALL[:4])
    committed = read_manifest(tmp_path / "idx")
    _stray_row(tmp_path / "idx", tag_folder=False)  # tagged by the write that fails below
    gen = generations.Generation(tmp_path / "idx", committed)
    gen.folder.mkdir()

    def unreachable(*_):
        raise IndexStateError("server gone")

    monkeypatch.setattr(generations, "recover", unreachable)
    gen.rollback()
    monkeypatch.undo()
    assert gen.folder.is_dir()
    delete_documents(tmp_path / "idx", ["d1"])
    with Index.open(tmp_path / "idx") as idx:
        assert idx.vectors.count() == len(idx.chunks)


def test_a_write_that_merges_vector_segments_commits_the_merged_one(tmp_path, monkeypatch):
    from hopgraph.graph_store.index.stored_vectors import read_vectors
    from hopgraph.graph_store.stores import segments

    directory = tmp_path / "idx"
    build(directory, ALL[:4])
    # every segment smaller than the largest is small, and one small segment merges
    monkeypatch.setattr(segments, "LARGE_SHARE", 1.0)
    monkeypatch.setattr(segments, "MAX_SEGMENTS", 1)
    add_documents(directory, ALL[4:], show_progress=False)
    manifest = read_manifest(directory)
    folder = folder_name(manifest.generation)
    # size-tiered: the largest segment (4 of the 6 rows) stays, the rest are merged
    assert manifest.vectors == ["g000001/vectors", f"{folder}/vectors-merged"]
    assert not (directory / folder / "vectors").exists()  # the unmerged segment is gone
    delete_documents(directory, [d.id for d in ALL[:2]])  # half the first one's rows dead
    merged = read_manifest(directory)
    assert merged.vectors == [f"{folder_name(merged.generation)}/vectors-merged"]
    add_documents(directory, ALL[:2], show_progress=False)
    manifest = read_manifest(directory)
    chunks = read_chunks(directory, manifest)
    build(tmp_path / "fresh")
    fresh = read_manifest(tmp_path / "fresh")
    assert np.array_equal(
        read_vectors(directory, manifest, chunks),
        read_vectors(tmp_path / "fresh", fresh, chunks),
    )
