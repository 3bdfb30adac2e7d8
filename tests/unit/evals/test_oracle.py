"""The oracle reasoner (evals/oracle.py): its rules, and a reply every agent parser accepts."""

import json

import pytest

from hopgraph.agents.answering import parse_answer
from hopgraph.agents.gear.state import parse_next_question
from hopgraph.agents.gear.state import parse_reason as parse_gear_reason
from hopgraph.agents.rgnn_ret.state import parse_critique, parse_next_step
from hopgraph.agents.tog2.state import parse_query, parse_relations, parse_topics
from hopgraph.agents.tog2.state import parse_reason as parse_tog2_reason
from hopgraph.evals.oracle import (
    KINDS,
    Oracle,
    OracleChatModel,
    decomposition_hops,
    prompt_kind,
    relation_choices,
)
from hopgraph.prompts import answer, chat, gear, rgnn_ret, tog2
from hopgraph.tools.gear.retriever import read_triples

QUESTION = "When did military instruction start where Larry Alcala was educated?"
DECOMPOSITION = [
    ("Larry Alcala >> educated at", "University of Santo Tomas"),
    ("#1 >> military instruction start", "1936"),
]
HOP1 = "Document: Larry Alcala\nLarry Alcala was educated at the University of Santo Tomas."
HOP2 = "Document: University of Santo Tomas\nMilitary instruction started there in 1936."
OTHER = "Document: Manila\nManila is the capital of the Philippines."


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


def oracle() -> Oracle:
    return Oracle(QUESTION, decomposition_hops(DECOMPOSITION))


def test_a_gold_passage_never_shown_yields_no_sub_answer():
    o = oracle()
    subquestion = o.ask()
    assert subquestion == "What is the educated at of Larry Alcala?"
    reply = o.reply(rgnn_ret.STEP_ANSWER.format(subquestion=subquestion, passages=OTHER))
    assert reply == "unknown"
    assert read_triples(o.reply(gear.READ.format(docs=OTHER, query=QUESTION))) == []
    assert parse_gear_reason(o.reply(gear.REASON.format(query=QUESTION, triples=""))) == (
        False,
        "The facts do not say: What is the educated at of Larry Alcala?",
    )
    numbered = f"[1] {OTHER}"
    final = o.reply(answer.ANSWER.format(passages=numbered, notes="", question=QUESTION))
    assert parse_answer(final, 1) == ("unknown", [])
    assert o.found == [False, False]


def test_a_hop_is_found_only_after_the_hops_it_refers_to():
    o = oracle()
    only_year = "Document: UST\nMilitary instruction started there in 1936."
    o.reply(gear.READ.format(docs=only_year, query=QUESTION))  # 1936, but not hop 1's answer
    assert o.found == [False, False]
    o.reply(gear.READ.format(docs=HOP1, query=QUESTION))  # now both, in order
    assert o.found == [True, True] and o.done


def test_passages_count_only_from_passage_slots_not_from_the_question_or_facts():
    o = oracle()
    prompt = gear.REASON.format(query=QUESTION, triples='("x", "y", "University of Santo Tomas")')
    o.reply(prompt)
    assert o.found == [False, False]


def test_a_repeated_hop_question_carries_the_original_question():
    o = oracle()
    assert o.ask() == "What is the educated at of Larry Alcala?"
    assert o.ask() == f"What is the educated at of Larry Alcala? ({QUESTION})"


def test_the_next_hop_question_names_the_found_bridge():
    o = oracle()
    o.reply(gear.READ.format(docs=HOP1, query=QUESTION))
    assert o.ask() == "What is the military instruction start of University of Santo Tomas?"


def test_relation_prune_rule_word_share_else_the_first_listed():
    blocks = (
        "Entity 1: university of santo tomas\nAvailable Relations:\n1. located in\n"
        "2. military instruction started\n3. founded\n"
        "Entity 2: manila\nAvailable Relations:\n1. capital of\n2. population"
    )
    chosen = relation_choices(blocks, "military instruction start", width=2)
    # "military instruction started": {military, instruction, started} ∩ the hop's words = 2/3
    assert chosen[0] == (1, "university of santo tomas", [("military instruction started", 6.7)])
    assert chosen[1] == (2, "manila", [("capital of", 1.0), ("population", 1.0)])


def test_topic_prune_rule_keeps_matches_else_everything():
    o = oracle()
    offered = {"E1": "larry alcala", "E2": "cartoonist", "E3": "manila"}
    prompt = tog2.TOPIC_PRUNE.format(question=QUESTION, entities=json.dumps(offered))
    assert parse_topics(o.reply(prompt), offered) == {"E1": "larry alcala"}
    none = {"E1": "cartoonist", "E2": "manila", "E3": "philippines"}
    prompt = tog2.TOPIC_PRUNE.format(question=QUESTION, entities=json.dumps(none))
    assert parse_topics(o.reply(prompt), none) == none


def test_an_unknown_prompt_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="does not know this prompt"):
        oracle().reply("Tell me a joke.")


