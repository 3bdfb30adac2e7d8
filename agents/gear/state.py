"""State of a GEAR run, and the parsers of its LLM replies."""

from __future__ import annotations

import operator
import re
from typing import Annotated

from hopgraph.agents.evidence import Evidence
from hopgraph.agents.state import AnswerState, InputState

__all__ = ["InputState", "State", "parse_next_question", "parse_reason", "render_triples"]

Triple = list[str]  # [subject, predicate, object]; lists, since checkpoints store JSON-like data


class State(AnswerState, total=False):
    """The shared outputs plus the loop's working keys."""

    query: str
    """The current query q^(n); the question itself in round 1."""
    evidence: list[Evidence]
    """This round's SyncGE passages; after passageLink, the fused final ranking."""
    rounds: Annotated[list[list[str]], operator.add]
    """Each round's SyncGE ranking (chunk ids), fused at the end (Eq. 9)."""
    memory: Annotated[list[Triple], operator.add]
    """The gist memory G: proximal triples, in the order read (Eq. 5)."""
    answerable: bool
    reason: str


def render_triples(triples: list[Triple]) -> str:
    """Render triples as the prompts show them: ("s", "p", "o"), ("s", "p", "o")."""
    return ", ".join(f'("{s}", "{p}", "{o}")' for s, p, o in triples)


_ANSWERABLE = re.compile(r"answerable\W*(yes|no)\b", re.IGNORECASE)
_WHY = re.compile(r"why\s*:\s*(.+)", re.IGNORECASE | re.DOTALL)


def parse_reason(reply: str) -> tuple[bool, str]:
    """Read "Answerable: Yes|No" and the "Why:" text (spec gear §5.3)."""
    verdict = _ANSWERABLE.search(reply)
    if not verdict:
        raise ValueError('no "Answerable: Yes" or "Answerable: No"')
    why = _WHY.search(reply)
    return verdict.group(1).lower() == "yes", " ".join(why.group(1).split()) if why else ""


def parse_next_question(reply: str) -> str:
    """Return the first non-empty line after the last "Next Question:" (spec gear §5.4)."""
    text = re.split(r"next question\s*:", reply, flags=re.IGNORECASE)[-1]
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    raise ValueError("no next question in the reply")
