"""An answer without an LLM: the evidence sentences that best answer the question, each cited.

With no LLM, ``ask`` (the CLI, MCP, the LangGraph server and the page) still answers: it picks
at most three sentences (600 characters) out of the passages a method ranks first, one per hop
where the evidence spans passages, and cites the passage of each.

What a "sentence" is: a prose sentence (not cut after initials or "c."), a fenced code block
whole, a list item whole (to a blank line or the next item), or a Markdown heading.

How a sentence is chosen (no model beyond the index's own embedder):

- every sentence is scored by the cosine of its embedding (the passage's title, then the
  sentence, as passages are embedded) to the question's, plus the share of the question's
  content words it holds (stemmed; the passage's title counts, since a sentence about its
  page's subject often names it only as "he" or "it"), weighted by how rare each word is among
  the sentences; a sentence that names its page's subject gains a little (it reads on its own),
  and one that asks ("How do I upload a file?"), or a heading, is taken only where nothing else
  is left;
- the best sentence comes first;
- each next hop is a sentence of another passage, scored against the question *and* the
  chosen sentences (the sum of their vectors), that holds a word the chosen sentences do not:
  one of the question's, or a *bridge*, a word of a name a chosen sentence brought in that the
  question lacks ("educated at the University of the Philippines" → the University of the
  Philippines' page, which gains again as the page that name leads to). A further sentence
  must fit in the characters left.

Each passage also gets its own best sentence (:attr:`ExtractiveAnswer.answering`), which
``ask`` shows whole instead of cutting the passage off at a fixed width.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np

from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.extraction.offline import STOPWORDS, extraction_sentences
from hopgraph.tools import Hit

MAX_SENTENCES = 3
"""The most sentences an answer gives: one per hop of a two-hop question, and one to spare."""
MAX_CHARS = 600
"""The most characters an answer's sentences hold; a first sentence longer is cut at a word."""

# The weights below were chosen on the train sets (hotpotqa-train, musique-train) for
# answer-string recall within the limits above: evals/results/extractive/train-grid.txt has
# the grid (`python -m hopgraph.evals.extractive --grid`).
LEXICAL_WEIGHT = 1.0
"""Weight of the question's words held against the cosine (both lie in [0, 1])."""
BRIDGE_WEIGHT = 0.5
"""A bridge word (of a name a chosen sentence brought in) counts half a question word."""
MIN_GAIN = 0.0
"""What a further hop's sentence must add (its weighted share of the words still wanted)."""
LINK_WEIGHT = 0.5
"""What a passage whose title a chosen sentence names adds: it is where the next hop leads."""
CONTEXT_WEIGHT = 0.5
"""A further hop is scored against the question plus the chosen sentences (their vectors)."""
SUBJECT_WEIGHT = 0.2
"""A sentence that names its page's subject ("Kris Benson was drafted") over one that says
"he": it reads on its own, and a comparison's answer is the subject's name."""
RANK_WEIGHT = 0.5
"""What a passage's place in the method's list says: a sentence loses this times the log of
its passage's rank (the method already weighed the passages against each other)."""
TYPE_WEIGHT = 0.2
"""A sentence that holds what the question asks for: a year or date for "when", a number for
"how many", a name the question lacks for "who" or "where"."""
ASKS_PENALTY = 3.0
"""A sentence that asks ("How do I upload a file?"), or a heading, does not answer: the penalty
is more than a score can otherwise differ by, so one is taken only where nothing else is left."""

_WORD = re.compile(r"\w+")
_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})", re.MULTILINE)
_NAME = re.compile(r"\b[A-Z][\w'.-]*(?:\s+(?:of|the|de|von|van|and|du|la|le)?\s*[A-Z][\w'.-]*)*")
"""A name: capitalised words, with the small words names hold ("University of the Philippines")."""
_HEADING = re.compile(r"^#{1,6}\s")
"""A Markdown heading: a piece of its own, which names a section and states nothing."""
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#\.)\s+")
"""A line that starts a list item: a bullet, or a number."""


@dataclass(frozen=True)
class AnswerSentence:
    """One sentence of the answer: its text, the passage it cites (1-based) and its score."""

    text: str
    passage: int
    id: str
    title: str
    score: float


