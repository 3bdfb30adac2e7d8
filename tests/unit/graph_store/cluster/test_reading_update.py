"""A write's offline readings brought up to date by calls over the saved parts, run here.

The calls (graph_store/cluster/reading_update.py) drop, read again and pick as one process's
write does: the same extractions and graphs after an add that makes older chunks link to a new
title, a delete and a sync that replaces a document, and the state stays in parts for the next
write. tests/integration/test_cluster.py runs them as tasks.
"""

import logging
import re
import shutil
from collections import Counter
from dataclasses import replace

import pytest

from hopgraph.core.errors import IndexStateError
from hopgraph.core.threads import in_process
from hopgraph.graph_store import (
    Index,
    add_documents,
    build_graphs,
    delete_documents,
    sync_documents,
)
from hopgraph.graph_store.cluster import reading_update
from hopgraph.graph_store.cluster.reading_update import reading_updated_by
from hopgraph.graph_store.documents.schema import Document
from hopgraph.graph_store.graphs.extraction.reading_table import saved_parts
from hopgraph.graph_store.graphs.extraction.readings import may_contain
from hopgraph.graph_store.graphs.extraction.table import EXTRACTION_PARTS
from hopgraph.graph_store.index.graph_build import GraphTasks
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.manifest import read_manifest, record_files
from tests.sample_index import written_in_four_steps
from tests.unit.graph_store.cluster.test_cluster_graph_parts import graphs_here
from tests.unit.graph_store.cluster.test_cluster_readings import exact_lists, in_ranges


@pytest.fixture(scope="module")
def in_parts(tmp_path_factory):
    """The sample with graphs whose readings 3 calls saved in parts (as `graph build --cluster`)."""
    path = written_in_four_steps(tmp_path_factory.mktemp("reread") / "index")
    build_graphs(path, show_progress=False, tasks=GraphTasks(exact_lists, in_ranges(3)))
    return path


