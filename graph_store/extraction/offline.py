"""Offline extraction: no LLM, no model download, deterministic.

- **Entities**: mentions linked to the corpus's own page titles (and their aliases: title without
  the parenthetical, part before a comma), longest match first; other capitalised spans as
  unlinked named entities; each chunk also carries its own page's entity, which is what links a
  passage that mentions X to X's page (GNN-Ret's link edges, spec gnn_ret §2.5, own-title option).
- **Keywords** (IIER §2.2): five per chunk, the chunk's rarest mentioned entities (tf·idf), then
  salient content words; never the chunk's own title.
- **Triples**: within a sentence, subject = the first entity (the page's entity when the sentence
  opens with a pronoun), object = each later entity or year, predicate = the content words between
  them. Pattern-based relation extraction over linked mentions: cruder than an LLM, but honest and
  fast (seconds for thousands of chunks).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import orjson
from tqdm.auto import tqdm

from graph_store.chunking import split_sentences
from graph_store.documents import Chunk

from .base import Extraction, Triple
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
READINGS_FILE = "offline-readings.jsonl"
LOWER_FILE = "offline-lower-case.json"
KEYWORDS_PER_CHUNK = 5
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


class TitleIndex:
    """Aliases of the corpus's page titles → the page entity, for longest-match linking."""

    def __init__(self, titles: Sequence[str], common_words: frozenset[str] = frozenset()) -> None:
        """Index the titles' aliases; one-word aliases the corpus uses in lower case are skipped.

        ("Love, Honor and Behave" must not claim every "love".)
        """
        self.aliases: dict[str, str] = {}
        self.common_words = common_words
        for title in sorted(set(titles)):
            entity = token_key(title)
            for alias in title_aliases(title):
                key = token_key(alias)
                if key and key not in STOPWORDS and (" " in key or key not in common_words):
                    self.aliases.setdefault(key, entity)
        self.longest = max((len(k.split()) for k in self.aliases), default=0)

    def match(self, words: list[str], start: int) -> tuple[str, int] | None:
        """Return (entity, end) of the longest alias starting at ``words[start]``."""
        for end in range(min(len(words), start + self.longest), start, -1):
            entity = self.aliases.get(" ".join(words[start:end]))
            if entity is not None:
                return entity, end
        return None


def extraction_sentences(text: str) -> list[str]:
    """Split into sentences, re-joining splits made after initials and abbreviations."""
    out: list[str] = []
    for sentence in split_sentences(text):
        if out and ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


def corpus_titles(chunks: Sequence[Chunk]) -> TitleIndex:
    """Index a corpus's page titles, with the words the corpus also writes in lower case."""
    lower_case = frozenset(w for c in chunks for w in lower_case_words(c))
    return TitleIndex([c.title for c in chunks if c.title], lower_case)


def find_mentions(sentence: str, titles: TitleIndex) -> tuple[list[str], list[Mention]]:
    """Return the sentence's lower-cased tokens and its mentions, in order."""
    found = list(_TOKEN.finditer(sentence))
    raw = [m.group() for m in found]
    # A span never crosses punctuation: "Ronald Howard, Mary Germaine" is two names.
    joined = [_joins(sentence[a.end() : b.start()], a.group()) for a, b in pairwise(found)]
    words = [w.replace("’", "'").lower() for w in raw]
    mentions: list[Mention] = []
    i = 0
    while i < len(raw):
        if _YEAR.fullmatch(raw[i]):
            mentions.append(Mention(raw[i], i, i + 1, is_date=True))
            i += 1
        elif not raw[i][0].isupper():
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
                mentions.append(Mention(titles.aliases.get(key, key), i, end))
            i = end
    return words, mentions


def _span_key(words: list[str], start: int, end: int) -> str:
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


def _span_end(raw: list[str], joined: list[bool], start: int) -> int:
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


