"""The oracle reasoner (`hopgraph eval --answers --llm oracle`): a perfect reader with no memory.

A chat model that answers every agent prompt the way a perfect reasoner would, knowing only the
question's gold decomposition (MuSiQue's sub-questions and their answers) and what the agent has
shown it. It never sees gold passage ids, and it knows a sub-answer only once that answer string
has appeared in a passage of some prompt of the run (so it measures the loop's retrieval, not the
oracle's knowledge). The rules below decide what the decomposition cannot, and are tested in
``tests/unit/evals/test_oracle.py``:

- **Found.** Hop i is *found* once its answer (SQuAD-normalised) appears in a shown passage and
  every hop it refers to (``#k``) is found. Passages are the passage slots of the prompts only
  (``passages``, ``docs``, ``references``): never a demonstration, a trace or a fact list.
- **Next hop.** The first hop not found. Its question is rendered from the decomposition:
  ``"X >> capital"`` becomes ``"What is the capital of X?"``, with ``#k`` replaced by hop k's
  answer. Asked again after a failed attempt, the question is followed by the original question
  in brackets, so the retrieval sees more than the same words twice.
- **Verdicts.** Sufficient (GEAR's reason, RGNN-Ret's critique, ToG-2's reason) exactly when the
  last hop is found; the final answer is the last hop's answer, or ``unknown``.
- **Facts.** A found hop reads as the triple (rendered subject, relation, answer); readers write
  every found hop's triple, and nothing when none is found.
- **Topic prune (ToG-2).** Keep the offered entities that contain, or are contained in, the
  next hop's subject, a found answer, or the whole text of a hop question; none of those: keep
  them all (the decomposition cannot rank them).
- **Relation prune (ToG-2).** Per entity, relations score by the share of the next hop's
  relation words they contain (×10); the ``width`` best with a score above 0 are kept, and with
  none above 0, the first ``width`` listed (the most frequent, as Edge lists them) at score 1.
- **Citations.** The numbers of the shown passages that hold a found answer.

Tokens are counted as characters / 4 (the scripted models' convention), so cost figures are
comparable between methods, not with a real tokenizer's.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from hopgraph.prompts import answer, chat, gear, rgnn_ret, tog2

from .metrics import normalize_answer

_REFERENCE = re.compile(r"#(\d+)")
_PASSAGE_START = re.compile(r"\n(?=\[\d+\] |Document: |- )")


@dataclass
class Hop:
    """One step of the gold decomposition."""

    question: str
    answer: str
    refers: list[int] = field(default_factory=list)
    """0-based indices of the hops whose answers this one's question names (``#k``)."""


def decomposition_hops(decomposition: Sequence[tuple[str, str]]) -> list[Hop]:
    """Read MuSiQue's ``decomposition``: (sub-question, answer) per hop."""
    return [
        Hop(question, answer, [int(k) - 1 for k in _REFERENCE.findall(question)])
        for question, answer in decomposition
    ]


# A slot that may be empty next to another needs its own shape, or the first lazily stops short.
_SLOT_SHAPES = {"notes": "(?:" + re.escape(answer.NOTES.split("{notes}")[0]) + ".*?)?"}


def _template_pattern(template: str) -> re.Pattern[str]:
    """Turn a prompt template into a regex whose named groups capture its slots."""
    parts, seen = ["^"], set()
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is None:
            continue
        shape = _SLOT_SHAPES.get(name, ".*?")
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>{shape})")
        seen.add(name)
    return re.compile("".join(parts) + "$", re.DOTALL)


@dataclass(frozen=True)
class _Kind:
    name: str
    pattern: re.Pattern[str]
    literal: int  # length of the fixed text: the most specific template is tried first


def _kinds() -> list[_Kind]:
    templates = {
        "rgnn_next_step": rgnn_ret.NEXT_STEP,
        "rgnn_step_answer": rgnn_ret.STEP_ANSWER,
        "rgnn_critique": rgnn_ret.CRITIQUE,
        "gear_read_memory": gear.READ_WITH_MEMORY,
        "gear_read": gear.READ,
        "gear_reason": gear.REASON,
        "gear_rewrite": gear.REWRITE,
        "tog2_topics": tog2.TOPIC_PRUNE,
        "tog2_relations": tog2.RELATION_PRUNE,
        "tog2_reason": tog2.REASON,
        "tog2_reform": tog2.REFORM,
        "answer": answer.ANSWER,
        "standalone": chat.STANDALONE,
    }
    kinds = [
        _Kind(name, _template_pattern(t), len(re.sub(r"\{[a-z_]+\}", "", t)))
        for name, t in templates.items()
    ]
    return sorted(kinds, key=lambda k: -k.literal)


KINDS = _kinds()
PASSAGE_SLOTS = ("passages", "docs", "references")