@dataclass(frozen=True)
class ExtractiveAnswer:
    """The sentences that answer, in hop order, and each passage's own best sentence."""

    sentences: list[AnswerSentence]
    answering: dict[str, str] = field(default_factory=dict)
    """Chunk id → the sentence of that passage that best answers the question."""

    @property
    def text(self) -> str:
        """Return the answer as one line: each sentence followed by its citation, "[2]"."""
        return " ".join(f"{s.text} [{s.passage}]" for s in self.sentences)

    def to_dict(self) -> dict:
        """Return the answer as JSON-ready data: text, sentences (with citations), answering."""
        return {
            "text": self.text,
            "sentences": [s.__dict__ for s in self.sentences],
            "answering": self.answering,
        }


@dataclass(frozen=True)
class Weights:
    """How sentences are scored and when a further hop is taken (see the module doc)."""

    lexical: float = LEXICAL_WEIGHT
    bridge: float = BRIDGE_WEIGHT
    link: float = LINK_WEIGHT
    min_gain: float = MIN_GAIN
    context: float = CONTEXT_WEIGHT
    subject: float = SUBJECT_WEIGHT
    rank: float = RANK_WEIGHT
    kind: float = TYPE_WEIGHT
    asks: float = ASKS_PENALTY


@dataclass(frozen=True)
class _Candidate:
    text: str
    passage: int
    hit: Hit
    words: frozenset[str]
    names: frozenset[str]
    """The words of the names it holds (a bridge, where the question lacks them)."""
    subject: bool
    """It names its page's subject: it holds a word of the page's title."""
    asks: bool


@dataclass(frozen=True)
class Sentences:
    """The passages' sentences with what choosing among them needs (embedded once)."""

    candidates: list[_Candidate]
    asked: frozenset[str]
    rarity: dict[str, float]
    vectors: np.ndarray
    """Unit vectors: the question's first, then each candidate's."""
    question: str

    @cached_property
    def typed(self) -> np.ndarray:
        """Return 1 for each sentence that holds what the question asks for, else 0."""
        return np.array([_holds_kind(c.text, self.question) for c in self.candidates], float)

    @cached_property
    def cosines(self) -> np.ndarray:
        """Return each sentence's cosine to the question."""
        return self.vectors[1:] @ self.vectors[0]


def extractive_answer(
    index: Index, question: str, hits: Sequence[Hit], weights: Weights | None = None
) -> ExtractiveAnswer:
    """Return the answer ``hits`` hold for ``question``: sentences chosen as the module says."""
    return choose(sentences_of(index, question, hits), weights or Weights())


def sentences_of(index: Index, question: str, hits: Sequence[Hit]) -> Sentences:
    """Split the passages into sentences and embed each with the question."""
    candidates = _candidates(hits)
    rarity = _rarity([c.words for c in candidates])
    vectors = _vectors(index, question, candidates)
    return Sentences(candidates, frozenset(_words(question)), rarity, vectors, question)


def choose(found: Sentences, weights: Weights) -> ExtractiveAnswer:
    """Pick the answer's sentences, one a passage, hop by hop (the module doc says how)."""
    candidates = found.candidates
    passages = len({c.passage for c in candidates})
    chosen: list[int] = []
    covered: set[str] = set()  # the words the chosen sentences hold
    bridges: set[str] = set()  # the words of names they brought in
    room = MAX_CHARS
    while len(chosen) < min(MAX_SENTENCES, passages):
        best = _next_hop(found, weights, chosen, found.asked - covered, bridges, room)
        if best is None:
            break
        chosen.append(best)
        room -= len(candidates[best].text) + 1
        covered |= candidates[best].words
        bridges |= candidates[best].names - found.asked
    score = _scorer(found, weights)
    sentences = [_sentence(candidates[i], score(i)) for i in chosen]
    return ExtractiveAnswer(sentences, _answering(found, score))