def _copies(source, tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    shutil.copytree(source, here)
    shutil.copytree(source, there)
    return here, there


def _graph_folder(path):
    with Index.open(path) as idx:
        return idx.manifest.path(path, "graph")


def _same_graphs(here, there):
    with Index.open(here) as one, Index.open(there) as other:
        assert one.chunks.keys() == other.chunks.keys()
        assert one.extractions == other.extractions
        assert one.manifest.graph["counts"] == other.manifest.graph["counts"]
        for kind, edges in one.passage_graph.edges.items():
            assert (edges != other.passage_graph.edges[kind]).nnz == 0, kind
        assert one.knowledge_graph.triples == other.knowledge_graph.triples


def _new_title(path):
    """The capitalised pair of words the chunks write most that no document is titled: a page
    of that title makes the older chunks that write it be read again."""
    found: Counter[str] = Counter()
    with Index.open(path) as idx:
        titles = {c.title for c in idx.chunks.values()}
        for chunk in idx.chunks.values():
            found.update(re.findall(r"\b[A-Z][a-z]{3,} [A-Z][a-z]{3,}\b", chunk.text))
    return next(name for name, _ in found.most_common() if name not in titles)


def _counting_rereads(monkeypatch):
    """Count the chunks the calls read again (found by may_contain)."""
    read_again = []

    def counted(*args):
        found = may_contain(*args)
        read_again.extend(found)
        return found

    monkeypatch.setattr(reading_update, "may_contain", counted)
    return read_again


@pytest.mark.parametrize("graphs", ["here", "by calls"])
def test_an_add_a_delete_and_a_sync_read_by_the_calls_equal_one_process(
    in_parts, tmp_path, monkeypatch, graphs
):
    """The graphs made here from the calls' parts joined, or by the calls from the parts."""
    here, there = _copies(in_parts, tmp_path)
    parts = graphs_here if graphs == "by calls" else None
    by_calls = GraphTasks(reread=reading_updated_by(in_process), parts=parts)
    read_again = _counting_rereads(monkeypatch)
    title = _new_title(here)
    new = [
        Document("page-new", title, f"{title} is a page added later."),
        Document("other-new", "Another Page", "It names Another Page and nothing else."),
    ]
    for path, tasks in ((here, None), (there, by_calls)):
        add_documents(path, new, show_progress=False, tasks=tasks)
    _same_graphs(here, there)
    assert read_again, "the calls read no older chunk again: the test's add changes no link"
    assert saved_parts(_graph_folder(there)) is not None  # the next write's calls find parts

    with Index.open(here) as idx:
        gone = sorted({c.doc_id for c in idx.chunks.values()})[:3]
    for path, tasks in ((here, None), (there, by_calls)):
        delete_documents(path, gone, tasks)
    _same_graphs(here, there)

    with Index.open(here) as idx:
        doc_id = sorted({c.doc_id for c in idx.chunks.values()})[5]
        first = next(c for c in idx.chunks.values() if c.doc_id == doc_id)
    changed = Document(doc_id, first.title, f"{first.text} It also names {title}.")
    for path, tasks in ((here, None), (there, by_calls)):
        sync_documents(path, [changed], show_progress=False, tasks=tasks)
    _same_graphs(here, there)


def test_readings_saved_as_one_file_are_updated_here_and_said(in_parts, tmp_path, caplog):
    here, there = _copies(in_parts, tmp_path)
    more = [Document("one-more", "One More Page", "One More Page is new.")]
    add_documents(here, more, show_progress=False)  # one process's write: one file again
    assert saved_parts(_graph_folder(here)) is None
    shutil.rmtree(there)
    shutil.copytree(here, there)
    again = [Document("two-more", "Two More Pages", "Two More Pages follow One More Page.")]
    add_documents(here, again, show_progress=False)
    with caplog.at_level(logging.WARNING):
        add_documents(there, again, False, tasks=GraphTasks(reread=reading_updated_by()))
    assert "saved as one file" in caplog.text
    _same_graphs(here, there)


def test_parts_that_hold_other_chunks_than_the_table_are_refused(in_parts, tmp_path):
    with Index.open(in_parts) as idx:
        manifest = idx.manifest
        chunks = read_chunks(in_parts, manifest)
    old_dir = manifest.path(in_parts, "graph")
    update = reading_updated_by()
    with pytest.raises(IndexStateError, match=r"saved readings .* hold other chunks") as err:
        update(in_parts, manifest, old_dir, (chunks[1:], [], []), chunks[1:], tmp_path)
    assert "graph build" in err.value.hint
    # the state's shards and its title index (saved first) and the first round's tables and
    # frequencies only: the write's folder, removed with it when it fails
    saved = ("-unpicked.", "offline-readings.", "titles", "frequencies", "state-shards")
    assert all(any(s in p.name for s in saved) for p in tmp_path.iterdir())
    assert not (tmp_path / EXTRACTION_PARTS).exists()


def test_a_part_left_empty_by_a_delete_stays_a_part(in_parts, tmp_path):
    here, there = _copies(in_parts, tmp_path)
    with Index.open(here) as idx:
        first_rows = idx.ids[: len(idx.ids) // 3 + 1]  # part 0: the first third of the rows
        docs = sorted({idx.chunks[c].doc_id for c in first_rows})
    by_calls = GraphTasks(reread=reading_updated_by(in_process), parts=graphs_here)
    for path, tasks in ((here, None), (there, by_calls)):
        delete_documents(path, docs, tasks)
    _same_graphs(here, there)
    more = [Document("later", "Later Page", "Later Page.")]
    for path, tasks in ((here, None), (there, by_calls)):
        add_documents(path, more, show_progress=False, tasks=tasks)
    _same_graphs(here, there)


def test_extractions_are_cut_into_parts_of_rows_and_other_chunks_are_refused(tmp_path):
    from hopgraph.graph_store.cluster.reading_update import in_rows
    from hopgraph.graph_store.cluster.readings import extracted
    from hopgraph.graph_store.graphs.extraction.base import Extraction
    from hopgraph.graph_store.graphs.extraction.table import (
        EXTRACTION_PARTS,
        ExtractionTable,
        load_extractions,
    )

    def parts_of(*groups):
        folder = tmp_path / EXTRACTION_PARTS
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for n, ids in enumerate(groups):
            table = ExtractionTable.from_extractions([Extraction(i, (f"e{i}",), ()) for i in ids])
            table.save(folder / extracted(f"part{n}.npz"))
        return [f"part{n}.npz" for n in range(len(groups))]

    rows = ["a", "b", "c", "d", "e"]
    given = (iter(rows), len(rows))  # streamed: the driver holds none of them
    in_rows(tmp_path, parts_of(["e", "b"], ["c", "a", "d"]), given, tmp_path, in_process)
    got = load_extractions(tmp_path)
    assert got.ids == rows
    assert [e.entities for e in got.to_extractions()] == [(f"e{i}",) for i in rows]
    assert sorted(p.name for p in (tmp_path / EXTRACTION_PARTS).iterdir()) == [
        "parts.json",
        *sorted(f"rows-00{r}-extractions{x}" for r in (0, 1) for x in (".json", ".npz")),
    ]
    with pytest.raises(IndexStateError, match="not the 5 of the write"):
        in_rows(tmp_path, parts_of(["e", "b"], ["c", "a", "x"]), (rows, 5), tmp_path, in_process)
    with pytest.raises(IndexStateError, match="not the 5 of the write"):
        in_rows(tmp_path, parts_of(["e", "b"], ["c", "a"]), (rows, 5), tmp_path, in_process)


def _counts(path):
    """The saved extractor state's lower-case word counts and title counts."""
    from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings

    with Index.open(path) as idx:
        chunks = read_chunks(path, idx.manifest)
        state = CorpusReadings.load(idx.manifest.path(path, "graph"), chunks)
    assert state is not None
    return state.lower, state.titles


def test_a_replaced_documents_old_words_leave_the_counts(in_parts, tmp_path):
    """A sync reads the kept chunks without texts: the replaced chunk's old text (the last
    table's, not the new one under the same id) is what leaves the counts, in one process and
    in the calls, as a fresh build of the result counts."""
    from dataclasses import replace

    from hopgraph.cli.commands.demo import sample_dir
    from hopgraph.core.settings import IndexSettings
    from hopgraph.graph_store import build_index, load_documents

    here, there = _copies(in_parts, tmp_path)
    docs = load_documents(sample_dir() / "corpus.jsonl")
    kept = docs[:100] + docs[130:]
    changed = replace(kept[7], text="entirely different wording, zyxwv and qwvut only.")
    for path, tasks in ((here, None), (there, GraphTasks(reread=reading_updated_by()))):
        sync_documents(path, [changed], show_progress=False, tasks=tasks)
    fresh = tmp_path / "fresh"
    final = [changed if d.id == changed.id else d for d in kept]
    build_index(final, fresh, IndexSettings(model="hashing"), show_progress=False)
    build_graphs(fresh, show_progress=False)
    expected = _counts(fresh)
    assert _counts(here) == expected
    assert _counts(there) == expected


def test_writes_by_calls_hold_no_list_of_chunks_and_write_one_process_s_index(
    in_parts, tmp_path, monkeypatch
):
    """A cluster's add, delete and sync read the chunks they keep from the table as they need
    them (ChunkScan): the same tables, counts, report and graphs as one process's, which reads
    them all."""
    from hopgraph.graph_store.index import changes

    here, there = _copies(in_parts, tmp_path)
    by_calls = GraphTasks(reread=reading_updated_by(in_process), parts=graphs_here)
    new = [  # ids sorting first, last and among the table's
        Document("0-first", "First Page", "A page whose id sorts first."),
        Document("zz-last", "Last Page", "A page whose id sorts last; it names First Page."),
    ]
    mine = add_documents(here, new, show_progress=False)

    def not_read(*args, **kwargs):
        raise AssertionError("a cluster's add read the whole chunk table")

    with monkeypatch.context() as patched:
        patched.setattr(changes, "read_chunks", not_read)
        theirs = add_documents(there, new, show_progress=False, tasks=by_calls)
    assert (mine.documents, mine.chunks, mine.added_chunks) == (
        theirs.documents, theirs.chunks, theirs.added_chunks
    )  # fmt: skip
    _same_tables(here, there)
    _same_graphs(here, there)

    gone = ["0-first", _a_document(here)]  # a page added above, and one of the sample's
    mine = delete_documents(here, gone)
    with monkeypatch.context() as patched:
        patched.setattr(changes, "read_chunks", not_read)
        theirs = delete_documents(there, gone, by_calls)
    assert (mine.documents, mine.chunks, mine.removed_chunks) == (
        theirs.documents, theirs.chunks, theirs.removed_chunks
    )  # fmt: skip
    _same_tables(here, there)
    _same_graphs(here, there)

    with Index.open(here) as idx:  # one changed (its chunk ids kept: replaced), one new
        first = idx.chunks[sorted(idx.chunks)[3]]
    synced = [
        Document(first.doc_id, first.title, f"{first.text} It names Last Page now."),
        Document("mid-new", "Middle Page", "A page synced in."),
    ]
    mine = sync_documents(here, synced, show_progress=False)
    with monkeypatch.context() as patched:
        patched.setattr(changes, "read_chunks", not_read)
        theirs = sync_documents(there, synced, show_progress=False, tasks=by_calls)
    assert mine.changed == theirs.changed == [first.doc_id]
    assert (mine.documents, mine.chunks) == (theirs.documents, theirs.chunks)
    _same_tables(here, there)
    _same_graphs(here, there)


def _same_tables(here, there):
    with Index.open(here) as one, Index.open(there) as other:
        assert one.manifest.counts == other.manifest.counts
        chunks = (i.manifest.path(i.directory, "chunks").read_bytes() for i in (one, other))
        assert len(set(chunks)) == 1
        records = ([replace(r, indexed_at="") for r in i.documents] for i in (one, other))
        assert next(records) == next(records)  # but the time each was written


def _a_document(path):
    with Index.open(path) as idx:
        return sorted({c.doc_id for c in idx.chunks.values()})[7]


def test_a_state_an_older_hopgraph_saved_whole_is_cut_into_shards_by_the_write(in_parts, tmp_path):
    from hopgraph.graph_store.graphs.extraction.reading_table import save_in_parts
    from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings
    from hopgraph.graph_store.graphs.extraction.state_shards import SHARDS_KEY, STATE_SHARDS

    here, there = _copies(in_parts, tmp_path)
    folder = _graph_folder(there)
    names, extra = saved_parts(folder)
    assert extra == {SHARDS_KEY: 3}
    with Index.open(there) as idx:
        whole = CorpusReadings.load(folder, read_chunks(there, idx.manifest))
    older = {"lower": whole.lower, "alias_keys": whole.alias_keys, "claims": whole.claims}
    save_in_parts(folder, names, older)  # as the parts' state was saved before the shards
    shutil.rmtree(folder / STATE_SHARDS)
    manifest = read_manifest(there)  # as the older build that wrote them recorded them
    record_files(there, manifest, None)
    manifest.write(there)
    title = _new_title(here)
    new = [Document("page-new", title, f"{title} is a page added later.")]
    add_documents(here, new, show_progress=False)
    by_calls = GraphTasks(reread=reading_updated_by(in_process))
    add_documents(there, new, show_progress=False, tasks=by_calls)
    _same_graphs(here, there)
    after = _graph_folder(there)
    assert saved_parts(after)[1] == {SHARDS_KEY: 3}
    assert sorted(p.name for p in (after / STATE_SHARDS).iterdir()) == [
        f"shard-{s:03d}.json" for s in range(3)
    ]  # the shards' parts of the title index joined and gone, nothing converted left
    assert not (after / reading_update.CONVERTED).exists()
