"""GNN-Ret's list reranker: its features, its file, and the order and scores it gives."""

import itertools
import json

import numpy as np
import pytest

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.tools import make_retriever
from hopgraph.tools.gnn_ret.list_rerank import (
    FEATURES,
    Listed,
    ListReranker,
    fits,
    list_features,
    list_reranker,
    shipped,
    words,
)
from hopgraph.tools.gnn_ret.retriever import RERANKED

QUESTION = (
    "When did military instruction start at the university where the cartoonist who drew "
    "Slice of Life was educated?"
)  # multi-hop by its words alone (p 0.77): this index's model has no question-vector classifier


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


ALCALA = "When did military instruction start at the place where Larry Alcala was educated?"


def _listed(index, n=6):
    return make_retriever("gnn_ret", index, rerank=False).listed(ALCALA, n)


def _model(index, weights, bias=0.0):
    size = len(FEATURES)
    return ListReranker(index.manifest.settings.model, np.zeros(size), np.ones(size),
                        np.asarray(weights, dtype=float), bias)  # fmt: skip


def test_features_describe_each_listed_passage(index):
    listed = _listed(index)
    x = list_features(index, ALCALA, listed)
    assert x.shape == (len(listed.rows), len(FEATURES))
    column = {name: x[:, i] for i, name in enumerate(FEATURES)}
    np.testing.assert_allclose(column["rank"], 1 / (1 + np.arange(len(listed.rows))))
    np.testing.assert_allclose(column["score"], listed.scores)
    assert column["bm25"].max() == pytest.approx(1.0)  # scaled by the list's best
    assert column["like_above"][0] == 0.0 and np.all(column["like_above"][1:] > -1.01)
    np.testing.assert_array_equal(column["by_message"], listed.by_message)
    # the passage on Larry Alcala: its title's words are all in the question
    alcala = [index.chunks[index.ids[r]].title == "Larry Alcala" for r in listed.rows.tolist()]
    assert column["title_in_question"][alcala.index(True)] == 1.0


def test_a_list_of_nothing_has_no_features(index):
    empty = Listed(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, bool))
    assert list_features(index, QUESTION, empty).shape == (0, len(FEATURES))


def test_words_are_lower_cased_and_three_letters_or_more():
    assert words("The U.S. Army of Santo Tomas, 1936") == {"the", "army", "santo", "tomas", "1936"}


def test_the_retriever_orders_by_the_rerankers_probability(index):
    retriever = make_retriever("gnn_ret", index, keep=0, rerank=False)
    plain = retriever.retrieve(QUESTION, 5)
    # weigh only "rank", negatively: the reranked list is the propagation's list reversed
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("rank")] = -5.0
    retriever.reranker = _model(index, weights)
    hits = retriever.retrieve(QUESTION, 5)
    listed = retriever.listed(QUESTION, 30)
    assert [h.id for h in hits] == [index.ids[r] for r in listed.rows[::-1][:5].tolist()]
    assert [h.id for h in hits] != [h.id for h in plain]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    for rank, hit in enumerate(hits, start=1):
        method, reranked = hit.provenance[-2:]
        assert reranked.step == RERANKED and reranked.rank == rank
        assert reranked.score == pytest.approx(hit.score) and 0 < hit.score < 1
        assert method.step in {"own distance", "message from a top-K neighbour"}
    # a question one passage answers keeps the propagation's order (the reranker's gate)
    single = "What is the seat of Mountrail County?"
    assert retriever.reranks(QUESTION) and not retriever.reranks(single)
    retriever.reranker, unranked = None, [h.id for h in retriever.retrieve(single, 5)]
    retriever.reranker = _model(index, weights)
    assert [h.id for h in retriever.retrieve(single, 5)] == unranked


class _Sections:
    """An index's chunks and ids, each chunk under the heading given (or none: "")."""

    def __init__(self, sections):
        self.ids = [f"c{i}" for i in range(len(sections))]
        pairs = zip(self.ids, sections, strict=True)
        self.chunks = {i: Chunk(i, "d", "Page", "text", section=s) for i, s in pairs}


def test_a_list_half_under_headings_is_a_documentation_sites_and_is_not_reranked(
    index, monkeypatch
):
    assert fits(index, _listed(index).rows)  # encyclopedia passages: no headings
    assert fits(_Sections(["", "Usage", ""]), np.arange(3))
    assert not fits(_Sections(["Usage", ""]), np.arange(2))  # half: a documentation list
    assert not fits(_Sections(["API > dump", "Usage", ""]), np.arange(3))
    assert not fits(_Sections([]), np.arange(0))
    # the retriever asks, and a list that does not fit keeps the propagation's order
    retriever = make_retriever("gnn_ret", index, keep=0, rerank=False)
    plain = [h.id for h in retriever.retrieve(QUESTION, 5)]
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("rank")] = -5.0  # the list reversed, where it reranks
    retriever.reranker = _model(index, weights)
    assert [h.id for h in retriever.retrieve(QUESTION, 5)] != plain
    monkeypatch.setattr("hopgraph.tools.gnn_ret.retriever.fits", lambda *_: False)
    hits = retriever.retrieve(QUESTION, 5)
    assert [h.id for h in hits] == plain
    assert all(h.provenance[-1].step != RERANKED for h in hits)


def test_a_saved_reranker_reads_back_and_one_on_other_features_is_refused(index, tmp_path):
    model = _model(index, np.linspace(-1, 1, len(FEATURES)), 0.25)
    model.save(tmp_path / "r.json", {"fitted_by": "test"})
    again = ListReranker.load(tmp_path / "r.json")
    x = np.random.default_rng(0).normal(size=(4, len(FEATURES)))
    np.testing.assert_allclose(again.scores(x), model.scores(x), atol=1e-6)
    body = json.loads((tmp_path / "r.json").read_text())
    body["features"] = body["features"][:-1]
    (tmp_path / "old.json").write_text(json.dumps(body))
    with pytest.raises(IndexStateError, match="other features"):
        ListReranker.load(tmp_path / "old.json")


def test_rerank_takes_a_file_refusing_one_of_another_model(index, tmp_path):
    _model(index, np.zeros(len(FEATURES))).save(tmp_path / "mine.json", {})
    assert list_reranker(index, tmp_path / "mine.json") is not None
    assert list_reranker(index, False) is None
    other = ListReranker("all-MiniLM-L6-v2", *[np.zeros(len(FEATURES))] * 3, 0.0)
    other.save(tmp_path / "minilm.json", {})
    with pytest.raises(InputError, match="fitted on all-MiniLM-L6-v2"):
        make_retriever("gnn_ret", index, rerank=str(tmp_path / "minilm.json"))
    with pytest.raises(InputError, match="no list reranker"):
        list_reranker(index, tmp_path / "missing.json")


def test_the_shipped_reranker_is_minilms_and_none_runs_unless_asked(index):
    model = shipped("all-MiniLM-L6-v2")
    assert model is not None and model.weights.shape == (len(FEATURES),)
    assert shipped("hashing") is None  # this index's model: it ranks as the propagation does
    assert make_retriever("gnn_ret", index, preset="paper").reranker is None
    assert make_retriever("gnn_ret", index).reranker is None  # off unless asked for
