import json

import pytest

from hopgraph.core.errors import InputError, UnknownMethodError
from hopgraph.graph_store import Index
from hopgraph.graph_store.stores.vector_search import Cosines
from hopgraph.tools import RETRIEVERS, make_retriever, parse_methods
from hopgraph.tools.frameworks.langchain import RetrieveInput, retrieval_tools
from hopgraph.tools.shared.hits import SCORE_KINDS, order_note


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


LLM_FREE = sorted(n for n, c in RETRIEVERS.items() if not (c.needs_llm or c.needs_weights))


@pytest.mark.parametrize("method", LLM_FREE)
def test_every_method_ranks_the_matching_passage_first(index, method):
    hits = make_retriever(method, index).retrieve("Mountrail County seat Stanley", 3)
    assert hits[0].doc_id == "d5"
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) or order_note(hits) is not None
    assert hits[0].provenance[-1].method == method
    assert len(hits) == 3


def test_hybrid_keeps_the_provenance_of_both_parts(index):
    hit = make_retriever("hybrid", index).retrieve("Mountrail County seat Stanley", 1)[0]
    assert [p.method for p in hit.provenance] == ["bm25", "dense", "hybrid"]
    assert [p.rank for p in hit.provenance] == [1, 1, 1]
    assert hit.provenance[-1].step == "rrf"
    assert hit.score == pytest.approx(2 / 61) == pytest.approx(hit.provenance[-1].score)


def test_k_larger_than_corpus_and_stopword_only_query(index):
    assert len(make_retriever("dense", index).retrieve("Stanley", 100)) == 6
    assert make_retriever("bm25", index).retrieve("the of and", 5) == []


@pytest.mark.parametrize(("query", "k"), [("", 5), ("   ", 5), ("ok", 0), ("ok", -1), ("ok", 1.5)])
def test_bad_query_or_k(index, query, k):
    with pytest.raises(InputError):
        make_retriever("bm25", index).retrieve(query, k)


def test_unknown_methods(index):
    with pytest.raises(UnknownMethodError, match="choose one of"):
        make_retriever("colbert", index)
    with pytest.raises(UnknownMethodError, match="colbert, nope"):
        parse_methods("bm25,colbert,nope")
    assert parse_methods(" bm25 , hybrid ") == ["bm25", "hybrid"]


def test_retrievers_as_langchain_tools(index):
    tools = {t.name: t for t in retrieval_tools(index)}
    assert set(tools) == {f"retrieve_{name}" for name in LLM_FREE}
    tool = tools["retrieve_hybrid"]
    assert tool.args_schema is RetrieveInput
    assert "query" in tool.args and tool.description
    message = tool.invoke(
        {
            "type": "tool_call",
            "id": "c1",
            "name": tool.name,
            "args": {"query": "Where is Stanley?", "k": 2},
        }
    )
    assert "id=d6" in message.content
    assert [h.doc_id for h in message.artifact][:1] == ["d6"]
    with pytest.raises(Exception, match="greater than or equal to 1"):
        tool.invoke({"query": "x", "k": 0})


def test_gnn_ret_names_the_link_that_pulled_a_bridge_passage_in(index):
    gnn = make_retriever("gnn_ret", index, keep=0)  # the method itself, without the guard
    hits = gnn.retrieve("Larry Alcala Filipino cartoonist", 2)
    assert [h.id for h in hits] == ["d1", "d2"]
    assert hits[0].provenance[-1].step == "own distance"
    # d1 mentions the University of Santo Tomas: the link channel (α 0.2) carries its message
    assert hits[1].provenance[-1].step == "message from a top-K neighbour"
    assert hits[1].provenance[-1].via == ("d1", "link")


def test_iier_keywords_seed_and_chain(index):
    # the paper's seeds (set cover only, in cover order), without the guard
    iier = make_retriever("iier", index, max_length=2, seed_order="cover", dense_seeds=0, keep=0)
    question = "When did military instruction start where Larry Alcala was educated?"
    assert iier.question_keywords(question) == {"larry alcala"}  # entities, not plain words
    rows = {chunk_id: row for row, chunk_id in enumerate(iier.ids)}
    vector = index.embed_query(question)
    similarity = Cosines(index.vector_search, vector)  # the cosines of the chunks reached
    assert iier.seeds({"larry alcala"}, similarity) == [rows["d1"]]
    # d1 mentions the University of Santo Tomas, whose page d2 is linked by an entity edge
    assert iier.chain(rows["d1"], similarity, vector) == [rows["d1"], rows["d2"]]
    hits = iier.retrieve(question, 3)
    assert [h.id for h in hits[:2]] == ["d1", "d2"]
    assert [p.step for h in hits[:2] for p in h.provenance] == ["seed", "hop 1"]
    assert hits[1].provenance[0].via == ("d1", "d2")
    assert hits[2].provenance[-1].step == "base retrieval"  # chains ran out: the base fills
    # a question naming nothing known falls back to its words, and always has a seed
    assert iier.seeds(set(), similarity) == [int(index.similarities(vector).argmax())]