def prompt_kind(prompt: str) -> tuple[str, dict[str, str]]:
    """Return which agent prompt this is and its slot values; an unknown prompt is an error."""
    for kind in KINDS:
        found = kind.pattern.match(prompt)
        if found:
            return kind.name, found.groupdict()
    raise ValueError(f"the oracle does not know this prompt: {prompt[:120]!r}…")


class Oracle:
    """What the oracle knows about one question: its hops and what the run has shown it."""

    def __init__(self, question: str, hops: Sequence[Hop]) -> None:
        if not hops:
            raise ValueError("the oracle needs a decomposition with at least one hop")
        self.question, self.hops = question, list(hops)
        self.found: list[bool] = [False] * len(hops)
        self.asked: dict[int, int] = {}
        self.shown: list[str] = []  # normalised passages, in the order shown

    def show(self, passages: str) -> list[str]:
        """Take in a passage slot; return its passages, and mark every hop now found."""
        pieces = [p.strip() for p in _PASSAGE_START.split("\n" + passages) if p.strip()]
        self.shown += [normalize_answer(p) for p in pieces]
        changed = True
        while changed:  # a hop may unlock the one that refers to it
            changed = False
            for i, hop in enumerate(self.hops):
                if self.found[i] or not all(self.found[k] for k in hop.refers if k < i):
                    continue
                wanted = normalize_answer(hop.answer)
                if wanted and any(wanted in p for p in self.shown):
                    self.found[i] = changed = True
        return pieces

    @property
    def done(self) -> bool:
        """Whether the last hop (the question's answer) is found."""
        return self.found[-1]

    def next_hop(self) -> int:
        """Return the first hop not found (the last one when all are)."""
        return next((i for i, f in enumerate(self.found) if not f), len(self.hops) - 1)

    def resolved(self, text: str) -> str:
        """Replace ``#k`` by hop k's answer."""
        return _REFERENCE.sub(lambda m: self.hops[int(m.group(1)) - 1].answer, text)

    def subject_relation(self, i: int) -> tuple[str, str]:
        """Return a hop's (subject, relation); a natural-language hop is ("", its question)."""
        text = self.resolved(self.hops[i].question)
        if ">>" in text:
            subject, relation = (s.strip() for s in text.split(">>", 1))
            return subject, relation
        return "", text.strip()

    def hop_question(self, i: int) -> str:
        """Render hop ``i`` as a question, e.g. "What is the capital of Mountrail County?"."""
        subject, relation = self.subject_relation(i)
        text = f"What is the {relation} of {subject}?" if subject else relation.rstrip("?") + "?"
        return text[0].upper() + text[1:]

    def ask(self) -> str:
        """Return the next hop's question; a repeated one carries the original question."""
        i = self.next_hop()
        self.asked[i] = self.asked.get(i, 0) + 1
        text = self.hop_question(i)
        return text if self.asked[i] == 1 else f"{text} ({self.question})"

    def fact(self, i: int) -> tuple[str, str, str]:
        """Return hop ``i`` as a triple (subject, relation, answer)."""
        subject, relation = self.subject_relation(i)
        return (subject or self.question, relation, self.hops[i].answer)

    def facts(self) -> list[tuple[str, str, str]]:
        """Return the triples of every found hop, in hop order."""
        return [self.fact(i) for i, f in enumerate(self.found) if f]

    def final(self) -> str:
        """Return the answer if found, else "unknown"."""
        return self.hops[-1].answer if self.done else "unknown"

    def holds_answer(self, passage: str) -> bool:
        """Whether a passage holds the answer of a found hop."""
        text = normalize_answer(passage)
        return any(
            f and normalize_answer(h.answer) in text
            for f, h in zip(self.found, self.hops, strict=True)
        )

    def reply(self, prompt: str) -> str:
        """Answer one prompt in its expected format."""
        kind, slots = prompt_kind(prompt)
        shown = [self.show(slots[s]) for s in PASSAGE_SLOTS if s in slots]
        return REPLIES[kind](self, slots, shown[0] if shown else [])


def _triples(facts: Sequence[tuple[str, str, str]]) -> str:
    return ", ".join(f'("{s}", "{p}", "{o}")' for s, p, o in facts)


def _step_answer(o: Oracle, slots: dict[str, str], _: list[str]) -> str:
    asked = slots["subquestion"].strip()
    for i in range(len(o.hops)):
        if o.found[i] and o.hop_question(i) in asked:
            return o.hops[i].answer
    return "unknown"


def _read(o: Oracle, slots: dict[str, str], _: list[str]) -> str:
    facts = o.facts()
    return _triples(facts) if facts else "No supporting facts in these documents."


def _gear_reason(o: Oracle, slots: dict[str, str], _: list[str]) -> str:
    if o.done:
        return f"Answerable: Yes\nAnswer: {o.final()}"
    return f"Answerable: No\nWhy: The facts do not say: {o.hop_question(o.next_hop())}"


