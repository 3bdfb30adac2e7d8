"""Graphs kept between writes equal a fresh build of the final corpus (property tests)."""

import json
import random
import time

import numpy as np
import pytest

from hopgraph.core.errors import IndexStateError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Document, Index, add_documents, build_index, delete_documents
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction.offline import title_keys
from hopgraph.graph_store.graphs.extraction.reading_table import READINGS_FILE
from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings, OfflineExtractor
from hopgraph.graph_store.graphs.semantic import nearest, update_nearest
from hopgraph.graph_store.index import graph_build
from hopgraph.graph_store.index.build import build_graphs
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.stores.vdb_chroma import ChromaVectorStore
from hopgraph.tools import make_retriever
from tests.conftest import ranking

SETTINGS = IndexSettings(model="hashing", chunk_tokens=24)
GRAPHS = GraphSettings(semantic_min_sim=0.1, max_df=4)
WORDS = "love river guy's film district new york city the of band stone hill lake".split()
TITLES = [
    "Love",
    "River Stone",
    "Guy's Hill",
    "New York (city)",
    "Lake, District",
    "The Band",
    "Film",
    "Stone Lake of Hill",
    "District",
    "York",
]


def random_chunk(rng: random.Random, i: int) -> Chunk:
    sentences = []
    for _ in range(rng.randint(1, 4)):
        words = [rng.choice(WORDS + TITLES) for _ in range(rng.randint(3, 9))]
        words = [w.capitalize() if rng.random() < 0.4 else w for w in words]
        if rng.random() < 0.3:
            words.insert(0, rng.choice(["He", "It", "In 1950", "The"]))
        sentences.append(" ".join(words) + ".")
    title = rng.choice([*TITLES, f"Page {i}"])
    return Chunk(f"c{i:03d}", f"d{i:03d}", title, " ".join(sentences))


@pytest.mark.parametrize("seed", range(20))
def test_any_sequence_of_adds_and_deletes_equals_a_fresh_extraction(seed):
    rng = random.Random(seed)
    corpus: dict[str, Chunk] = {}
    state = CorpusReadings()
    next_id = 0
    for _ in range(8):
        removed = rng.sample(sorted(corpus), k=min(len(corpus), rng.randint(0, 3)))
        removed_chunks = [corpus.pop(i) for i in removed]
        added = []
        for _ in range(rng.randint(0 if corpus else 1, 4)):
            added.append(random_chunk(rng, next_id))
            next_id += 1
        corpus.update({c.id: c for c in added})
        ordered = [corpus[i] for i in sorted(corpus)]
        got = state.update(ordered, removed_chunks, added).to_extractions()
        assert got == OfflineExtractor().extract(ordered)
        assert _kept_keys(state) == {c.title: title_keys(c.title) for c in ordered}


def _kept_keys(state: CorpusReadings) -> dict[str, tuple[str, ...]]:
    return {title: tuple(keys) for title, keys in state.alias_keys.items()}


@pytest.mark.parametrize("kept_keys", [True, False])
def test_a_saved_state_resumes_with_its_titles_keys_or_works_them_out_once(tmp_path, kept_keys):
    rng = random.Random(7)
    chunks = [random_chunk(rng, i) for i in range(12)]
    state = CorpusReadings()
    state.update(chunks[:8], [], chunks[:8])
    state.save(tmp_path)
    if not kept_keys:  # as an earlier hopgraph saved it
        meta = tmp_path / READINGS_FILE.replace(".npz", ".json")
        data = json.loads(meta.read_text(encoding="utf-8"))
        del data["alias_keys"]
        meta.write_text(json.dumps(data), encoding="utf-8")
    resumed = CorpusReadings.load(tmp_path, chunks[:8])
    assert resumed is not None
    final = chunks[2:]
    got = resumed.update(final, chunks[:2], chunks[8:]).to_extractions()
    assert got == OfflineExtractor().extract(final)
    assert _kept_keys(resumed) == {c.title: title_keys(c.title) for c in final}


def test_a_new_title_is_linked_in_chunks_written_before_it():
    old = Chunk("a", "a", "Alpha", "Alpha met the Zeta Band.")
    state = CorpusReadings()
    [before] = state.update([old], [], [old]).to_extractions()
    assert "zeta band" in before.entities  # an unlinked name
    page = Chunk("b", "b", "Zeta", "Zeta is a town.")
    got = state.update([old, page], [], [page]).to_extractions()
    assert "zeta" in got[0].entities  # re-read: the longest alias is now the page
    assert got == OfflineExtractor().extract([old, page])