def test_iier_reads_question_keywords_with_an_llm(index):
    from tests.fakes import ScriptedChatModel

    chat = ScriptedChatModel(respond=lambda prompt: 'Keywords: ["Larry Alcala", "  "]')
    iier = make_retriever("iier", index, max_length=2, chat=chat)
    assert iier.question_keywords("Where was the cartoonist educated?") == {"larry alcala"}
    assert "Where was the cartoonist educated?" in chat.calls[-1]
    assert iier.retrieve("Where was the cartoonist educated?", 2)[0].id == "d1"


def test_iier_repairs_one_unreadable_keyword_reply_then_falls_back(index, caplog):
    from tests.fakes import ScriptedChatModel

    replies = iter(["the keywords are Larry Alcala", '["Larry Alcala"]'])
    chat = ScriptedChatModel(respond=lambda prompt: next(replies))
    assert make_retriever("iier", index, chat=chat).question_keywords("q?") == {"larry alcala"}
    assert "Your previous reply could not be read (" in chat.calls[1]
    stubborn = ScriptedChatModel(respond=lambda prompt: "no list here")
    with caplog.at_level("WARNING", logger="hopgraph.tools.iier.retriever"):
        keys = make_retriever("iier", index, chat=stubborn).question_keywords(
            "Where was Larry Alcala?"
        )
    assert keys == {"larry alcala"}  # found without the LLM, as with no LLM at all
    assert len(stubborn.calls) == 2  # the ask and its one repair
    assert [(r.name, r.levelname) for r in caplog.records] == [
        ("hopgraph.tools.iier.retriever", "WARNING")
    ]


def test_sync_ge_reads_facts_links_them_and_expands(index):
    from hopgraph.tools.gear.retriever import read_facts
    from tests.fakes import ScriptedChatModel

    assert read_facts('Facts: ("A b", "born in", "C"), ("", "x", "y") and more') == [
        "A b born in C"
    ]
    model = ScriptedChatModel(respond=lambda prompt: '("Mountrail County", "seat", "Stanley")')
    sync = make_retriever("sync_ge", index, chat=model, base="bm25")
    hits = sync.retrieve("Where is the county seat of Van Hook Township?", 4)
    assert len(model.calls) == 1
    assert "Document: Van Hook Township" in model.calls[0]
    assert "Question: Where is the county seat of Van Hook Township?" in model.calls[0]
    linked = sync.initial_triples("q", [])
    assert "mountrail county" in index.knowledge_graph.triples[linked[0]].text
    chained = [h for h in hits if h.provenance[-1].step == "triple chain"]
    assert {"d5"} <= {h.doc_id for h in chained}
    silent = make_retriever(
        "sync_ge", index, chat=ScriptedChatModel(respond=lambda p: "nothing"), base="bm25"
    )
    naive = make_retriever("naive_ge", index, base="bm25", preset="paper")  # SyncGE's fusion
    question = "Where is the county seat of Van Hook Township?"
    assert [h.id for h in silent.retrieve(question, 4)] == [
        h.id for h in naive.retrieve(question, 4)
    ]


