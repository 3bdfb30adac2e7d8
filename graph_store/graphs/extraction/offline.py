"""Offline extraction: no LLM, no model download, deterministic.

- **Entities**: mentions linked to the corpus's own page titles (and their aliases: title without
  the parenthetical, part before a comma), longest match first; other capitalised spans as
  unlinked named entities; each chunk also carries its own page's entity, which is what links a
  passage that mentions X to X's page (GNN-Ret's link edges, spec gnn_ret §2.5, own-title option).
- **Keywords** (IIER §2.2): five per chunk, the chunk's rarest mentioned entities (tf·idf), then
  salient content words; never the chunk's own title. They depend on the whole corpus, so they
  are picked over it (extraction.readings, which also keeps the readings between writes).
- **Documentation** (not Wikipedia): `inline code` spans (dotted paths too) and words joined by
  underscores (html_theme) are entities, whatever their case; so are the headings above a chunk
  (its ``section``), with a (page, "section", innermost heading) triple.
- **Triples**: within a sentence, subject = the first entity (the page's entity when the sentence
  opens with a pronoun), object = each later entity or year, predicate = the content words between
  them. Pattern-based relation extraction over linked mentions: cruder than an LLM, but honest and
  fast (seconds for thousands of chunks).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from hopgraph.graph_store.documents.schema import Chunk

from .base import Triple
from .normalise import title_aliases

_TOKEN = re.compile(r"\w+(?:['’.\-]\w+)*")
_YEAR = re.compile(r"1[0-9]{3}|20[0-9]{2}")
CONNECTORS = frozenset("""of the de da del der di du van von la le for on in upon""".split())
# A full stop after these ends neither a sentence nor a name ("Robert G. Vignola", "St. Louis").
ABBREVIATIONS = frozenset(
    "St Mr Mrs Dr Jr Sr Co Inc Ltd Mt No Gen Col Lt Sgt Capt Rev Prof".split()
)
ABBREVIATION = re.compile(r"(?:\b[A-Z]|\b(?:" + "|".join(ABBREVIATIONS) + r"))\.$")
PRONOUNS = frozenset("""he she it they his her its their this these""".split())
STOPWORDS = frozenset(
    """a an and are as at be been but by for from had has have he her his i if in into is it
    its of on or she that the their them then there these they this to was were which while
    who whom with after before during when where also not no one two three other such than
    most more many some all any each both between about over under up out only january
    february march april may june july august september october november december monday
    tuesday wednesday thursday friday saturday sunday mr mrs dr however although because
    since until though whose what why how would could should can will""".split()
)
MAX_PREDICATE_GAP = 12  # tokens between subject and object beyond which no relation is read
MAX_PREDICATE_WORDS = 4


def content_words(words: Sequence[str]) -> list[str]:
    """Return the words that can stand for a concept: not stopwords, longer than three letters."""
    return [w for w in words if len(w) > 3 and w not in STOPWORDS]


def token_key(text: str) -> str:
    """Return the matching key of a name: its lower-cased word tokens joined by spaces."""
    return " ".join(_TOKEN.findall(text.replace("’", "'").lower()))


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity or year found in a sentence, with token positions [start, end)."""

    key: str
    start: int
    end: int
    is_date: bool = False


def title_keys(title: str) -> tuple[str, ...]:
    """Return a title's entity key, then its aliases' keys (the regex work of a title index)."""
    return (token_key(title), *sorted({token_key(a) for a in title_aliases(title)}))


