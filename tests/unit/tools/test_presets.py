"""Presets (tuned | paper), the no-harm guard and the options they switch."""

import numpy as np
import pytest

from hopgraph.core.errors import UnknownMethodError
from hopgraph.tools import PRESETS, RETRIEVERS, make_retriever
from hopgraph.tools.gnn_ret.channels import PAPER_CHANNELS
from hopgraph.tools.guards import guard, hop_classifier
from hopgraph.tools.guards.guard import keep_top
from hopgraph.tools.guards.hop_classifier import (
    HopClassifier,
    VectorHopClassifier,
    features,
    multi_hop,
    shipped,
    vector_path,
)
from hopgraph.tools.shared.hits import Hit, Provenance, order_note

GRAPH_METHODS = ["gnn_ret", "iier", "naive_ge"]


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


def hit(chunk_id, score, method="m"):
    kind = "cosine" if method == "dense" else "logit"
    return Hit(
        chunk_id, score, "", "", chunk_id, (Provenance(method, "s", 1, score),), score_kind=kind
    )


def test_keep_top_puts_the_kept_first_and_every_hit_keeps_its_methods_score():
    anchors = [hit("a", 0.4, "dense"), hit("d", 0.35, "dense")]
    ranked = [hit("b", 0.9), hit("a", 0.8), hit("c", 0.3)]
    out = keep_top(anchors, ranked, 4, "m")
    assert [h.id for h in out] == ["a", "d", "b", "c"]
    # "a" as the method scored it; "d", which the method did not rank, shows the method's score
    # below it (issue 74: one scale a list), its cosine its own
    assert [h.score for h in out] == [0.8, 0.9, 0.9, 0.3]
    assert [h.own_score for h in out] == [0.8, 0.35, 0.9, 0.3]
    assert {h.score_kind for h in out} == {"logit"}
    assert out[1].provenance[-1].score == 0.35  # the kept step records dense's cosine
    assert [h.provenance[-1].step for h in out] == ["kept: dense top", "kept: dense top", "s", "s"]
    assert "the guard keeps dense retrieval's first chunks on top" in order_note(out)
    assert order_note(keep_top([hit("b", 0.9, "dense")], ranked, 3, "m")) is None
    assert len(keep_top(anchors, ranked, 2, "m")) == 2
    # k = 1: the method's hits cut off below still give the scale
    assert [(h.score, h.score_kind) for h in keep_top(anchors[1:], ranked, 1, "m")] == [
        (0.9, "logit")
    ]
    # a method that ranked nothing: the kept chunk can only show its cosine, and says so
    assert [(h.score, h.score_kind) for h in keep_top(anchors[1:], [], 2, "m")] == [
        (0.35, "cosine")
    ]


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_the_guard_keeps_dense_retrievals_first_chunk_first(index, method):
    query = "Which county seat is Stanley?"
    dense_first = make_retriever("dense", index).retrieve(query, 1)[0].id
    guarded = make_retriever(method, index, keep=1, selective=False).retrieve(query, 4)
    assert guarded[0].id == dense_first
    assert len(guarded) == 4 and len({h.id for h in guarded}) == 4
    off = make_retriever(method, index, keep=0)
    assert off.keep == 0


def test_the_guard_keeps_a_second_chunk_only_within_the_margin(index):
    query = "Which county seat is Stanley?"
    top = make_retriever("dense", index).retrieve(query, 2)
    gap = top[0].score - top[1].score
    wide = make_retriever("gnn_ret", index, keep=2, margin=gap + 0.01, selective=False)
    wide = wide.retrieve(query, 3)
    assert [h.id for h in wide[:2]] == [h.id for h in top]
    narrow = make_retriever("gnn_ret", index, keep=2, margin=max(gap - 0.01, 0.0), selective=False)
    assert narrow.retrieve(query, 3)[1].provenance[-1].step != "kept: dense top"


MULTI_HOP_QUESTION = (
    "When did military instruction start at the place where Larry Alcala was educated?"
)
SINGLE_HOP_QUESTION = "who wrote the first declaration of human rights"


def test_the_hop_classifier_tells_a_chain_of_relations_from_a_plain_question():
    model = shipped()
    assert model.multi_hop(MULTI_HOP_QUESTION) >= guard.MULTI_HOP
    assert model.multi_hop(SINGLE_HOP_QUESTION) < guard.MULTI_HOP
    assert features("Who's first, A?") == ["who", "s", "first", "a", "who s", "s first", "first a"]