@pytest.mark.parametrize(
    "text",
    ["We met Guy's brother.", "Guy, then Mara.", "The GUY left.", "Zeta, Guy, and Mara met."],
)
def test_a_new_title_reaches_chunks_that_name_it_only_as_a_possessive_or_between_commas(text):
    old = Chunk("a", "a", "Alpha", text)
    state = CorpusReadings()
    state.update([old], [], [old])
    page = Chunk("b", "b", "Guy (name)", "Guy is a name.")
    got = state.update([old, page], [], [page]).to_extractions()
    assert got == OfflineExtractor().extract([old, page])
    assert "guy name" in got[0].entities  # re-read: "Guy" now links to the page


def vector_writes(
    rng: np.random.Generator,
    first: tuple[int, int],
    writes: int,
    gone: int,
    added: int,
    keep: int,
    start: int,
):
    """Yield a random corpus of unit vectors, then the corpus after each of ``writes`` writes.

    First ``(None, matrix)``, its size drawn from the range ``first``; then, after each write
    (up to ``gone`` rows removed, ``keep`` left at least, and up to ``added`` new ones, ids from
    ``start``), ``(old_to_new, matrix)``: each earlier row's new row (-1: removed) and the new
    matrix, rows by id.
    """

    def unit() -> np.ndarray:
        v = rng.standard_normal(8).astype(np.float32)
        return v / np.linalg.norm(v)

    vectors = {i: unit() for i in range(rng.integers(*first))}
    ids = sorted(vectors)
    yield None, np.stack([vectors[i] for i in ids])
    for _ in range(writes):
        for out in rng.choice(ids, size=min(len(ids) - keep, rng.integers(0, gone)), replace=False):
            del vectors[out]
        for _ in range(rng.integers(0, added)):
            vectors[start] = unit()
            start += 1
        new_ids = sorted(vectors)
        position = {i: row for row, i in enumerate(new_ids)}
        yield np.array([position.get(i, -1) for i in ids]), np.stack([vectors[i] for i in new_ids])
        ids = new_ids


@pytest.mark.parametrize("seed", range(10))
def test_neighbour_lists_kept_between_writes_equal_a_fresh_search(seed):
    writes = vector_writes(np.random.default_rng(seed), (1, 30), 6, 6, 5, keep=1, start=100)
    lists = nearest(next(writes)[1], 4)
    for old_to_new, matrix in writes:
        lists = update_nearest(lists, old_to_new, matrix, k=2)
        fresh = nearest(matrix, 4)
        # Every list is an exact prefix of a fresh search's, at least k (= 2) long.
        for row, fresh_row in zip(lists.rows, fresh.rows, strict=True):
            listed = int((row >= 0).sum())
            assert listed >= min(2, len(matrix) - 1)
            assert (row[:listed] == fresh_row[:listed]).all()


def _doc(rng: random.Random, i: int) -> Document:
    chunk = random_chunk(rng, i)
    return Document(f"doc{i:03d}", chunk.title, chunk.text)


def _state(path) -> dict:
    """Everything a write produces, by id (row order aside), and what retrievers answer."""
    with Index.open(path) as idx:
        graph, kg = idx.passage_graph, idx.knowledge_graph
        edges = {}
        for kind, matrix in graph.edges.items():
            coo = matrix.tocoo()
            edges[kind] = {
                (graph.ids[i], graph.ids[j]): round(float(w), 4)
                for i, j, w in zip(coo.row, coo.col, coo.data, strict=True)
            }
        store = ChromaVectorStore(idx.vectors.location.triples())
        stored = store.collection.get(include=[])["ids"]  # every row: none left behind
        store.close()
        answers = {
            name: [
                ranking(make_retriever(name, idx).retrieve(q, 4))
                for q in ("Santo Tomas military", "river stone lake", "Love film district")
            ]
            for name in ("bm25", "dense", "gnn_ret")
        }
        return {
            "chunks": sorted(idx.chunks),
            "extractions": sorted(e.to_dict().items().__repr__() for e in idx.extractions),
            "edges": edges,
            "entities": kg.entities,
            "triples": sorted((t.id, t.text, t.chunk_id) for t in kg.triples),
            "stored_triples": sorted(stored),
            "answers": answers,
        }


