"""The agents' state machines driven by a scripted chat model over a six-passage index."""

import numpy as np
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

from hopgraph.agents.answering import parse_answer
from hopgraph.agents.rgnn_ret import graph as rgnn
from hopgraph.agents.rgnn_ret.context import Context as RGNNContext
from hopgraph.agents.rgnn_ret.state import parse_critique, parse_next_step
from hopgraph.agents.run import run_agent
from hopgraph.core.errors import InputError, UnknownMethodError
from hopgraph.tools import make_retriever
from tests.agent_scripts import (
    FACT_1,
    NOT_YET,
    QUESTION,
    TOG2_NO,
    TOG2_YES,
    cite,
    gear_script,
    rgnn_script,
    tog2_script,
)
from tests.conftest import DOCS
from tests.fakes import ScriptedChatModel


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


def test_rgnn_ret_asks_retrieves_critiques_and_answers_with_citations(index):
    chat = ScriptedChatModel(respond=rgnn_script(["not yet. Critique: no", "Critique: yes"]))
    result = run_agent("rgnn_ret", QUESTION, index, chat)
    assert result.answer == "1936"
    assert [c["id"] for c in result.citations] == ["d2"]
    assert {"d1", "d2"} <= {e["id"] for e in result.gathered}
    # evidence carries what a hit does (the LangGraph server's ``sources`` show it)
    for e in result.gathered:
        assert e["metadata"] == index.metadata(e["id"]), e["id"]
    # two rounds of (next step, sub-answer, critique), then the final answer
    assert result.usage["calls"] == len(chat.calls) == 7
    assert result.usage["prompt_tokens"] > 0 and result.usage["completion_tokens"] > 0
    assert [s.split(":")[0] for s in result.steps] == [
        "next step 1", "retrieve 1 (gnn_ret, β 0.9)", "intermediate answer", "critique",
        "next step 2", "retrieve 2 (gnn_ret, β 0.9)", "intermediate answer", "critique",
        "answer",
    ]  # fmt: skip


def test_rgnn_ret_forces_an_answer_at_the_step_bound(index):
    chat = ScriptedChatModel(respond=rgnn_script(["Critique: no"] * 5))
    result = run_agent("rgnn_ret", QUESTION, index, chat, max_steps=2)
    assert sum(s.startswith("critique") for s in result.steps) == 2
    assert result.steps[-1] == "answer (step bound 2 reached): 1936"


def test_rgnn_ret_repairs_a_malformed_reply_and_falls_back_on_a_second(index):
    script = rgnn_script(["Critique: yes"])
    replies = {"next": iter(["", "Next step: Where was Larry Alcala educated?"])}

    def respond(prompt: str) -> str:
        if "ask the next step question" in prompt:
            return next(replies["next"])
        return script(prompt)

    chat = ScriptedChatModel(respond=respond)
    result = run_agent("rgnn_ret", QUESTION, index, chat)
    assert result.steps[0] == "next step 1: Where was Larry Alcala educated?"
    assert "could not be read (no next-step question" in chat.calls[1]  # the repair request
    assert result.usage["parse_failures"] == result.usage["repaired"] == 1
    mumbling = ScriptedChatModel(respond=lambda p: "hmm" if "critique whether" in p else script(p))
    result = run_agent("rgnn_ret", QUESTION, index, mumbling, max_steps=2)
    critiques = [s for s in result.steps if s.startswith("critique")]
    assert critiques == ["critique: yes [FALLBACK: the model's reply could not be read even after "
                         "a repair; taken as yes: stop]"]  # fmt: skip
    assert result.usage["fallbacks"] == 1 and result.answer == "1936"


def test_recurrent_blend_is_eq_6(index):
    context = RGNNContext(index=index, chat=ScriptedChatModel(), beta=0.75, step_k=2)
    runtime = Runtime(context=context)
    first = rgnn.retrieve({"question": QUESTION, "subquestion": "Larry Alcala"}, runtime)
    second = rgnn.retrieve(
        {"question": QUESTION, "subquestion": "military instruction", "h_hat": first["h_hat"]},
        runtime,
    )
    gnn = context.retriever("gnn_ret")
    h1, h2 = gnn.ranking("Larry Alcala")[0], gnn.ranking("military instruction")[0]
    np.testing.assert_allclose(first["h_hat"], h1)
    np.testing.assert_allclose(second["h_hat"], 0.75 * h2 + 0.25 * h1)
    assert [e["id"] for e in second["evidence"]] == [
        context.index.passage_graph.ids[r] for r in np.argsort(second["h_hat"])[:2]
    ]


