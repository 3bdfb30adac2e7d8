"""A graph build's first reading made by a cluster's calls over ranges of rows, run here.

The calls (graph_store/cluster/readings.py) count, read and pick as one process does: the
same extractions, the same extractor state, the same graphs, and a later write brings that
state up to date as it would one process's. tests/integration/test_cluster.py runs the calls
as tasks on a cluster.
"""

import shutil
from dataclasses import replace

import pytest

from hopgraph.cli.commands.demo import sample_dir
from hopgraph.graph_store import Index, add_documents, build_graphs, load_documents
from hopgraph.graph_store.cluster.readings import chunk_rows, read_corpus
from hopgraph.graph_store.graphs.extraction.reading_table import part_name, read_each
from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings
from hopgraph.graph_store.graphs.extraction.table import ExtractionTable, load_extractions
from hopgraph.graph_store.graphs.semantic import nearest
from hopgraph.graph_store.index.graph_build import GraphTasks
from hopgraph.graph_store.index.stored_vectors import read_vectors
from hopgraph.graph_store.stores.chunk_table import read_chunks
from tests.sample_index import written_in_four_steps


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = written_in_four_steps(tmp_path_factory.mktemp("readings") / "index")
    build_graphs(path, show_progress=False)
    return path


def in_ranges(parts: int):
    """What ``parts`` calls a step read, run here: a reader as build_graphs takes it."""

    def reader(directory, manifest, n, target):
        source = (str(directory), manifest.model_dump_json())
        return read_corpus(source, n, parts, target)

    return reader


def exact_lists(directory, manifest, n, m, semantic_search, scratch, to):
    """This process's lists (the neighbour calls are test_cluster_neighbours.py's)."""
    chunks = read_chunks(directory, manifest, texts=False)
    assert len(chunks) == n
    nearest(read_vectors(directory, manifest, chunks), m, "exact").save(to)


@pytest.mark.parametrize("parts", [1, 3, 7])
def test_ranges_of_rows_read_as_one_process(written, parts, tmp_path):
    with Index.open(written) as idx:
        chunks = read_chunks(written, idx.manifest)
        in_ranges(parts)(written, idx.manifest, len(chunks), tmp_path)
    got = load_extractions(tmp_path)  # left in parts, read joined
    one = CorpusReadings()
    expected = one.update(chunks, [], chunks)
    assert got.ids == [c.id for c in chunks]
    assert got.to_extractions() == expected.to_extractions()
    assert _page_strings(got) == _page_strings(expected)  # through each part's file
    # the state is saved in parts, one a call, the tables as read gone; joined, it is one's
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == sorted(
        ["offline-readings.npz", *(part_name(i) for i in range(parts))]
    )
    assert read_each(tmp_path) == len(chunks)
    state = CorpusReadings.load(tmp_path, chunks)
    assert (state.lower, state.titles, state.claims) == (one.lower, one.titles, one.claims)
    assert {t: list(k) for t, k in state.alias_keys.items()} == {
        t: list(k) for t, k in one.alias_keys.items()
    }
    assert state.table.ids == one.table.ids
    assert ExtractionTable(*_picked(state.table)).to_extractions() == expected.to_extractions()


def _page_strings(table):
    return [table.vocab.strings[p] if p >= 0 else None for p in table.pages.tolist()]


def _picked(table):
    return table.ids, table.vocab, table.entities, table.keywords(), table.triples, table.page


def test_a_missing_part_is_named(written, tmp_path):
    with Index.open(written) as idx:
        chunks = read_chunks(written, idx.manifest)
        in_ranges(3)(written, idx.manifest, len(chunks), tmp_path)
    (tmp_path / part_name(1)).unlink()
    with pytest.raises(FileNotFoundError, match=f"{part_name(1)}.*missing"):
        CorpusReadings.load(tmp_path, chunks)
    with pytest.raises(FileNotFoundError, match=part_name(1)):
        read_each(tmp_path)