def _answer(o: Oracle, slots: dict[str, str], passages: list[str]) -> str:
    cited = [n for n, p in enumerate(passages, start=1) if o.holds_answer(p)]
    return f"Answer: {o.final()}\nCited: {cited}"


def _topics(o: Oracle, slots: dict[str, str], _: list[str]) -> str:
    offered: dict[str, str] = json.loads(slots["entities"])
    subject, _relation = o.subject_relation(o.next_hop())
    names = [subject] + [h.answer for h, f in zip(o.hops, o.found, strict=True) if f]
    names += [h.question for h in o.hops if ">>" not in h.question]
    wanted = [normalize_answer(n) for n in names if n]

    def matches(entity: str) -> bool:
        e = normalize_answer(entity)
        return bool(e) and any(e in w or w in e for w in wanted)

    kept = {k: v for k, v in offered.items() if matches(v)} or offered
    return f"Output: {json.dumps(kept)}"


_ENTITY_BLOCK = re.compile(
    r"Entity (\d+): (.*?)\nAvailable Relations:\n(.*?)(?=\nEntity \d+: |\Z)", re.S
)


def relation_choices(
    blocks: str, relation: str, width: int
) -> list[tuple[int, str, list[tuple[str, float]]]]:
    """Choose each entity's relations for the next hop's ``relation`` (the module's rule)."""
    words = set(normalize_answer(relation).split())
    out = []
    for number, entity, listed in _ENTITY_BLOCK.findall(blocks):
        labels = [re.sub(r"^\d+\.\s*", "", line).strip() for line in listed.splitlines()]
        labels = [label for label in labels if label]
        scored = []
        for label in labels:
            mine = set(normalize_answer(label.replace("(reverse)", "")).split())
            share = len(mine & words) / len(mine) if mine else 0.0
            scored.append((label, round(10 * share, 1)))
        best = sorted((s for s in scored if s[1] > 0), key=lambda s: -s[1])[:width]
        out.append((int(number), entity, best or [(label, 1.0) for label in labels[:width]]))
    return out


def _relations(o: Oracle, slots: dict[str, str], _: list[str]) -> str:
    _subject, relation = o.subject_relation(o.next_hop())
    lines = []
    for number, entity, chosen in relation_choices(
        slots["entities"], relation, int(slots["width"])
    ):
        lines.append(f"Entity {number}: {entity}")
        lines += [
            f"{j}. {{{label} (Score: {score:g})}}" for j, (label, score) in enumerate(chosen, 1)
        ]
    return "\n".join(lines)


def _tog2_reason(o: Oracle, slots: dict[str, str], _: list[str]) -> str:
    if o.done:
        return f"{{Yes}}. The analyzed answer entity is {{{o.final()}}}."
    known = "; ".join(" ".join(f) for f in o.facts()) or "nothing found yet"
    return f"{{No}}. The useful information for now is {{{known}}}"


REPLIES: dict[str, Callable[[Oracle, dict[str, str], list[str]], str]] = {
    "rgnn_next_step": lambda o, s, p: o.ask(),
    "rgnn_step_answer": _step_answer,
    "rgnn_critique": lambda o, s, p: f"Critique: {'yes' if o.done else 'no'}",
    "gear_read_memory": _read,
    "gear_read": _read,
    "gear_reason": _gear_reason,
    "gear_rewrite": lambda o, s, p: f"Next Question: {o.ask()}",
    "tog2_topics": _topics,
    "tog2_relations": _relations,
    "tog2_reason": _tog2_reason,
    "tog2_reform": lambda o, s, p: f"{{{o.ask()}}}",
    "answer": _answer,
    "standalone": lambda o, s, p: s["question"].strip(),
}


class OracleChatModel(BaseChatModel):
    """A chat model that replies as :class:`Oracle` for one question (make one per question)."""

    question: str
    decomposition: list[tuple[str, str]]
    _oracle: Oracle | None = PrivateAttr(default=None)
    _calls: list[str] = PrivateAttr(default_factory=list)

    @property
    def oracle(self) -> Oracle:
        """The oracle's state for this question (built on first use)."""
        if self._oracle is None:
            self._oracle = Oracle(self.question, decomposition_hops(self.decomposition))
        return self._oracle

    @property
    def calls(self) -> list[str]:
        """Every prompt received, in order."""
        return self._calls

    @property
    def _llm_type(self) -> str:
        return "oracle"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        self._calls.append(prompt)
        text = self.oracle.reply(prompt)
        usage = {
            "input_tokens": len(prompt) // 4,
            "output_tokens": len(text) // 4,
            "total_tokens": (len(prompt) + len(text)) // 4,
        }
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(text, usage_metadata=usage))]
        )