def test_parsers_of_rgnn_replies():
    assert parse_next_step("Next step: Who founded X?\nIntermediate answer: Y") == "Who founded X?"
    assert parse_next_step("  \nWho founded X?") == "Who founded X?"
    with pytest.raises(ValueError):
        parse_next_step("Intermediate answer: nothing")
    assert parse_critique("Critique: no ... on reflection, Critique: YES") is True
    assert parse_critique("critique - no") is False
    with pytest.raises(ValueError):
        parse_critique("I think so")
    assert parse_answer("Answer: 1936\nCited: [2, 7, 2, 1]", 3) == ("1936", [2, 1])
    assert parse_answer("**Answer:** Manila", 2) == ("Manila", [])
    with pytest.raises(ValueError):
        parse_answer("Cited: [1]", 2)


def test_single_step_methods_answer_with_citations(index):
    chat = ScriptedChatModel(
        respond=lambda p: f"Answer: Stanley\nCited: [{cite(p, 'Mountrail County')}]"
    )
    result = run_agent("hybrid", "What is the seat of Mountrail County?", index, chat, k=3)
    assert result.answer == "Stanley" and [c["id"] for c in result.citations] == ["d5"]
    assert result.usage["calls"] == 1 and len(result.gathered) == 3
    assert all(e["metadata"] == index.metadata(e["id"]) for e in result.gathered)
    assert result.steps[0].startswith("retrieve (hybrid): 3 passages: Mountrail County")
    with pytest.raises(UnknownMethodError, match="rgnn_ret"):
        run_agent("nope", "q", index, chat)


def test_a_retrievers_llm_calls_are_the_runs_and_count_in_its_usage(index):
    def reply(prompt):
        if "reading comprehension" in prompt:
            return f"Answer: Stanley\nCited: [{cite(prompt, 'Mountrail County')}]"
        return "(Mountrail County, seat, Stanley)"  # SyncGE's read of the base passages

    chat = ScriptedChatModel(respond=reply)
    result = run_agent("sync_ge", "What is the seat of Mountrail County?", index, chat, k=3)
    assert len(chat.calls) == 2 and result.usage["calls"] == 2  # the read, then the reader
    assert result.steps[0].endswith("(1 LLM calls)")


def test_an_interrupted_run_resumes_without_repeating_finished_nodes(index):
    saver = InMemorySaver()
    # the model fails on its 4th call: the second round's next-step question
    script = rgnn_script(["Critique: no", "Critique: yes"])
    failing = ScriptedChatModel(respond=script, fail_after=3)
    with pytest.raises(RuntimeError, match="went away"):
        run_agent("rgnn_ret", QUESTION, index, failing, saver=saver, thread_id="t1")
    assert len(failing.calls) == 4
    healthy = ScriptedChatModel(respond=rgnn_script(["Critique: yes"]))
    result = run_agent("rgnn_ret", QUESTION, index, healthy, saver=saver, thread_id="t1")
    assert result.resumed and result.answer == "1936"
    # the resumed run starts at the failed node: next step 2, sub-answer, critique, answer
    assert len(healthy.calls) == 4
    assert "Intermediate answer: Larry" in healthy.calls[0]
    assert sum(s.startswith("next step 1") for s in result.steps) == 1
    assert result.usage["calls"] == 3 + 4  # finished work is counted once
    with pytest.raises(InputError, match="already answered"):
        run_agent("rgnn_ret", QUESTION, index, healthy, saver=saver, thread_id="t1")
    with pytest.raises(InputError, match="another question"):
        failing2 = ScriptedChatModel(respond=rgnn_script(["Critique: no"]), fail_after=0)
        with pytest.raises(RuntimeError):
            run_agent("rgnn_ret", QUESTION, index, failing2, saver=saver, thread_id="t2")
        run_agent("rgnn_ret", "Another question?", index, healthy, saver=saver, thread_id="t2")


def test_gear_reads_reasons_rewrites_links_and_answers(index):
    chat = ScriptedChatModel(respond=gear_script([NOT_YET, "Answerable: Yes\nAnswer: 1936"]))
    result = run_agent("gear", QUESTION, index, chat)
    assert result.answer == "1936" and [c["id"] for c in result.citations] == ["d2"]
    # round 1: SyncGE's read, the memory read, reason, rewrite; round 2 the same but the
    # rewrite; then the answer
    assert result.usage["calls"] == len(chat.calls) == 8
    assert [s.split(" ")[0].rstrip(":") for s in result.steps] == [
        "retrieve", "read", "reason", "rewrite", "retrieve", "read", "reason", "link", "answer",
    ]  # fmt: skip
    assert "for 'When did military instruction start at Santo Tomas?'" in result.steps[4]
    assert result.steps[1] == f"read: 1 new fact {FACT_1}"  # a repeated fact is kept once
    memory_read = [c for c in chat.calls if "preliminary facts" in c]
    assert len(memory_read) == 1 and f"Facts: {FACT_1}" in memory_read[0]
    assert f"Question: {QUESTION}" in memory_read[0]  # read always uses the original question