def test_a_graph_build_whose_chunks_the_calls_read_builds_the_same_graphs(written, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(written, copy)
    build_graphs(copy, show_progress=False, tasks=GraphTasks(exact_lists, in_ranges(3)))
    with Index.open(written) as one, Index.open(copy) as other:
        assert one.manifest.graph["counts"] == other.manifest.graph["counts"]
        assert one.extractions == other.extractions
        for kind, edges in one.passage_graph.edges.items():
            assert (edges != other.passage_graph.edges[kind]).nnz == 0, kind
        assert one.knowledge_graph.triples == other.knowledge_graph.triples
    # the state the calls saved is one a later write brings up to date as one process's
    more = [
        replace(doc, id=f"{doc.id}-again", text=doc.text + " Once more.")
        for doc in load_documents(sample_dir() / "corpus.jsonl")[:3]
    ]
    for path in (written, copy):
        add_documents(path, more, show_progress=False)
    with Index.open(written) as one, Index.open(copy) as other:
        assert other.manifest.graph["incremental"]
        assert one.extractions == other.extractions
        for kind, edges in one.passage_graph.edges.items():
            assert (edges != other.passage_graph.edges[kind]).nnz == 0, kind


def test_rows_past_the_end_of_the_table_are_a_clear_error(written):
    from hopgraph.core.errors import IndexStateError

    with Index.open(written) as idx:
        source = (str(written), idx.manifest.model_dump_json())
        n = len(idx.chunks)
    assert len(chunk_rows(source, n - 2, n)) == 2
    with pytest.raises(IndexStateError, match=f"ends before row {n + 1}"):
        chunk_rows(source, n - 2, n + 1)


def test_frequencies_are_summed_by_string_hash_and_read_back_by_string():
    import numpy as np

    from hopgraph.graph_store.graphs.extraction.frequency_shards import summed
    from hopgraph.graph_store.graphs.extraction.table import Vocabulary
    from hopgraph.graph_store.graphs.extraction.title_table import string_hashes

    def part(strings, entity, word):
        return string_hashes(strings), np.array(entity), np.array(word)

    total = summed([
        part(["paris", "rome"], [2, 1], [0, 3]),
        part(["rome", "oslo"], [4, 0], [1, 1]),
    ])  # fmt: skip
    entity, word = total.of(Vocabulary(["oslo", "rome", "lima", "paris"]))
    assert entity.tolist() == [0, 5, 0, 2] and word.tolist() == [1, 4, 0, 0]
    nothing = summed([]).of(Vocabulary(["rome"]))
    assert [a.tolist() for a in nothing] == [[0], [0]]


def test_frequencies_summed_a_shard_at_a_time_are_the_whole_sum(tmp_path):
    import numpy as np

    from hopgraph.graph_store.graphs.extraction import frequency_shards as shards
    from hopgraph.graph_store.graphs.extraction.table import Vocabulary
    from hopgraph.graph_store.graphs.extraction.title_table import string_hashes

    words = [f"w{i}" for i in range(300)]
    rng = np.random.default_rng(0)
    parts = [
        (string_hashes(words[a:b]), rng.integers(0, 5, b - a), rng.integers(0, 5, b - a))
        for a, b in [(0, 200), (100, 300), (50, 60)]
    ]
    for count in (1, 3, 7):
        for n, part in enumerate(parts):
            shards.save_shards(part, tmp_path, f"p{n}.npz", count)
        for s in range(count):
            held = shards.SharedFrequencies.load(shards.shard_file(tmp_path, "p0.npz", s))
            assert (shards.shard_of(held.hashes, count) == s).all()
            files = [shards.shard_file(tmp_path, f"p{n}.npz", s) for n in range(len(parts))]
            shards.sum_shard(files, shards.shard_file(tmp_path, "sum.npz", s))
        vocab = Vocabulary([*words[::7], "missing"])
        found = shards.frequencies_in_shards(tmp_path, "sum.npz", count, vocab)
        whole = shards.summed(parts).of(vocab)
        assert [a.tolist() for a in found] == [a.tolist() for a in whole], count
    bounds = shards.shard_of(np.array([0, 2**63, 2**64 - 1], dtype=np.uint64), 5)
    assert bounds.tolist() == [0, 2, 4]  # ranges in hash order


def test_a_digest_read_a_block_at_a_time_is_the_whole_lists(monkeypatch):
    from hopgraph.graph_store.cluster import readings

    ids = [f"chunk-{i}" for i in range(11)]
    whole = readings.ordered_digest(ids)
    monkeypatch.setattr(readings, "DIGEST_BLOCK", 3)
    assert readings.ordered_digest(iter(ids)) == whole
    assert readings.ordered_digest(ids[::-1]) != whole  # the order tells
    assert readings.ordered_digest([]) == 0
