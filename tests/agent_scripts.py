"""Scripted LLM replies for the agents, over the six passages of tests.conftest.DOCS."""

import re

from hopgraph.evals.servers.scripted_llm import offered_relations, relation_reply

QUESTION = "When did military instruction start at the place where Larry Alcala was educated?"


def cite(prompt: str, title: str) -> str:
    """Return the number the reader prompt gave the passage titled ``title``."""
    found = re.search(rf"\[(\d+)\] Document: {re.escape(title)}\n", prompt)
    return found.group(1) if found else "9"


def rgnn_script(critiques: list[str]):
    """A well-behaved model for RGNN-Ret; ``critiques`` are the critique replies, in order."""
    verdicts = iter(critiques)

    def respond(prompt: str) -> str:
        if "ask the next step question" in prompt:
            if "Intermediate answer: Larry" in prompt:
                return "When did military instruction start at the University of Santo Tomas?"
            return "Where was Larry Alcala educated?"
        if "answer the next step question" in prompt:
            if "military" in prompt.rsplit("Question:", 1)[-1]:
                return "Military instruction started there in 1936."
            return "Larry Alcala was educated at the University of Santo Tomas."
        if "critique whether" in prompt:
            return next(verdicts)
        if "reading comprehension" in prompt:
            return f"Answer: 1936\nCited: [{cite(prompt, 'University of Santo Tomas')}]"
        raise AssertionError(f"unexpected prompt: {prompt[:80]}")

    return respond


FACT_1 = '("Larry Alcala", "educated at", "University of Santo Tomas")'
FACT_2 = '("University of Santo Tomas", "military instruction started in", "1936")'


def gear_script(verdicts: list[str]):
    """A well-behaved model for GEAR; ``verdicts`` are the reason replies, in order."""
    replies = iter(verdicts)

    def respond(prompt: str) -> str:
        if "find facts that help answer" in prompt:
            return FACT_2 if "preliminary facts" in prompt else f"{FACT_1}, {FACT_1}"
        if "Answerable: Yes" in prompt:
            return next(replies)
        if "Next Question:" in prompt:
            return "Next Question: When did military instruction start at Santo Tomas?"
        if "reading comprehension" in prompt:
            return f"Answer: 1936\nCited: [{cite(prompt, 'University of Santo Tomas')}]"
        raise AssertionError(f"unexpected prompt: {prompt[:80]}")

    return respond


NOT_YET = "Answerable: No\nWhy: the facts do not say when military instruction started."


def pick(labels: list[str], prefer: tuple[str, ...]) -> str:
    """Return the first label equal to a preferred one, else containing one, else the first."""
    for test in (str.__eq__, str.__contains__):
        for wanted in prefer:
            found = [x for x in labels if test(x, wanted)]
            if found:
                return found[0]
    return labels[0]


def tog2_script(
    verdicts: list[str],
    prefer: tuple[str, ...] = ("educated", "private university"),
    topics: str = '{"E1": "x"}',
):
    """A model for ToG-2: picks one relation of every entity offered (see :func:`pick`)."""
    replies = iter(verdicts)

    def respond(prompt: str) -> str:
        if "starting points for reasoning" in prompt:
            return f"Analysis: the first is central.\nOutput: {topics}"
        if "select the" in prompt and "Available Relations" in prompt:
            offered = offered_relations(prompt)
            return relation_reply([(name, pick(labels, prefer)) for name, labels in offered], 9)
        if "sufficient to formulate an answer" in prompt:
            return next(replies)
        if "provide a suitable query" in prompt:
            return "{When did military instruction start at the University of Santo Tomas?}"
        if "reading comprehension" in prompt:
            return f"Answer: 1936\nCited: [{cite(prompt, 'University of Santo Tomas')}]"
        raise AssertionError(f"unexpected prompt: {prompt[:80]}")

    return respond


TOG2_NO = "{No} Not yet. The useful information for now is {Larry Alcala studied at Santo Tomas}"
TOG2_YES = "{Yes} The analyzed answer entity is {1936}."