def read_triples(words: list[str], mentions: list[Mention], page: str) -> list[Triple]:
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
            if i not in inside and w not in STOPWORDS and not any(ch.isdigit() for ch in w)
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

    def to_row(self, chunk_id: str) -> list:
        """Return a JSON-ready row."""
        triples = [[t.subject, t.predicate, t.object] for t in self.triples]
        return [
            chunk_id,
            self.entities,
            triples,
            self.entity_counts,
            self.word_counts,
            sorted(self.capitals),
        ]

    @classmethod
    def from_row(cls, row: list) -> Reading:
        """Rebuild a reading from :meth:`to_row` output (without its chunk id)."""
        _, entities, triples, entity_counts, word_counts, capitals = row
        return cls(
            tuple(entities),
            tuple(Triple(*t) for t in triples),
            entity_counts,
            word_counts,
            frozenset(capitals),
        )


def lower_case_words(chunk: Chunk) -> set[str]:
    """Return the chunk's tokens written in lower case (what makes a one-word alias common)."""
    return {w for w in _TOKEN.findall(chunk.text) if w[0].islower()}


class CorpusReadings:
    """The offline extractor's state over a corpus, kept between writes.

    Every chunk's reading depends on the corpus only through the title index (the titles and the
    words written in lower case), and its keywords on the corpus's document frequencies. So an
    add or delete re-reads only the new chunks and the chunks that contain an alias or a word
    whose standing changed, then picks every chunk's keywords again from the stored counts:
    the result equals a fresh extraction of the final corpus.
    """

    def __init__(
        self,
        corpus: Sequence[Chunk] = (),
        readings: dict[str, Reading] | None = None,
        lower: Counter[str] | None = None,
    ) -> None:
        """Resume from a saved state of ``corpus`` (its readings and lower-case word counts)."""
        self.readings: dict[str, Reading] = readings or {}
        self.lower: Counter[str] = lower or Counter()
        self.titles: Counter[str] = Counter(c.title for c in corpus if c.title)
        self.entity_df: Counter[str] = Counter()
        self.word_df: Counter[str] = Counter()
        for reading in self.readings.values():
            self._count(reading, 1)

    def update(
        self,
        corpus: Sequence[Chunk],
        removed: Sequence[Chunk],
        added: Sequence[Chunk],
        show_progress: bool = False,
    ) -> list[Extraction]:
        """Apply a change (``removed`` and ``added`` chunks); return ``corpus``'s extractions."""
        changed = self._shift_titles(removed, added) | self._shift_lower(removed, added)
        titles = TitleIndex(list(self.titles), frozenset(self.lower))  # counts are never 0
        for chunk in removed:
            self._count(self.readings.pop(chunk.id), -1)
        new_ids = {c.id for c in added}
        keys = _KeyIndex(changed)
        stale = [
            c for c in corpus if c.id not in new_ids and keys.may_occur(c, self.readings[c.id])
        ]
        for chunk in tqdm(
            [*stale, *added], desc="extracting", unit="chunk", disable=not show_progress
        ):
            if chunk.id in self.readings:
                self._count(self.readings[chunk.id], -1)
            reading = read_chunk(chunk, titles)
            self.readings[chunk.id] = reading
            self._count(reading, 1)
        n = max(len(corpus), 1)
        return [
            Extraction(
                chunk_id=chunk.id,
                entities=(r := self.readings[chunk.id]).entities,
                keywords=tuple(_keywords(chunk, r, self.entity_df, self.word_df, n)),
                triples=r.triples,
            )
            for chunk in corpus
        ]

    def save(self, directory: Path) -> None:
        """Write the readings (one line per chunk) and the lower-case word counts."""
        # orjson: every write reads and writes one line per chunk (json took a fifth of an add)
        with (directory / READINGS_FILE).open("wb") as handle:
            for chunk_id, reading in self.readings.items():
                handle.write(orjson.dumps(reading.to_row(chunk_id)) + b"\n")
        (directory / LOWER_FILE).write_text(json.dumps(self.lower), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, corpus: Sequence[Chunk]) -> CorpusReadings | None:
        """Resume the state saved with ``corpus``; ``None`` when there is none to resume."""
        if not (directory / READINGS_FILE).is_file() or not (directory / LOWER_FILE).is_file():
            return None
        with (directory / READINGS_FILE).open("rb") as handle:
            rows = [orjson.loads(line) for line in handle if line.strip()]
        readings = {row[0]: Reading.from_row(row) for row in rows}
        if set(readings) != {c.id for c in corpus}:
            return None  # not the state of this corpus: start afresh
        lower = Counter(json.loads((directory / LOWER_FILE).read_text(encoding="utf-8")))
        return cls(corpus, readings, lower)

    def _count(self, reading: Reading, sign: int) -> None:
        for counter, items in (
            (self.entity_df, reading.entity_counts),
            (self.word_df, reading.word_counts),
        ):
            for item in items:
                counter[item] += sign
                if not counter[item]:
                    del counter[item]

    def _shift_titles(self, removed: Sequence[Chunk], added: Sequence[Chunk]) -> set[str]:
        """Count the change's titles; return the alias keys of titles that came or went."""
        flipped = _shift(
            self.titles, [c.title for c in removed if c.title], [c.title for c in added if c.title]
        )
        return {token_key(a) for t in flipped for a in title_aliases(t)} - {""}

    def _shift_lower(self, removed: Sequence[Chunk], added: Sequence[Chunk]) -> set[str]:
        """Count lower-case usage; return the words that became or stopped being common."""
        flipped = _shift(
            self.lower,
            [w for c in removed for w in lower_case_words(c)],
            [w for c in added for w in lower_case_words(c)],
        )
        return {w for w in flipped if w == w.lower()}