def _next_hop(
    found: Sentences,
    weights: Weights,
    chosen: list[int],
    left: set[str] | frozenset[str],
    bridges: set[str],
    room: int,
) -> int | None:
    """Return the best next sentence, or None when none brings enough in or none fits."""
    candidates, rarity = found.candidates, found.rarity
    cosines, linked = found.cosines, set()
    if chosen:  # a further hop reads the question with what the chosen sentences say
        context = found.vectors[0] + weights.context * found.vectors[[i + 1 for i in chosen]].sum(0)
        cosines = found.vectors[1:] @ (context / max(float(np.linalg.norm(context)), 1e-12))
        linked = _linked(candidates, [candidates[i].text for i in chosen], found.question)
    used = {candidates[i].passage for i in chosen}
    best, best_score = None, -math.inf
    for i, c in enumerate(candidates):
        if c.passage in used or (chosen and len(c.text) + 1 > room):
            continue
        gain = _held(c.words, left, rarity) + weights.bridge * _held(c.words, bridges, rarity)
        gain += weights.link * (c.passage in linked)
        if chosen and gain <= weights.min_gain:  # a further hop must bring something in
            continue
        score = float(cosines[i]) + weights.lexical * gain + weights.kind * found.typed[i]
        score += weights.subject * c.subject - weights.asks * c.asks
        score -= weights.rank * math.log(c.passage)
        if score > best_score:
            best, best_score = i, score
    return best


def _linked(candidates: Sequence[_Candidate], said: Sequence[str], question: str) -> set[int]:
    """Return the passages whose page title a chosen sentence names and the question does not.

    "ex-wife of pitcher Kris Benson" leads to the page Kris Benson: the next hop. So does a
    name the title holds ("a 2000 Hong Kong action film" → British Hong Kong).
    """
    text, asked = " ".join(said).casefold(), question.casefold()
    names = {n.casefold() for n in _NAME.findall(" ".join(said)) if len(n) > 3}
    names = {n for n in names if n not in asked}
    out = set()
    for c in candidates:
        title = _TITLE_QUALIFIER.sub("", c.hit.title).strip().casefold()
        named = len(title) > 2 and title in text and title not in asked
        if named or any(re.search(rf"\b{re.escape(n)}\b", title) for n in names):
            out.add(c.passage)
    return out


_KINDS = (
    ("date", re.compile(r"\b(when|what (year|date|day|month|century|decade)|which year|"
                        r"birthday|date of birth|born on)\b")),
    ("number", re.compile(r"\b(how (many|much|old|long|far|tall|big|high|large)|"
                          r"what (percentage|number|age)|population)\b")),
    ("name", re.compile(r"\b(where|(what|which) (country|city|state|county|town|nation)|"
                        r"who|whom|whose)\b")),
)  # fmt: skip
"""What a question asks for, by its words, the first that matches ("the physicist who shared
the prize ... in what country" asks for a place: a name)."""
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
_MONTH = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|"
                    r"November|December)\b")  # fmt: skip
_NUMBER = re.compile(
    r"\b\d[\d,.]*\b|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozen|"
    r"hundred|thousand|million|billion)\b",
    re.IGNORECASE,
)


def _holds_kind(text: str, question: str) -> bool:
    """Tell whether ``text`` holds what ``question`` asks for (False when it asks for nothing)."""
    asked = question.lower()
    kind = next((name for name, pattern in _KINDS if pattern.search(asked)), None)
    if kind == "date":
        return bool(_YEAR.search(text) or _MONTH.search(text))
    if kind == "number":
        return bool(_NUMBER.search(text))
    if kind == "name":  # a name of which some word is not the question's
        return any(
            any(word.lower() not in asked for word in name.split()) for name in _NAME.findall(text)
        )
    return False


_TITLE_QUALIFIER = re.compile(r"\s*\([^)]*\)$")
"""A title's trailing qualifier, "(film)" in "Always (2011 film)": sentences name it without."""


def _candidates(hits: Sequence[Hit]) -> list[_Candidate]:
    """Return every sentence of the passages (code blocks, list items whole), with its words."""
    out = []
    for n, hit in enumerate(hits, start=1):
        title_words = _words(_TITLE_QUALIFIER.sub("", hit.title))
        for text in _sentences(hit.text):
            words = _words(text)
            names = frozenset(w for name in _NAME.findall(text) for w in _words(name))
            subject = bool(set(title_words) & set(words))
            asks = text.rstrip().endswith("?") or bool(_HEADING.match(text))
            out.append(
                _Candidate(text, n, hit, frozenset(words + title_words), names, subject, asks)
            )
    return out