def test_the_hop_classifier_keeps_its_weights_through_save_and_load(tmp_path):
    model = HopClassifier({"born": 1.5, "who": -0.25, "unused": 0.0}, bias=0.1)
    model.save(tmp_path / "m.json", {"fitted_by": "test"})
    again = HopClassifier.load(tmp_path / "m.json")
    assert again.weights == {"born": 1.5, "who": -0.25} and again.bias == 0.1
    assert again.multi_hop("who was born") == pytest.approx(model.multi_hop("who was born"))


def test_the_vector_classifier_is_averaged_in_only_for_its_own_model(tmp_path, monkeypatch):
    model = VectorHopClassifier("some/model", np.array([2.0, 0.0], dtype=np.float32), bias=0.0)
    model.save(tmp_path / "v.json", {"fitted_by": "test"})
    again = VectorHopClassifier.load(tmp_path / "v.json")
    assert again.model == "some/model" and again.multi_hop(np.array([1.0, 0.0])) == pytest.approx(
        1 / (1 + np.exp(-2.0))
    )
    assert vector_path("some/model").name == "hop_classifier-some_model.json"
    monkeypatch.setattr(hop_classifier, "WEIGHTS", tmp_path)
    hop_classifier.shipped_vector.cache_clear()
    (tmp_path / "v.json").rename(tmp_path / "hop_classifier-some_model.json")
    try:
        words = shipped().multi_hop(MULTI_HOP_QUESTION)
        vector = np.array([1.0, 0.0], dtype=np.float32)
        both = multi_hop(MULTI_HOP_QUESTION, vector, "some/model")
        assert both == pytest.approx((words + again.multi_hop(vector)) / 2)
        assert multi_hop(MULTI_HOP_QUESTION, vector, "hashing") == words  # none ships for it
        assert multi_hop(MULTI_HOP_QUESTION, None, "some/model") == words
        assert multi_hop(MULTI_HOP_QUESTION, np.ones(3), "some/model") == words  # other size
    finally:
        hop_classifier.shipped_vector.cache_clear()


def test_the_selective_guard_stands_aside_only_when_multi_hop_and_dense_is_unsure(index):
    def top(lead):
        return [hit("a", 0.7), hit("b", 0.7 - lead)]

    tuned = make_retriever("gnn_ret", index)
    assert tuned.stands_aside(MULTI_HOP_QUESTION, top(guard.CONFIDENT / 2))
    assert not tuned.stands_aside(MULTI_HOP_QUESTION, top(guard.CONFIDENT * 2))
    assert not tuned.stands_aside(SINGLE_HOP_QUESTION, top(guard.CONFIDENT / 2))
    # IIER: dense's second within IIER's margin is no sure lead (the place the guard decides)
    iier = make_retriever("iier", index)
    assert iier.confident == iier.margin == 0.15
    assert iier.stands_aside(MULTI_HOP_QUESTION, top(0.12))
    assert not tuned.stands_aside(MULTI_HOP_QUESTION, top(0.12))
    with pytest.raises(ValueError, match="confident"):
        make_retriever("gnn_ret", index, confident=-0.1)


@pytest.mark.parametrize("method", GRAPH_METHODS)
def test_standing_aside_gives_the_methods_own_ranking(index, method, monkeypatch):
    query = "Which county seat is Stanley?"
    own = [h.id for h in make_retriever(method, index, keep=0).retrieve(query, 4)]
    always = [h.id for h in make_retriever(method, index, selective=False).retrieve(query, 4)]
    monkeypatch.setattr(guard, "MULTI_HOP", 0.0)  # every question looks multi-hop
    unsure = {"selective": True, "confident": 2.0}  # dense is never sure (leads are below 2)
    aside = make_retriever(method, index, **unsure).retrieve(query, 4)
    assert [h.id for h in aside] == own
    monkeypatch.setattr(guard, "MULTI_HOP", 1.1)  # none does
    kept = make_retriever(method, index, **unsure).retrieve(query, 4)
    assert [h.id for h in kept] == always