def _shift(counter: Counter[str], gone: Sequence[str], new: Sequence[str]) -> set[str]:
    """Apply counts; return the items whose presence (count > 0) changed."""
    before = {x: counter[x] > 0 for x in (*gone, *new)}
    counter.subtract(gone)
    counter.update(new)
    flipped = {x for x, was in before.items() if (counter[x] > 0) != was}
    for x in before:
        if counter[x] <= 0:
            del counter[x]
    return flipped


class _KeyIndex:
    """Keys (aliases, words) by word, to find the chunks that may contain one (re-read them)."""

    def __init__(self, keys: set[str]) -> None:
        self.by_word: dict[str, list[list[str]]] = {}
        for key in keys:
            words = key.split()
            for word in set(words):
                self.by_word.setdefault(word, []).append(words)

    def may_occur(self, chunk: Chunk, reading: Reading) -> bool:
        """Tell whether ``chunk`` could contain a key (a superset test).

        It could when one of the key's words is written with a capital in the chunk (a name
        starts with one) and all of its words are in the text.
        """
        candidates = [w for word in reading.capitals if (w := self.by_word.get(word))]
        if not candidates:
            return False
        text = chunk.text.replace("’", "'").lower()
        return any(all(w in text for w in key) for keys in candidates for key in keys)


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


class OfflineExtractor:
    """Entities, keywords and triples by title linking and patterns; see the module docstring."""

    name = "offline"

    def extract(self, chunks: Sequence[Chunk], show_progress: bool = False) -> list[Extraction]:
        """Extract every chunk (a fresh corpus: everything is new)."""
        return CorpusReadings().update(chunks, [], chunks, show_progress)


def _resolve_to_page(mention: Mention, page: str) -> Mention:
    """Map a part of the page's own name ("Boritzer" in "Etan Boritzer") to the page."""
    if mention.is_date or not page or mention.key == page:
        return mention
    words, name = mention.key.split(), page.split()
    if len(words) < len(name) and (name[: len(words)] == words or name[-len(words) :] == words):
        return Mention(page, mention.start, mention.end)
    return mention


def _keywords(
    chunk: Chunk, reading: Reading, entity_df: Counter[str], word_df: Counter[str], n: int
) -> list[str]:
    """Pick the chunk's most distinctive entities, then words, by tf·idf; never its own title."""
    page = token_key(chunk.title) if chunk.title else ""

    def idf(df: int) -> float:
        return math.log((n + 1) / (df + 0.5))

    ranked = sorted(
        ((tf * idf(entity_df[e]), e) for e, tf in reading.entity_counts.items() if e != page),
        key=lambda pair: (-pair[0], pair[1]),
    )
    chosen = [e for _, e in ranked[:KEYWORDS_PER_CHUNK]]
    if len(chosen) < KEYWORDS_PER_CHUNK:
        taken = {w for e in chosen for w in e.split()} | set(page.split())
        words = sorted(
            ((tf * idf(word_df[w]), w) for w, tf in reading.word_counts.items() if w not in taken),
            key=lambda pair: (-pair[0], pair[1]),
        )
        chosen += [w for _, w in words[: KEYWORDS_PER_CHUNK - len(chosen)]]
    return chosen