def test_sync_ge_without_an_llm_says_what_to_set(index, monkeypatch):
    for name in ("HOPGRAPH_LLM_MODEL", "HOPGRAPH_LLM_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(Exception, match="no LLM is configured"):
        make_retriever("sync_ge", index)


def test_naive_ge_page_step_puts_the_bridge_page_after_the_base_first(index):
    # Van Hook Township (d4) names Mountrail County, whose page (d5) a chain steps onto from a
    # d4 triple: a page step. It takes place 2, after the base's first, then the base goes on.
    question = "Where is the county seat of Van Hook Township?"
    naive = make_retriever("naive_ge", index, base_depth=1, keep=0)
    hits = naive.retrieve(question, 4)
    assert [h.id for h in hits[:2]] == ["d4", "d5"]
    step = hits[1].provenance[-1]
    assert (step.step, step.rank) == ("page step", 2)
    assert any("mountrail county" in fact for fact in step.via)  # the chain that reached it
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    base = [h.id for h in make_retriever("hybrid", index).retrieve(question, 4)]
    assert [h.id for h in hits if h.id != "d5"] == [b for b in base if b != "d5"][:3]
    first = make_retriever("naive_ge", index, base_depth=1, keep=0, after=0)
    assert first.retrieve(question, 4)[0].id == "d5"
    none = make_retriever("naive_ge", index, base_depth=1, keep=0, page_steps=0)
    assert [h.id for h in none.retrieve(question, 4)] == base


def test_naive_ge_paper_preset_fuses_by_rrf_without_page_steps(index):
    paper = make_retriever("naive_ge", index, preset="paper")
    assert (paper.fusion, paper.base_depth, paper.keep) == ("rrf", None, 0)
    hits = paper.retrieve("Where is the county seat of Van Hook Township?", 4)
    assert {h.provenance[-1].step for h in hits} <= {"triple chain", "base retrieval"}


def test_naive_ge_rejects_an_unknown_fusion(index):
    with pytest.raises(ValueError, match="fusion must be"):
        make_retriever("naive_ge", index, fusion="sum")


def test_dense_ranks_as_chromas_query_on_the_same_vectors(index):
    dense = make_retriever("dense", index)
    for question in ("Where is the county seat of Van Hook Township?", "Manila capital"):
        for k in (1, 2, 6):
            ours = dense.retrieve(question, k)
            chroma = index.vectors.query(index.embed_query(question), k)
            assert [h.id for h in ours] == [i for i, _ in chroma]
            assert [h.score for h in ours] == pytest.approx([s for _, s in chroma], abs=1e-5)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The bundled sample (277 passages, hashing embedder) with its graphs, open."""
    from hopgraph.graph_store import build_graphs
    from tests.sample_index import written_in_four_steps

    path = written_in_four_steps(tmp_path_factory.mktemp("sample") / "idx")
    build_graphs(path, show_progress=False)
    with Index.open(path) as opened:
        yield opened


@pytest.mark.parametrize("preset", ["tuned", "paper"])
@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid", "gnn_ret", "naive_ge", "iier"])
def test_scores_fall_with_rank_and_each_keeps_its_methods_own(sample, docs_index, method, preset):
    """Issue 74: a list's scores fall with rank, on the method's own scale, on every sample
    question; the figure the method computed is the hit's ``raw_score`` (its last step's), and
    no score is lowered to read as a rank (issue 53: five gnn_ret hits read 0.579)."""
    from hopgraph.cli.commands.demo import sample_dir

    lines = (sample_dir() / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    asked = [(sample, json.loads(line)["question"]) for line in lines]
    asked += [(docs_index, q) for q in ("Where was Larry Alcala educated?", "Stanley")]
    raised = 0
    for index, query in asked:
        hits = make_retriever(method, index, preset=preset).retrieve(query, 10)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), (method, preset, query, scores)
        kinds = {h.score_kind for h in hits}  # one scale a list, one the docs name
        assert len(kinds) == 1 and kinds <= set(SCORE_KINDS), (method, preset, query, kinds)
        for at, hit in enumerate(hits):
            assert hit.own_score == hit.provenance[-1].score, (method, hit)
            if hit.score < hit.own_score:  # only a kept cosine, shown on the method's scale
                assert hit.provenance[-1].step == "kept: dense top", (method, hit)
                assert hit.score == hits[at + 1].score, (method, preset, query)
        if any(h.raw_score is not None for h in hits):
            raised += 1
            assert order_note(hits) is not None, (method, preset, query)
    assert raised == 0 or method in ("gnn_ret", "naive_ge", "iier")  # the guard's, IIER's chains


def test_the_guards_kept_chunk_scores_as_the_method_scored_it(docs_index):
    query = "Where was Larry Alcala educated?"
    guarded = make_retriever("gnn_ret", docs_index, keep=1, selective=False).retrieve(query, 6)
    alone = make_retriever("gnn_ret", docs_index, keep=0).retrieve(query, 20)
    own = {h.id: h.score for h in alone}
    kept = guarded[0]
    assert kept.provenance[-1].step == "kept: dense top"
    assert kept.own_score == pytest.approx(own[kept.id])  # not dense's cosine, not clamped
    assert [h.own_score for h in guarded[1:]] == pytest.approx([own[h.id] for h in guarded[1:]])


def test_query_time_texts_are_embedded_once_and_forgotten_together(index, monkeypatch):
    """Queries and what methods embed for them (G-RAG's concept paths) share one cache."""
    calls = []
    embed = index.embedder.embed
    monkeypatch.setattr(
        index.embedder,
        "embed",
        lambda texts, progress=None: calls.append(list(texts)) or embed(texts),
    )
    index.forget_queries()
    alpha = index.embed_query("alpha")
    both = index.embed_queries(["beta", "alpha", "beta"])
    assert calls == [["alpha"], ["beta"]]  # each missing text once, in one batch
    assert (both[1] == alpha).all() and (both[0] == both[2]).all()
    index.forget_queries()
    index.embed_query("alpha")
    assert calls[-1] == ["alpha"]
    assert index.embed_queries([]).shape == (0, len(alpha))


def test_every_score_kind_and_every_methods_is_in_the_docs_table():
    """docs/methods.md "Scores" names each scale a hit can say it is on, and each method's."""
    from hopgraph.reference import ROOT

    text = (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    table = text.split("## Scores", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in table.splitlines() if line.startswith("| `")]
    rows = {line.split("|")[1].strip(" `"): line for line in lines[1:]}  # after the header
    assert set(rows) == set(SCORE_KINDS)
    kinds = {name: RETRIEVERS[name].score_kind for name in RETRIEVERS}
    for name, kind in kinds.items():
        if name not in ("naive_ge", "sync_ge"):  # theirs is their fusion's: an instance's
            assert name in rows[kind].split("|")[3].lower(), (name, kind)
