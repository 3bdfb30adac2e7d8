"""State of a ToG-2 run, and the parsers of its LLM replies."""

from __future__ import annotations

import json
import operator
import re
from typing import Annotated

# pydantic builds the servers' input schemas from these, and needs typing_extensions' TypedDict
# on Python < 3.12 (typing's made the LangGraph server publish no input schema)
from typing_extensions import TypedDict

from hopgraph.agents.evidence import Evidence
from hopgraph.agents.state import AnswerState, InputState

__all__ = [
    "Candidate", "InputState", "State", "Topic",
    "parse_query", "parse_reason", "parse_relations", "parse_topics",
]  # fmt: skip


class Topic(TypedDict):
    """A topic entity and the triple path that reached it ([] for the starting ones)."""

    entity: str
    path: list[list[str]]


class Candidate(TypedDict):
    """An entity reached this round, with the topic and relation that reached it."""

    entity: str
    parent: str
    relation: str
    outgoing: bool


class State(AnswerState, total=False):
    """The shared outputs plus the search's working keys."""

    query: str
    """The query chunks are scored against: the question, then the re-formed one."""
    linked: dict[str, str]
    """Entities the question mentions, by prompt id ("E1": name)."""
    topics: list[Topic]
    visited: Annotated[list[str], operator.add]
    relations: list[list[str]]
    """Kept (entity, predicate, "out" | "in") this round."""
    candidates: list[Candidate]
    evidence: list[Evidence]
    """The top chunks so far, best first (Ctx)."""
    triples: Annotated[list[list[str]], operator.add]
    """The triples walked to reach the topic entities, for the reasoning prompt."""
    clues: str
    sufficient: bool
    rounds: int


_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
# Lazy up to "(Score:", so a label may hold parentheses itself ("educated (reverse)").
_RELATION = re.compile(r"\{\s*([^{}]+?)\s*\(\s*score\s*:\s*([0-9.]+)\s*\)\s*\}", re.IGNORECASE)
_ENTITY = re.compile(r"^\W*entity\s*(\d+)\s*:", re.IGNORECASE)
_VERDICT = re.compile(r"\{\s*(yes|no)\s*\}", re.IGNORECASE)
_BRACED = re.compile(r"\{([^{}]+)\}")


def parse_topics(reply: str, offered: dict[str, str]) -> dict[str, str]:
    """Read Topic Prune's JSON object (the last in the reply); keep only offered ids."""
    for block in reversed(_JSON_OBJECT.findall(reply)):
        try:
            chosen = json.loads(block)
        except json.JSONDecodeError:
            continue
        if isinstance(chosen, dict):
            return {k: offered[k] for k in chosen if k in offered}
    raise ValueError("no JSON object {id: entity} in the reply")


def parse_relations(reply: str, offered: list[list[str]]) -> list[tuple[int, str, float]]:
    """Read "Entity i:" sections of ``{relation (Score: x)}``; return (i−1, label, score).

    ``offered[i]`` holds the labels shown for entity i; other labels are dropped. A reply that
    names no relation in the format is unreadable.
    """
    current, found, named = 0, [], False
    for line in reply.splitlines():
        header = _ENTITY.match(line)
        if header:
            current = int(header.group(1)) - 1
        for label, score in _RELATION.findall(line):
            named = True
            wanted = {o.lower(): o for o in offered[current]} if current < len(offered) else {}
            if label.strip().lower() in wanted:
                found.append((current, wanted[label.strip().lower()], float(score)))
    if not named:
        raise ValueError('no "{relation (Score: x)}" in the reply')
    return list({(i, label): (i, label, s) for i, label, s in found}.values())


def parse_reason(reply: str) -> tuple[bool, str]:
    """Read "{Yes} … {answer}" or "{No} … {clues}" (Eq. 7); return (sufficient, the braces)."""
    verdict = _VERDICT.search(reply)
    if not verdict:
        raise ValueError("the reply does not begin with {Yes} or {No}")
    after = _BRACED.findall(reply[verdict.end() :])
    return verdict.group(1).lower() == "yes", " ".join(after[-1].split()) if after else ""


def parse_query(reply: str) -> str:
    """Read the re-formed query in curly brackets (Table 14)."""
    found = _BRACED.findall(reply)
    if not found or not found[0].strip():
        raise ValueError("no query in curly brackets")
    return " ".join(found[0].split())
