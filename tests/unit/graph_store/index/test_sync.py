"""`hopgraph sync` and `hopgraph docs` on a folder of a user's documents (hashing embedder)."""

import json

import pytest

from hopgraph.cli import main
from hopgraph.graph_store import Index, build_graphs, load_corpus, sync_documents
from hopgraph.graph_store.embedding.embedders import HashingEmbedder
from hopgraph.graph_store.index.check import check_index
from hopgraph.graph_store.index.graph_build import GraphSettings
from tests.unit.graph_store.index.test_index import build, results

FILES = {
    "guide/install.md": "---\ntags: [setup]\n---\n# Install\n\nRun pip install hopgraph.\n",
    "usage.rst": "Usage\n=====\n\nAsk Stanley about Mountrail County.\n",
    "notes.txt": "Larry Alcala studied at the University of the Philippines.",
    "page.html": "<title>Page</title><p>Military instruction started in 1936.</p>",
}


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def embedded(monkeypatch):
    """Count the texts the hashing embedder is given."""
    seen: list[str] = []
    original = HashingEmbedder.embed

    def counting(self, texts, progress=None):
        seen.extend(texts)
        return original(self, texts, progress)

    monkeypatch.setattr(HashingEmbedder, "embed", counting)
    return seen


def sync(folder, index, *flags):
    return main(["sync", str(folder), "--index", str(index), "-q", *flags])


def test_sync_adds_replaces_and_prunes_only_what_changed(tmp_path, folder, embedded, capsys):
    index = tmp_path / "idx"
    argv = ["index", str(folder), "--index", str(index), "--model", "hashing", "-q"]
    assert main(argv) == 0
    capsys.readouterr()
    embedded.clear()

    assert sync(folder, index) == 0
    assert "0 added, 0 changed, 0 removed, 4 unchanged" in capsys.readouterr().out
    assert embedded == []  # nothing embedded, nothing written
    (folder / "notes.txt").write_text("Larry Alcala studied in Manila.", encoding="utf-8")
    (folder / "new.md").write_text("# New\n\nA new page.", encoding="utf-8")
    assert sync(folder, index) == 0
    out = capsys.readouterr().out
    assert "1 added, 1 changed, 0 removed, 3 unchanged" in out
    assert sorted(embedded) == ["New\nA new page.", "notes\nLarry Alcala studied in Manila."]

    (folder / "page.html").unlink()
    assert sync(folder, index) == 0
    captured = capsys.readouterr()
    assert "0 removed" in captured.out and "'page.html'" in captured.err  # kept, named
    assert sync(folder, index, "--prune") == 0
    assert "0 added, 0 changed, 1 removed, 4 unchanged" in capsys.readouterr().out

    assert main(["docs", "--index", str(index), "--json"]) == 0
    listed = {d["id"]: d for d in json.loads(capsys.readouterr().out)}
    assert sorted(listed) == ["guide/install.md", "new.md", "notes.txt", "usage.rst"]
    assert listed["guide/install.md"]["metadata"] == {"tags": "setup"}
    assert listed["notes.txt"]["source"] == str((folder / "notes.txt").resolve())
    assert all(len(d["hash"]) == 16 and d["chunks"] == 1 for d in listed.values())


def test_sync_equals_a_fresh_build_and_updates_the_graphs(tmp_path, folder):
    grown, fresh = tmp_path / "grown", tmp_path / "fresh"
    build(grown, load_corpus(folder).documents)
    build_graphs(grown, GraphSettings(), show_progress=False)
    (folder / "notes.txt").write_text("Larry Alcala studied at Mountrail.", encoding="utf-8")
    (folder / "usage.rst").unlink()
    docs = load_corpus(folder).documents
    report = sync_documents(grown, docs, scope=folder, prune=True, show_progress=False)
    assert (report.changed, report.removed) == (["notes.txt"], ["usage.rst"])
    build(fresh, docs)
    build_graphs(fresh, GraphSettings(), show_progress=False)
    assert results(grown) == results(fresh)
    with Index.open(grown) as a, Index.open(fresh) as b:
        assert a.passage_graph.ids == b.passage_graph.ids
        assert [r.hash for r in a.documents] == [r.hash for r in b.documents]


def test_unreadable_files_are_not_pruned_and_add_points_to_sync(tmp_path, folder, capsys):
    index = tmp_path / "idx"
    build(index, load_corpus(folder).documents)
    (folder / "notes.txt").write_bytes(b"\x00binary now")
    assert sync(folder, index, "--prune") == 0
    captured = capsys.readouterr()
    assert "0 removed" in captured.out and "skipped notes.txt: binary file" in captured.err
    assert sync(folder, index, "--strict") == 2
    assert "notes.txt" in capsys.readouterr().err
    argv = ["add", str(folder / "usage.rst"), "--index", str(index), "-q"]
    assert main(argv) == 2
    assert "hopgraph sync SOURCE" in capsys.readouterr().err