def test_gear_links_passages_at_the_round_bound(index):
    chat = ScriptedChatModel(respond=gear_script([NOT_YET] * 3))
    result = run_agent("gear", QUESTION, index, chat, max_rounds=2)
    assert sum(s.startswith("retrieve") for s in result.steps) == 2
    assert result.steps[-2].startswith("link passages: 2 facts linked; top 5:")
    assert result.steps[-1] == "answer (round bound 2 reached): 1936"


def test_gear_labels_the_fallback_of_an_unreadable_reason(index):
    script = gear_script([])
    chat = ScriptedChatModel(respond=lambda p: "maybe" if "Answerable: Yes" in p else script(p))
    result = run_agent("gear", QUESTION, index, chat, max_rounds=2)
    reasons = [s for s in result.steps if s.startswith("reason")]
    assert reasons == ["reason: answerable [FALLBACK: the model's reply could not be read even "
                       "after a repair; taken as answerable: stop]"]  # fmt: skip
    assert result.steps[-2].startswith("link passages") and result.answer == "1936"
    assert result.usage["structured"] == 2 and result.usage["fallbacks"] == 1


def test_parsers_of_gear_replies():
    from hopgraph.agents.gear.state import parse_next_question, parse_reason, render_triples

    assert parse_reason("Answerable: Yes\nAnswer: 1936") == (True, "")
    assert parse_reason("answerable - no\nWhy: nothing about\n  the date.") == (
        False,
        "nothing about the date.",
    )
    with pytest.raises(ValueError):
        parse_reason("I cannot tell")
    assert parse_next_question("Next Question: Where?\nmore") == "Where?"
    assert parse_next_question("Who founded X?") == "Who founded X?"
    with pytest.raises(ValueError):
        parse_next_question("Next Question:   ")
    assert render_triples([["a", "b", "c"]]) == '("a", "b", "c")'