class TitleIndex:
    """Aliases of the corpus's page titles → the page entity, for longest-match linking.

    ``aliases`` holds every alias key of every title; the first title in string order claims a
    key. One-word aliases the corpus uses in lower case, and stop words, link nowhere ("Love,
    Honor and Behave" must not claim every "love"): :meth:`entity` leaves them out, so the
    same claims serve however the lower-case words change (extraction.readings keeps them).
    """

    def __init__(
        self,
        titles: Sequence[str],
        common_words: frozenset[str] = frozenset(),
        keys: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Index the titles' aliases.

        ``keys``: titles' :func:`title_keys` already worked out, the rest are worked out here.
        """
        known = keys or {}
        aliases: dict[str, str] = {}
        for title in sorted(set(titles)):
            entity, *others = known.get(title) or title_keys(title)
            for key in others:
                aliases.setdefault(key, entity)
        self.aliases: Mapping[str, str] = aliases
        self.common_words: Collection[str] = common_words
        self.longest = max((len(k.split()) for k in aliases), default=0)

    @classmethod
    def claimed(
        cls, aliases: Mapping[str, str], common_words: Collection[str], longest: int
    ) -> TitleIndex:
        """Return the index of claims already worked out (``longest``: most words in a key)."""
        index = cls.__new__(cls)
        index.aliases, index.common_words, index.longest = aliases, common_words, longest
        return index

    @staticmethod
    def indexes(key: str, common_words: Container[str]) -> bool:
        """Tell whether an alias key links: not a stop word, nor one word used in lower case."""
        return bool(key) and key not in STOPWORDS and (" " in key or key not in common_words)

    def entity(self, key: str) -> str | None:
        """Return the page entity an alias key links to, or ``None``."""
        found = self.aliases.get(key)
        return found if found is not None and self.indexes(key, self.common_words) else None

    def match(self, words: Sequence[str], start: int) -> tuple[str, int] | None:
        """Return (entity, end) of the longest alias starting at ``words[start]``."""
        for end in range(min(len(words), start + self.longest), start, -1):
            entity = self.entity(" ".join(words[start:end]))
            if entity is not None:
                return entity, end
        return None


def extraction_sentences(text: str) -> list[str]:
    """Split into sentences, re-joining splits made after initials and abbreviations."""
    # chunking imports the Markdown parser: for extraction, not for queries that use token_key
    from hopgraph.graph_store.documents.chunking import split_sentences

    out: list[str] = []
    for sentence in split_sentences(text):
        if out and ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


def corpus_titles(chunks: Iterable[Chunk]) -> TitleIndex:
    """Index a corpus's page titles, with the words the corpus also writes in lower case.

    One pass: an index's chunks are read from its table in turn, not held.
    """
    lower_case: set[str] = set()
    titles: list[str] = []
    for chunk in chunks:
        lower_case.update(lower_case_words(chunk))
        if chunk.title:
            titles.append(chunk.title)
    return TitleIndex(titles, frozenset(lower_case))


def find_mentions(sentence: str, titles: TitleIndex) -> tuple[Sequence[str], list[Mention]]:
    """Return the sentence's lower-cased tokens and its mentions, in order."""
    found = list(_TOKEN.finditer(sentence))
    raw = [m.group() for m in found]
    # A span never crosses punctuation: "Ronald Howard, Mary Germaine" is two names.
    joined = [_joins(sentence[a.end() : b.start()], a.group()) for a, b in pairwise(found)]
    words = [w.replace("’", "'").lower() for w in raw]
    code = _code_spans(sentence, found)
    mentions: list[Mention] = []
    i = 0
    while i < len(raw):
        if i in code:  # `inline code` names one thing, whatever its case
            end = code[i]
            key = " ".join(words[i:end])
            if len(key) > 1 and not key.isdigit():
                mentions.append(Mention(key, i, end))
            i = end
        elif _YEAR.fullmatch(raw[i]):
            mentions.append(Mention(raw[i], i, i + 1, is_date=True))
            i += 1
        elif not raw[i][0].isupper():
            if is_identifier(raw[i]):  # html_theme, sphinx.ext.autodoc: a name in code
                mentions.append(Mention(words[i], i, i + 1))
            i += 1
        elif linked := titles.match(words, i):
            mentions.append(Mention(linked[0], i, linked[1]))
            i = linked[1]
        else:
            end = _span_end(raw, joined, i)
            key = _span_key(words, i, end)
            # One capitalised word the corpus also writes in lower case ("District", "Film")
            # is a common word that opens a sentence or a heading, not a name.
            if key and not (" " not in key and key in titles.common_words):
                linked_key = titles.entity(key)
                mentions.append(Mention(key if linked_key is None else linked_key, i, end))
            i = end
    return words, mentions


_CODE_SPAN = re.compile(r"``([^`]{1,80}?)``|`([^`]{1,80}?)`")
MAX_CODE_WORDS = 6
"""Inline code longer than this is a snippet, not a name."""


def _code_spans(sentence: str, tokens: Sequence[re.Match[str]]) -> dict[int, int]:
    """Return the inline code spans of a sentence as {first token: end token}.

    ``name`` (reStructuredText) and `name` (Markdown); a link's target (`text <target>`_)
    is left out. Only spans of at most :data:`MAX_CODE_WORDS` tokens that neither start nor end
    with a space, in sentences with no ``''``: Wikipedia dumps quote ``like this'' (MuSiQue).
    """
    if "`" not in sentence or "''" in sentence:
        return {}
    starts = [t.start() for t in tokens]
    out: dict[int, int] = {}
    for found in _CODE_SPAN.finditer(sentence):
        begin = found.start(1) if found.group(1) is not None else found.start(2)
        body = found.group(1) if found.group(1) is not None else found.group(2)
        if body != body.strip():
            continue
        stop = begin + (body.index("<") if "<" in body else len(body))
        inside = [n for n, at in enumerate(starts) if begin <= at < stop]
        if inside and len(inside) <= MAX_CODE_WORDS and inside[-1] - inside[0] + 1 == len(inside):
            out[inside[0]] = inside[-1] + 1
    return out


def is_identifier(token: str) -> bool:
    """Tell whether a lower-case token is a name in code: words joined by _ (html_theme).

    Two parts with letters at least ("formula_1" is a dump's placeholder). Dotted paths count
    only in inline code: outside it "diplomacy.for" is a missing space.
    """
    parts = [p for p in token.split("_") if any(ch.isalpha() for ch in p)]
    return len(parts) >= 2


def _span_key(words: Sequence[str], start: int, end: int) -> str:
    """Return the key of a capitalised span without edge stop words ("When Guy's" → "guy")."""
    span = list(words[start:end])
    while span and span[0] in STOPWORDS:
        span.pop(0)
    while span and span[-1] in STOPWORDS | CONNECTORS:
        span.pop()
    if span and span[-1].endswith("'s"):
        span[-1] = span[-1][:-2]
    key = " ".join(span)
    return key if len(key) > 1 and not key.isdigit() else ""


def _joins(gap: str, before: str) -> bool:
    """Tell whether two tokens may belong to one name: a space, or the dot of an initial."""
    if gap.isspace():
        return True
    initial = (len(before) == 1 and before.isupper()) or before in ABBREVIATIONS
    return initial and gap.strip() == "."


def _span_end(raw: Sequence[str], joined: Sequence[bool], start: int) -> int:
    """Extend a capitalised span over capitalised words and inner connectors ("of", "van")."""
    end = start + 1
    while end < len(raw) and joined[end - 1]:
        if raw[end][0].isupper() and not _YEAR.fullmatch(raw[end]):
            end += 1
        elif (
            raw[end].lower() in CONNECTORS
            and end + 1 < len(raw)
            and joined[end]
            and raw[end + 1][0].isupper()
        ):
            end += 2
        else:
            break
    return end


def read_triples(words: Sequence[str], mentions: list[Mention], page: str) -> list[Triple]:
    """Read (subject, predicate, object) triples from one sentence's mentions."""
    if words and words[0] in PRONOUNS:
        subject, subject_end = page, 1
        objects = [m for m in mentions if m.start >= 1]
    else:
        first = next((m for m in mentions if not m.is_date), None)
        if first is None:
            return []
        subject, subject_end = first.key, first.end
        objects = [m for m in mentions if m.start >= first.end]
    inside = {i for m in mentions for i in range(m.start, m.end)}
    triples = []
    for obj in objects:
        if obj.key == subject or obj.start - subject_end > MAX_PREDICATE_GAP:
            continue
        # The predicate is the plain words between subject and object: no other mention, no
        # numbers, no stop words ("was born in 1950 in" → "born").
        between = [
            w
            for i, w in enumerate(words[subject_end : obj.start], start=subject_end)
            if i not in inside
            and w not in STOPWORDS
            and not any(ch.isdigit() for ch in w)
            and any(ch.isalpha() for ch in w)  # not "__" (a reStructuredText link's tail)
        ]
        predicate = " ".join(between[-MAX_PREDICATE_WORDS:]) or "related to"
        triples.append(Triple(subject, predicate, obj.key))
    return triples


@dataclass(frozen=True, slots=True)
class Reading:
    """What one chunk yields before corpus statistics pick its keywords."""

    entities: tuple[str, ...]
    triples: tuple[Triple, ...]
    entity_counts: dict[str, int]
    word_counts: dict[str, int]
    capitals: frozenset[str]
    """The chunk's tokens written with a capital (lower-cased; "guy's" also as "guy"): a name
    or title alias can only start, and a span can only hold a name, where one is."""


def lower_case_words(chunk: Chunk) -> set[str]:
    """Return the chunk's tokens written in lower case (what makes a one-word alias common)."""
    return {w for w in _TOKEN.findall(chunk.text) if w[0].islower()}


def read_chunk(chunk: Chunk, titles: TitleIndex) -> Reading:
    """Read one chunk's entities, triples and word counts against the corpus's titles."""
    page = token_key(chunk.title) if chunk.title else ""
    entities = [page] if page else []
    triples: list[Triple] = []
    entity_counts: Counter[str] = Counter()
    word_counts: Counter[str] = Counter()
    capitals: set[str] = set()
    for sentence in extraction_sentences(chunk.text):
        words, mentions = find_mentions(sentence, titles)
        capitals.update(_capitals(sentence))
        mentions = [_resolve_to_page(m, page) for m in mentions]
        found = [m.key for m in mentions if not m.is_date]
        entity_counts.update(found)
        entities.extend(found)
        word_counts.update(content_words(words))
        if page or found:
            triples.extend(read_triples(words, mentions, page or found[0]))
    # The headings above the chunk name what it is about, as its page's title does.
    headings = [token_key(h) for h in chunk.section.split(" > ")] if chunk.section else []
    headings = [h for h in headings if h and h != page]
    entities.extend(headings)
    entity_counts.update(headings)
    if headings and page:
        triples.append(Triple(page, "section", headings[-1]))
    return Reading(
        tuple(dict.fromkeys(entities)),
        tuple(dict.fromkeys(triples)),
        dict(entity_counts),
        dict(word_counts),
        frozenset(capitals),
    )


def _capitals(sentence: str) -> set[str]:
    out = set()
    for raw in _TOKEN.findall(sentence):
        if raw[0].isupper():
            word = raw.replace("’", "'").lower()
            out.add(word)
            if word.endswith("'s"):
                out.add(word[:-2])
    return out


def _resolve_to_page(mention: Mention, page: str) -> Mention:
    """Map a part of the page's own name ("Boritzer" in "Etan Boritzer") to the page."""
    if mention.is_date or not page or mention.key == page:
        return mention
    words, name = mention.key.split(), page.split()
    if len(words) < len(name) and (name[: len(words)] == words or name[-len(words) :] == words):
        return Mention(page, mention.start, mention.end)
    return mention