def test_a_sync_that_fails_to_embed_changes_nothing(tmp_path, folder, monkeypatch):
    index = tmp_path / "idx"
    build(index, load_corpus(folder).documents)
    before = results(index)
    (folder / "notes.txt").write_text("Larry Alcala studied in Manila.", encoding="utf-8")

    def broken(self, texts, progress=None):
        raise RuntimeError("the encoder failed")

    monkeypatch.setattr(HashingEmbedder, "embed", broken)
    with pytest.raises(RuntimeError, match="encoder failed"):
        sync_documents(index, load_corpus(folder).documents, scope=folder, show_progress=False)
    monkeypatch.undo()
    assert results(index) == before  # the changed document was not deleted first
    with Index.open(index) as idx:
        assert len(idx.documents) == len(FILES)


def test_a_changed_document_is_replaced_in_one_generation(tmp_path, folder):
    from hopgraph.tools import make_retriever

    grown, fresh = tmp_path / "grown", tmp_path / "fresh"
    build(grown, load_corpus(folder).documents)
    build_graphs(grown, GraphSettings(), show_progress=False)
    reader = Index.open(grown)  # a reader of the generation before the sync
    first = reader.generation
    (folder / "notes.txt").write_text("Larry Alcala studied in Stanley, Manila.", "utf-8")
    (folder / "new.md").write_text("# New\n\nA new page about Manila.", encoding="utf-8")
    docs = load_corpus(folder).documents
    sync_documents(grown, docs, scope=folder, show_progress=False)
    try:
        with Index.open(grown) as now:
            assert now.generation == first + 1  # delete and add as one write
        # the old reader scores its chunk by the old text's vector, never the new one's
        old_hits = make_retriever("dense", reader).retrieve("Stanley Manila", 20)
        scored = {h.id: h.score for h in old_hits}
        old_text = reader.chunk("notes.txt").embed_text
        expected = reader.embedder.embed([old_text])[0] @ reader.embed_query("Stanley Manila")
        assert "Stanley" not in old_text and scored["notes.txt"] == pytest.approx(expected)
    finally:
        reader.close()
    build(fresh, docs)
    build_graphs(fresh, GraphSettings(), show_progress=False)
    assert results(grown) == results(fresh)
    with Index.open(grown) as a, Index.open(fresh) as b:
        assert a.passage_graph.ids == b.passage_graph.ids
        assert a.embedding_matrix.tolist() == b.embedding_matrix.tolist()
        knowledge = sorted(t.text for t in a.knowledge_graph.triples)
        assert knowledge == sorted(t.text for t in b.knowledge_graph.triples)


def test_a_sync_that_fails_after_adding_rows_leaves_the_old_ones(tmp_path, folder, monkeypatch):
    from hopgraph.graph_store.index import writes
    from hopgraph.graph_store.stores.vdb_chroma import ChromaVectorStore

    index = tmp_path / "idx"
    build(index, load_corpus(folder).documents)
    build_graphs(index, GraphSettings(), show_progress=False)
    before = results(index)

    def stored(path):
        with Index.open(path) as idx:
            store = ChromaVectorStore(idx.location)
            try:
                ids, vectors, texts, metadatas = next(store.records(batch=1000))
                rows = zip(ids, vectors.tolist(), texts, metadatas, strict=True)
                return sorted(rows, key=lambda row: row[0])
            finally:
                store.close()

    rows = stored(index)
    (folder / "notes.txt").write_text("Larry Alcala studied in Manila.", encoding="utf-8")

    def broken(*args, **kwargs):
        raise RuntimeError("the graphs failed")

    monkeypatch.setattr(writes, "write_graphs", broken)
    with pytest.raises(RuntimeError, match="graphs failed"):
        sync_documents(index, load_corpus(folder).documents, scope=folder, show_progress=False)
    monkeypatch.undo()
    assert results(index) == before
    assert (
        check_index(index) == []
    )  # the rollback sealed Chroma anew (graph_store.stores.chroma_seal)
    assert stored(index) == rows  # the new row rolled back, the old one never touched
    report = sync_documents(index, load_corpus(folder).documents, scope=folder, show_progress=False)
    assert report.changed == ["notes.txt"]
    with Index.open(index) as idx:
        assert idx.manifest.rows == {"notes.txt": f"notes.txt\x1fg{idx.generation}"}
        assert {r[0] for r in stored(index)} == {idx.manifest.row_of(c) for c in idx.chunks}


def test_writes_that_read_kept_chunks_without_texts_write_every_text(tmp_path):
    """Adds and a delete copy the kept chunks' lines from the last table: the result's table
    holds what a fresh build of the same documents holds, texts included."""
    from hopgraph.cli.commands.demo import sample_dir
    from hopgraph.core.settings import IndexSettings
    from hopgraph.graph_store import build_index, load_documents
    from hopgraph.graph_store.stores.chunk_table import read_chunks
    from tests.sample_index import written_in_four_steps

    grown = written_in_four_steps(tmp_path / "grown")
    docs = load_documents(sample_dir() / "corpus.jsonl")
    kept = docs[:100] + docs[130:]
    fresh = build_index(kept, tmp_path / "fresh", IndexSettings(model="hashing"), False)
    tables = []
    for path in (grown, fresh.directory):
        with Index.open(path) as idx:
            tables.append({c.id: c for c in read_chunks(path, idx.manifest)})
    assert tables[0] == tables[1]
    assert all(c.text for c in tables[0].values())