@pytest.mark.parametrize("seed", range(6))
def test_any_sequence_of_writes_equals_a_fresh_build(tmp_path, seed):
    """Property: adds and deletes in any order leave what a fresh build of the result has.

    Odd seeds embed no triples, so a forked child builds the knowledge graph.
    """
    graphs = GRAPHS.model_copy(update={"embed_triples": seed % 2 == 0})
    rng = random.Random(seed)
    docs = {d.id: d for d in (_doc(rng, i) for i in range(6))}
    grown = tmp_path / "grown"
    build_index(list(docs.values()), grown, SETTINGS, show_progress=False)
    build_graphs(grown, graphs, show_progress=False)
    next_id = 6
    for _ in range(4):
        if rng.random() < 0.5 and len(docs) > 2:
            gone = rng.sample(sorted(docs), k=rng.randint(1, len(docs) - 1))
            delete_documents(grown, gone)
            for doc_id in gone:
                del docs[doc_id]
        else:
            new = [_doc(rng, next_id + j) for j in range(rng.randint(1, 3))]
            next_id += len(new)
            add_documents(grown, new, show_progress=False)
            docs.update({d.id: d for d in new})
    fresh = tmp_path / "fresh"
    build_index(list(docs.values()), fresh, SETTINGS, show_progress=False)
    build_graphs(fresh, graphs, show_progress=False)
    grown_state, fresh_state = _state(grown), _state(fresh)
    assert grown_state == fresh_state
    assert any(grown_state["edges"].values()) and grown_state["triples"]
    with Index.open(grown) as idx:
        assert idx.manifest.graph["incremental"] and idx.manifest.generation == 6


def test_reading_in_worker_processes_equals_reading_in_one(monkeypatch):
    from hopgraph.graph_store.graphs.extraction import readings

    rng = random.Random(7)
    chunks = sorted((random_chunk(rng, i) for i in range(30)), key=lambda c: c.id)
    alone = OfflineExtractor().extract(chunks)
    monkeypatch.setattr(readings, "PARALLEL_FROM", 1)
    monkeypatch.setattr(readings, "BATCH", 4)
    monkeypatch.setattr(readings.os, "cpu_count", lambda: 2)
    spawned = []
    real_pool = readings.ProcessPoolExecutor
    monkeypatch.setattr(
        readings, "ProcessPoolExecutor", lambda *a, **k: spawned.append(1) or real_pool(*a, **k)
    )
    assert OfflineExtractor().extract(chunks) == alone
    assert spawned  # the workers did the reading


def test_a_knowledge_graph_built_in_a_child_that_fails_fails_the_write(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    path = tmp_path / "idx"
    build_index([_doc(random.Random(1), i) for i in range(4)], path, SETTINGS, show_progress=False)
    monkeypatch.setattr(graph_build, "build_knowledge_graph", broken)
    settings = GRAPHS.model_copy(update={"embed_triples": False})
    with pytest.raises(IndexStateError, match="knowledge graph failed: RuntimeError: boom"):
        build_graphs(path, settings, show_progress=False)
    with Index.open(path) as idx:
        assert idx.manifest.graph is None  # nothing committed


def test_a_failed_write_waits_for_its_neighbours_child_and_rolls_back(tmp_path, monkeypatch):
    import multiprocessing

    path = tmp_path / "idx"
    rng = random.Random(2)
    build_index([_doc(rng, i) for i in range(6)], path, SETTINGS, show_progress=False)
    build_graphs(path, GRAPHS, show_progress=False)
    before = sorted(p.name for p in path.iterdir())
    searched = []
    real = graph_build.update_nearest

    def slow_search(*args, **kwargs):  # in the child: still at work when the extraction fails
        time.sleep(0.5)
        searched.append(1)  # (the child's own list: never seen here)
        return real(*args, **kwargs)

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(graph_build, "update_nearest", slow_search)
    monkeypatch.setattr(graph_build, "_extract", broken)
    with pytest.raises(RuntimeError, match="boom"):
        add_documents(path, [_doc(rng, 99)], show_progress=False)
    assert not multiprocessing.active_children()  # joined before the rollback
    assert not searched  # the search ran in a child, not here
    assert sorted(p.name for p in path.iterdir()) == before  # its folder is gone
