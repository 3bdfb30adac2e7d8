"""The reader every method ends with: a short answer citing the passages it rests on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from hopgraph.core.llm import Usage, ask_structured, labelled
from hopgraph.prompts.answer import ANSWER, NOTES

from .evidence import Evidence, numbered_passages

# Models decorate labels ("**Answer:** x"): asterisks and spaces around the label are skipped.
_ANSWER = re.compile(r"^[\s*]*answer[\s*]*:[\s*]*(.+?)[\s*]*$", re.IGNORECASE | re.MULTILINE)
_CITED = re.compile(r"^[\s*]*cited[\s*]*:(.*)$", re.IGNORECASE | re.MULTILINE)


def parse_answer(reply: str, passages: int) -> tuple[str, list[int]]:
    """Read "Answer: …" and "Cited: [1, 3]"; return the answer and the 1-based numbers cited.

    Raises ``ValueError`` when there is no answer line. Numbers outside 1..``passages`` are
    dropped, since they cite nothing the reader was shown.
    """
    found = _ANSWER.search(reply)
    if not found or not found.group(1).strip():
        raise ValueError('no "Answer:" line')
    cited = _CITED.search(reply)
    numbers = [int(n) for n in re.findall(r"\d+", cited.group(1))] if cited else []
    return found.group(1).strip(), list(dict.fromkeys(n for n in numbers if 1 <= n <= passages))


ANSWER_FALLBACK = "the reply's first line is the answer, citing nothing"


def first_line(reply: str, words: int = 12) -> tuple[str, list[int]]:
    """Return the answer fallback: the reply's first non-empty line (``words`` at most).

    Used when even a repaired reply has no "Answer:" line; a "Cited:" line is no answer, and
    a reply with nothing else answers ``unknown``.
    """
    for line in reply.splitlines():
        text = " ".join(line.strip(" *#-").split()[:words])
        if text and not _CITED.match(text):
            return text, []
    return "unknown", []


def answer_line(text: str, usage: Usage, bound: str = "") -> str:
    """Return the final step's line: the answer, the loop bound if reached, any fallback."""
    return labelled(f"answer{bound}: {text}", usage, ANSWER_FALLBACK)


def answer_with_citations(
    chat: BaseChatModel, question: str, evidence: Sequence[Evidence], notes: str = ""
) -> tuple[str, list[Evidence], Usage]:
    """Answer ``question`` from ``evidence``; return the answer, the cited evidence and usage."""
    prompt = ANSWER.format(
        passages=numbered_passages(evidence),
        notes=NOTES.format(notes=notes) if notes else "",
        question=question,
    )
    (answer, numbers), usage = ask_structured(
        chat, prompt, lambda reply: parse_answer(reply, len(evidence)), first_line
    )
    return answer, [evidence[n - 1] for n in numbers], usage