def _sentences(text: str) -> list[str]:
    """Split a passage into sentences; a fenced code block stays whole (it is one statement)."""
    if not _CODE_FENCE.search(text):
        return _items(text)
    out: list[str] = []
    for n, part in enumerate(re.split(r"(^\s*(?:`{3,}|~{3,}).*?^\s*(?:`{3,}|~{3,})\s*$)",
                                      text, flags=re.MULTILINE | re.DOTALL)):  # fmt: skip
        if n % 2:  # a fenced block
            out.append(part.strip())
        else:
            out += _items(part)
    return [s for s in out if s]


def _items(text: str) -> list[str]:
    """Split prose into sentences, each list item whole (to a blank line or the next item)."""
    out: list[str] = []
    prose: list[str] = []
    item: list[str] = []
    for line in [*text.splitlines(), ""]:
        if _HEADING.match(line):  # a piece of its own
            out += [*_prose("\n".join(prose)), *([" ".join(item)] if item else []), line.strip()]
            prose, item = [], []
            continue
        starts = bool(_LIST_ITEM.match(line))
        if item and (starts or not line.strip()):
            out.append(" ".join(item))
            item = []
        if starts or (item and line.strip()):
            if prose:
                out += _prose("\n".join(prose))
                prose = []
            item.append(" ".join(line.split()))
        elif line.strip():
            prose.append(line)
    out += _prose("\n".join(prose))
    return out


_CONTINUES = re.compile(r"^[a-z(),;:\-–]")
"""A piece that starts so goes on the sentence before: a split after "c." or "approx."."""


_OPEN = re.compile(r"\([^)]*$|\b(?:c|ca|cf|vs|approx|e\.g|i\.e)\.$")
"""A piece that ends so is cut short: inside parentheses ("(c. 1200"), after "c." or "e.g."."""


def _prose(text: str) -> list[str]:
    """Split prose into sentences, re-joining splits after initials and abbreviations."""
    out: list[str] = []
    for piece in extraction_sentences(text):
        piece = " ".join(piece.split())
        if out and (_CONTINUES.match(piece) or _OPEN.search(out[-1])):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
    return out


@cache
def _stemmer():  # PyStemmer has no types
    import Stemmer

    return Stemmer.Stemmer("english")


def _words(text: str) -> list[str]:
    """Return the stemmed content words of ``text`` (no stop words, no single letters)."""
    found = [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS]
    return _stemmer().stemWords(found)


def _rarity(sentences: Sequence[frozenset[str]]) -> dict[str, float]:
    """Return each word's weight: its inverse document frequency among the sentences."""
    n = len(sentences)
    df = Counter(w for s in sentences for w in s)
    return {w: math.log(1 + n / d) for w, d in df.items()}


def _held(words: frozenset[str], wanted: set[str] | frozenset[str], rarity: dict) -> float:
    """Return the weighted share of ``wanted`` that ``words`` hold (0 when nothing is wanted)."""
    total = sum(rarity.get(w, math.log(2)) for w in wanted)
    if total == 0:
        return 0.0
    return sum(rarity.get(w, 0.0) for w in wanted & words) / total


def _vectors(index: Index, question: str, candidates: Sequence[_Candidate]) -> np.ndarray:
    """Return unit vectors of the question and each sentence, embedded as passages are."""
    texts = [f"{c.hit.title}\n{c.text}" if c.hit.title else c.text for c in candidates]
    vectors = np.asarray(index.embedder.embed([question, *texts]), dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _scorer(found: Sentences, weights: Weights) -> Callable[[int], float]:
    """Return a sentence's score for the question alone: cosine plus the words it holds."""

    def score(i: int) -> float:
        held = _held(found.candidates[i].words, found.asked, found.rarity)
        return float(found.cosines[i]) + weights.lexical * held

    return score


def _sentence(c: _Candidate, score: float) -> AnswerSentence:
    text = c.text
    if len(text) > MAX_CHARS:  # only a first sentence can be: cut at a word, marked
        text = text[: MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return AnswerSentence(text, c.passage, c.hit.id, c.hit.title, round(score, 4))


def _answering(found: Sentences, score: Callable[[int], float]) -> dict[str, str]:
    """Return each passage's best sentence for the question alone."""
    best: dict[str, tuple[float, str]] = {}
    for i, c in enumerate(found.candidates):
        value = score(i)
        if c.hit.id not in best or value > best[c.hit.id][0]:
            best[c.hit.id] = (value, c.text)
    return {chunk: text for chunk, (_, text) in best.items()}