def test_standing_aside_still_keeps_dense_first_within_the_floor(index, monkeypatch):
    query = "Which county seat is Stanley?"
    dense_first = make_retriever("dense", index).retrieve(query, 1)[0].id
    monkeypatch.setattr(guard, "MULTI_HOP", 0.0)
    monkeypatch.setattr(guard, "FLOOR", 1)  # aside, yet dense's first may not fall below 1st
    hits = make_retriever("gnn_ret", index, confident=2.0).retrieve(query, 4)
    assert hits[0].id == dense_first and len({h.id for h in hits}) == 4
    # scores are gnn_ret's own: where they rise down the list, the list says why
    ordered = [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert ordered or "the guard keeps dense" in order_note(hits)


def test_keep_top_can_place_the_kept_lower_down():
    ranked = [hit("b", 0.9), hit("c", 0.8), hit("a", 0.3), hit("d", 0.2)]
    out = keep_top([hit("a", 0.7, "dense")], ranked, 4, "m", at=1)
    assert [h.id for h in out] == ["b", "a", "c", "d"]
    assert [h.score for h in out] == [0.9, 0.3, 0.8, 0.2]  # "a" as the method scored it


@pytest.mark.parametrize("bad", [-1, True, 1.5])
def test_the_guard_refuses_a_bad_keep(index, bad):
    with pytest.raises(ValueError, match="keep"):
        make_retriever("gnn_ret", index, keep=bad)


def test_paper_presets_follow_the_papers(index):
    gnn = make_retriever("gnn_ret", index, preset="paper")
    assert gnn.channels == PAPER_CHANNELS and gnn.base == "dense" and not gnn.only_lower
    assert gnn.keep == 0
    iier = make_retriever("iier", index, preset="paper")
    assert (iier.max_length, iier.order, iier.keep) == (5, "chains", 0)
    naive = make_retriever("naive_ge", index, preset="paper")
    assert (naive.base_depth, naive.fusion, naive.keep) == (None, "rrf", 0)
    assert (iier.seed_order, iier.dense_seeds) == ("cover", 0)


def test_explicit_options_override_the_preset(index):
    assert make_retriever("iier", index, preset="paper", max_length=2).max_length == 2


def test_every_preset_builds_every_llm_free_method(index):
    for preset in PRESETS:
        for name, cls in RETRIEVERS.items():
            if not (cls.needs_llm or cls.needs_weights):
                query = "Stanley is a city in Mountrail County, North Dakota"
                hits = make_retriever(name, index, preset=preset).retrieve(query, 3)
                assert len(hits) == 3, (preset, name)


def test_an_unknown_preset_is_a_clear_error(index):
    with pytest.raises(UnknownMethodError, match="tuned"):
        make_retriever("hybrid", index, preset="fast")


def test_iier_orders_chains_whole_or_breadth_first():
    from hopgraph.tools.iier.retriever import flatten_chains

    chains = [[1, 2, 3], [4, 5]]
    assert list(flatten_chains(chains, "chains")) == [1, 2, 3, 4, 5]
    assert list(flatten_chains(chains, "breadth")) == [1, 4, 2, 5, 3]


def test_agent_presets_fill_only_what_is_not_given():
    from hopgraph.agents.gear.context import Context

    assert Context.preset_settings("paper") == {"read_k": 30}
    assert Context.preset_settings("tuned") == {}
    with pytest.raises(UnknownMethodError):
        Context.preset_settings("nope")


def test_cli_offers_exactly_the_presets():
    from hopgraph.cli import build_parser

    parser = build_parser()
    for argv in (["retrieve", "q"], ["eval", "--data", "d"], ["explain", "q", "--out", "x"]):
        assert parser.parse_args([*argv, "--preset", "paper"]).preset == "paper"
        assert parser.parse_args(argv).preset == "tuned"
    with pytest.raises(SystemExit):
        parser.parse_args(["retrieve", "q", "--preset", "fast"])
    assert set(PRESETS) == {"tuned", "paper"}


def test_the_paper_reader_takes_passages_up_to_a_token_budget(index):
    from hopgraph.agents.retrieve_answer.context import Context
    from hopgraph.agents.retrieve_answer.graph import within_budget

    hits = make_retriever("dense", index).retrieve("Stanley North Dakota", 6)
    sizes = [index.embedder.count_tokens(f"{h.title}\n{h.text}") for h in hits]
    kept = within_budget(hits, sizes[0] + sizes[1], index)
    assert [h.id for h in kept] == [h.id for h in hits[:2]]
    assert len(within_budget(hits, 1, index)) == 1  # the first passage always goes in
    assert Context.preset_settings("paper") == {"token_budget": 3500}