def test_eval_answers_scores_every_method(tmp_path, monkeypatch, capsys):
    import json

    import hopgraph.core.llm
    from hopgraph.cli import main
    from tests.conftest import write_jsonl

    data = tmp_path / "tiny"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(
        data / "dev.jsonl",
        [
            {"id": "q1", "question": QUESTION, "answers": ["1936"], "gold_ids": ["d1", "d2"]},
            {"id": "q2", "question": "Seat of Mountrail County?", "answers": ["Stanley"],
             "gold_ids": ["d5"]},
        ],
    )  # fmt: skip
    script, gear = rgnn_script(["Critique: yes"] * 9), gear_script(["Answerable: Yes"] * 9)
    rgnn_prompts = ("next step", "critique whether")
    chat = ScriptedChatModel(
        respond=lambda p: script(p) if any(k in p for k in rgnn_prompts) else gear(p)
    )
    monkeypatch.setattr(hopgraph.core.llm, "make_chat_model", lambda settings: chat)
    monkeypatch.setenv("HOPGRAPH_LLM_MODEL", "scripted")
    monkeypatch.setenv("HOPGRAPH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("HOPGRAPH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", "hashing", "--out", str(out), "-q"]
    assert main([*args, "--methods", "rgnn_ret"]) == 2
    assert "add --answers" in capsys.readouterr().err
    assert main([*args, "--methods", "rgnn_ret,gear,hybrid", "--answers"]) == 0
    scores = {s["method"]: s for s in json.loads((out / "report.json").read_text())["scores"]}
    # one round each: rgnn_ret next/sub-answer/critique/answer, gear sync/read/reason/answer
    assert {m: s["calls"] for m, s in scores.items()} == {"rgnn_ret": 4, "gear": 4, "hybrid": 1}
    assert all(s["em"] == 50.0 and s["failures"] == 0 for s in scores.values())  # q1 right
    assert scores["gear"]["gathered_recall"] > 0 and scores["rgnn_ret"]["prompt_tokens"] > 0
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and rows[0]["prediction"] == "1936" and rows[0]["cited_ids"] == ["d2"]
    assert "calls/q" in capsys.readouterr().out


def test_tog2_links_prunes_discovers_reasons_and_answers(index):
    chat = ScriptedChatModel(respond=tog2_script([TOG2_NO, TOG2_YES]))
    result = run_agent("tog2", QUESTION, index, chat)
    assert result.answer == "1936" and [c["id"] for c in result.citations] == ["d2"]
    heads = [s.split(":")[0] for s in result.steps]
    assert heads == [
        "link entities (mentions)", "prune topics", "retrieve context",
        "prune relations 1", "discover entities", "prune entities", "reason", "reform query",
        "prune relations 2", "discover entities", "prune entities", "reason", "answer",
    ]  # fmt: skip
    assert result.steps[3] == "prune relations 1: larry alcala → educated"
    first = [e for e in result.gathered if e["found_by"].startswith("tog2 question")]
    question_hits = make_retriever("gnn_ret", index).retrieve(QUESTION, 5)
    assert [e["id"] for e in first] == [h.id for h in question_hits]
    assert result.steps[5].startswith("prune entities: university of santo tomas")
    assert result.steps[6] == "reason: not yet; clues: Larry Alcala studied at Santo Tomas"
    # two linked entities or fewer: no topic-prune call; then RP, reason, reform, RP, reason, answer
    assert result.usage["calls"] == len(chat.calls) == 6
    reform = next(c for c in chat.calls if "provide a suitable query" in c)
    assert "Larry Alcala studied at Santo Tomas" in reform
    second_rp = [c for c in chat.calls if "Available Relations" in c][1]
    assert "Question: When did military instruction start at the University" in second_rp


def test_tog2_stops_at_its_depth(index):
    chat = ScriptedChatModel(respond=tog2_script([TOG2_NO] * 3))
    result = run_agent("tog2", QUESTION, index, chat, depth=1)
    assert result.steps[-1] == "answer (depth 1 reached): 1936"
    assert result.usage["calls"] == 3  # relation prune, reason, answer


def test_tog2_topic_prune_and_its_empty_choice(index):
    question = "Is Larry Alcala from Manila or from Stanley?"  # three linked entities
    chat = ScriptedChatModel(respond=tog2_script([TOG2_YES], topics='{"E1": "larry alcala"}'))
    result = run_agent("tog2", question, index, chat)
    assert result.steps[1] == "prune topics: larry alcala"
    assert "starting points" in chat.calls[0]
    none = ScriptedChatModel(respond=tog2_script([], topics="{}"))
    result = run_agent("tog2", question, index, none)
    # no topic entity: plain retrieval feeds the reader, with no graph search
    assert [s.split(":")[0] for s in result.steps] == [
        "link entities (mentions)", "prune topics", "retrieve context", "answer",
    ]  # fmt: skip
    # Ctx⁰: GNN-Ret's first five for the question, then hybrid's others, ten in all
    found_by = [e["found_by"] for e in result.gathered]
    assert found_by[:5] == ["tog2 question: gnn_ret"] * 5
    assert set(found_by[5:]) == {"tog2 fallback: hybrid"} and len(found_by) <= 10
    assert len({e["id"] for e in result.gathered}) == len(found_by)
    paper = run_agent("tog2", question, index, none, question_chunks=0)
    assert paper.gathered[0]["found_by"] == "tog2 fallback: hybrid"
    rest = tog2_script([TOG2_YES])
    unreadable = ScriptedChatModel(
        respond=lambda p: "I pick Larry" if "starting points" in p else rest(p)
    )
    result = run_agent("tog2", question, index, unreadable)
    assert result.steps[1].startswith("prune topics: ") and "all are kept]" in result.steps[1]


def test_tog2_answers_when_the_graph_runs_out(index):
    # Both entities are topics, so each relation leads only to a visited entity.
    question = "Where did Larry Alcala study at the University of Santo Tomas?"
    chat = ScriptedChatModel(respond=tog2_script([], prefer=("educated",)))
    result = run_agent("tog2", question, index, chat)
    assert result.steps[-2] == "discover entities: 0"
    assert result.steps[-1] == "answer (search exhausted): 1936"
    # a relation the graph does not have is dropped, and nothing is left to follow
    script = tog2_script([])
    odd = ScriptedChatModel(
        respond=lambda p: (
            "Entity 1: x\n1. {zzz (Score: 9)}" if "Available Relations" in p else script(p)
        )
    )
    result = run_agent("tog2", QUESTION, index, odd)
    assert result.steps[3:] == ["prune relations 1: none", "answer (search exhausted): 1936"]


def test_tog2_search_functions_by_hand(index):
    from hopgraph.agents.tog2.search import Relation, edges, entity_scores, tails
    from hopgraph.agents.tog2.state import parse_query, parse_reason, parse_relations, parse_topics

    kg = index.knowledge_graph
    # two relations, one triple each: the order the triples were read in
    assert edges(kg, "university of santo tomas") == [
        Relation("educated", False), Relation("private university", True),
    ]  # fmt: skip
    assert edges(kg, "university of santo tomas")[0].label == "educated (reverse)"
    assert tails(kg, "university of santo tomas", Relation("educated", False)) == ["larry alcala"]
    assert tails(kg, "university of santo tomas", Relation("educated", True)) == []
    # Eq. 6 with α = 1: a = 0.9·e⁻¹ + 0.5·e⁻³, b = 0.8·e⁻²
    scores = entity_scores([(0.9, "a"), (0.8, "b"), (0.5, "a")], alpha=1.0)
    assert scores["a"] == pytest.approx(0.9 * np.exp(-1) + 0.5 * np.exp(-3))
    assert scores["b"] == pytest.approx(0.8 * np.exp(-2))
    assert parse_topics('Output: {"E1": "x", "E9": "y"}', {"E1": "x", "E2": "z"}) == {"E1": "x"}
    offered = [["educated", "born in (reverse)"], ["seat"]]
    reply = (
        "Entity 1: a\n1. {Educated (Score: 9)}: x\n2. {bogus (Score: 5)}\n"
        "Entity 2: b\n{seat (Score: 2)}\nEntity 1: a\n{born in (reverse) (Score: 1)}"
    )
    assert parse_relations(reply, offered) == [
        (0, "educated", 9.0), (1, "seat", 2.0), (0, "born in (reverse)", 1.0),
    ]  # fmt: skip
    with pytest.raises(ValueError):
        parse_relations("educated, seat", offered)
    assert parse_reason(TOG2_YES) == (True, "1936")
    assert parse_reason(TOG2_NO) == (False, "Larry Alcala studied at Santo Tomas")
    with pytest.raises(ValueError):
        parse_reason("Probably yes")
    assert parse_query("Query: {Where is X?}") == "Where is X?"


def test_every_agent_graph_is_compiled_with_its_name():
    from hopgraph.agents.registry import MULTI_STEP, compiled_graphs

    graphs = compiled_graphs()
    assert set(MULTI_STEP) < set(graphs)
    assert {k: g.name for k, g in graphs.items()} == {
        "rgnn_ret": "RGNN-Ret", "gear": "GEAR", "tog2": "ToG-2",
        "retrieve_answer": "retrieve-and-answer",
    }  # fmt: skip
    nodes = set(graphs["tog2"].get_graph().nodes)
    assert {"prune_relations", "discover_entities", "prune_entities", "reason"} <= nodes


def test_tog2_paper_preset_scores_chunks_with_their_triple_sentence(index):
    chat = ScriptedChatModel(respond=tog2_script([TOG2_NO, TOG2_YES]))
    result = run_agent("tog2", QUESTION, index, chat, preset="paper")
    assert result.answer == "1936"
    assert result.steps[5].startswith("prune entities: university of santo tomas")


def test_tog2_drops_literal_candidates_as_the_authors_code_does():
    from hopgraph.agents.tog2.search import is_literal

    assert [is_literal(n) for n in ("1936", "march 3 1936", "12.5", "us", "stanley")] == [
        True, True, True, True, False,
    ]  # fmt: skip
    assert not is_literal("mountrail county 1914")  # a name with a year in it is a name


def test_tog2_entity_documents_add_the_chunks_found_for_the_name(index):
    from types import SimpleNamespace

    from hopgraph.agents.tog2.graph import entity_chunks

    kg = index.knowledge_graph
    ctx = SimpleNamespace(index=index, name_search=0, retriever=lambda name: None)
    assert entity_chunks(ctx, "mountrail county") == kg.chunks_of("mountrail county")
    bm25 = make_retriever("bm25", index)
    ctx = SimpleNamespace(index=index, name_search=3, retriever=lambda name: bm25)
    found = entity_chunks(ctx, "mountrail county")
    searched = [h.id for h in bm25.retrieve("mountrail county", 3)]
    assert found == list(dict.fromkeys(kg.chunks_of("mountrail county") + searched))
    assert "d5" in found and len(found) == len(set(found))


def test_tog2_paper_preset_reads_only_mentions_and_ranks_by_the_question():
    from hopgraph.agents.tog2.context import Context

    paper = Context.presets["paper"]
    assert (paper["name_search"], paper["topic_context"], paper["newest_first"]) == (
        0,
        False,
        False,
    )