def _sample_prompts() -> dict[str, str]:
    trace = f"Question: {QUESTION}\nNext step: Where was Larry Alcala educated?\n"
    trace += "Intermediate answer: University of Santo Tomas"
    entities = "Entity 1: larry alcala\nAvailable Relations:\n1. educated at\n2. born in"
    references = f"- Larry Alcala: {HOP1}\n- University of Santo Tomas: {HOP2}"
    return {
        "rgnn_next_step": rgnn_ret.NEXT_STEP.format(trace=f"Question: {QUESTION}"),
        "rgnn_step_answer": rgnn_ret.STEP_ANSWER.format(
            subquestion="What is the educated at of Larry Alcala?", passages=HOP1
        ),
        "rgnn_critique": rgnn_ret.CRITIQUE.format(trace=trace),
        "gear_read": gear.READ.format(docs=f"{HOP1}\n\n{HOP2}", query=QUESTION),
        "gear_read_memory": gear.READ_WITH_MEMORY.format(
            docs=HOP2, query=QUESTION, triples='("a", "b", "c")'
        ),
        "gear_reason": gear.REASON.format(query=QUESTION, triples='("a", "b", "c")'),
        "gear_rewrite": gear.REWRITE.format(query=QUESTION, triples="", reason="missing"),
        "tog2_topics": tog2.TOPIC_PRUNE.format(
            question=QUESTION, entities=json.dumps({"E1": "larry alcala", "E2": "x", "E3": "y"})
        ),
        "tog2_relations": tog2.RELATION_PRUNE.format(width=3, question=QUESTION, entities=entities),
        "tog2_reason": tog2.REASON.format(
            question=QUESTION, clues="None", triples="None", references=references
        ),
        "tog2_reform": tog2.REFORM.format(question=QUESTION, clues="None"),
        "answer": answer.ANSWER.format(
            passages=f"[1] {HOP1}\n\n[2] {HOP2}",
            notes=answer.NOTES.format(notes="University of Santo Tomas"),
            question=QUESTION,
        ),
        "standalone": chat.STANDALONE.format(history="User: hi", question=QUESTION),
    }


PARSERS = {
    "rgnn_next_step": parse_next_step,
    "rgnn_step_answer": lambda reply: reply.strip() or pytest.fail("empty"),
    "rgnn_critique": parse_critique,
    "gear_read": lambda reply: read_triples(reply) or pytest.fail("no triples"),
    "gear_read_memory": lambda reply: read_triples(reply) or pytest.fail("no triples"),
    "gear_reason": parse_gear_reason,
    "gear_rewrite": parse_next_question,
    "tog2_topics": lambda reply: parse_topics(reply, {"E1": "larry alcala", "E2": "x", "E3": "y"}),
    "tog2_relations": lambda reply: (
        parse_relations(reply, [["educated at", "born in"]]) or pytest.fail("no relation")
    ),
    "tog2_reason": parse_tog2_reason,
    "tog2_reform": parse_query,
    "answer": lambda reply: parse_answer(reply, 2),
    "standalone": lambda reply: reply.strip() or pytest.fail("empty"),
}


def test_every_agent_prompt_gets_a_reply_its_parser_accepts():
    prompts = _sample_prompts()
    assert set(prompts) == {k.name for k in KINDS} == set(PARSERS)
    for kind, prompt in prompts.items():
        o = oracle()
        assert prompt_kind(prompt)[0] == kind
        o.reply(gear.READ.format(docs=f"{HOP1}\n\n{HOP2}", query=QUESTION))  # all found
        PARSERS[kind](o.reply(prompt))
    done = oracle()
    done.reply(gear.READ.format(docs=f"{HOP1}\n\n{HOP2}", query=QUESTION))
    assert parse_answer(done.reply(prompts["answer"]), 2) == ("1936", [1, 2])
    assert parse_tog2_reason(done.reply(prompts["tog2_reason"])) == (True, "1936")


@pytest.mark.parametrize("method", ["rgnn_ret", "gear", "tog2", "gnn_ret"])
def test_every_agent_reaches_the_answer_with_the_oracle(index, method):
    from hopgraph.agents.run import run_agent

    model = OracleChatModel(question=QUESTION, decomposition=DECOMPOSITION)
    result = run_agent(method, QUESTION, index, model, k=4)
    assert result.answer == "1936", result.steps
    assert {"d1", "d2"} <= {e["doc_id"] for e in result.gathered}


def test_eval_llm_oracle_needs_decompositions_and_answers(tmp_path, capsys):
    from hopgraph.cli import main
    from tests.conftest import DOCS, write_jsonl

    data = tmp_path / "tiny"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(data / "dev.jsonl", [{"id": "q1", "question": QUESTION, "gold_ids": ["d1"]}])
    args = ["eval", "--data", str(data), "--model", "hashing", "--methods", "gear", "-q"]
    assert main([*args, "--answers", "--llm", "oracle"]) != 0
    assert "needs each question's gold decomposition" in capsys.readouterr().err
    assert main([*args[:-3], "--methods", "dense", "--llm", "oracle", "-q"]) != 0
    assert "add --answers" in capsys.readouterr().err
