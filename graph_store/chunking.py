"""Split documents into chunks of about ``chunk_tokens`` tokens along their structure.

A document within the budget is one chunk, as written. A longer one is read as blocks:
Markdown-style headings (``#``; the loaders turn other formats' headings into these), code
(fenced, or indented), lists and tables, kept whole with their newlines, and paragraphs, whose
hard-wrapped lines are joined and which are split into sentences. It is cut into
``n = ceil(tokens / chunk_tokens)`` chunks of balanced size (a 210-token passage becomes two of
~105, not 200 + 10) between blocks or sentences, and at a heading once the current chunk is half
full. A chunk ends mid-sentence (at a word) or mid-block (at a line) only when that sentence or
block alone is over the budget. Each chunk records the headings above it (``section``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from .documents import Chunk, Document, chunk_id

TokenCounter = Callable[[str], int]

# A sentence ends at . ! ? (optionally followed by quotes/brackets) and white space, or at a
# newline; abbreviations occasionally split early, which only costs a slightly shorter chunk.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\n+")
_HEADING = re.compile(r"^(#{1,6})\s+(\S.{0,150})$")
"""A Markdown heading; a longer "# ..." line is text (a table flattened into one line)."""
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
PARAGRAPH, LINE, SENTENCE = "\n\n", "\n", " "
"""What joins a unit to the one before it: a new block, a line of a block, a sentence."""


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (rough, rule-based)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


@dataclass(frozen=True)
class Unit:
    """A piece a chunk may end after: a sentence, a whole block, or one line of a long block."""

    text: str
    tokens: int
    glue: str
    section: str
    heading: bool = False


def chunk_document(doc: Document, chunk_tokens: int, count: TokenCounter) -> list[Chunk]:
    """Return the chunks of ``doc``; a document within the budget is one chunk with the doc's id."""
    total = count(doc.text)
    if total <= chunk_tokens:
        opening = _HEADING.match(doc.text.lstrip().partition("\n")[0].strip())
        section = opening.group(2).strip() if opening else ""
        return [Chunk(id=doc.id, doc_id=doc.id, title=doc.title, text=doc.text, section=section)]
    target = math.ceil(total / math.ceil(total / chunk_tokens))
    pieces = _pack(_units(doc.text, chunk_tokens, count), target, chunk_tokens)
    n = len(pieces)
    return [
        Chunk(
            id=chunk_id(doc.id, i, n),
            doc_id=doc.id,
            title=doc.title,
            text=_join(units),
            position=i,
            n_chunks=n,
            section=units[0].section,
        )
        for i, units in enumerate(pieces)
    ]


def blocks(text: str) -> list[tuple[str, str]]:
    """Return the text's blocks as (kind, text): heading, lines (kept as written) or paragraph.

    Code (fenced or indented), lists and tables are "lines"; a paragraph's lines are joined.
    """
    out: list[tuple[str, str]] = []
    group: list[str] = []

    def flush() -> None:
        if group:
            out.append(_group(group))
            group.clear()

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            flush()
            end = next((j for j in range(i + 1, len(lines)) if _FENCE.match(lines[j])), None)
            stop = len(lines) - 1 if end is None else end
            out.append(("lines", "\n".join(lines[i : stop + 1])))
            i = stop + 1
            continue
        if _HEADING.match(line.strip()):
            flush()
            out.append(("heading", line.strip()))
        elif not line.strip():
            flush()
        else:
            group.append(line.rstrip())
        i += 1
    flush()
    return out


def _group(lines: list[str]) -> tuple[str, str]:
    """Classify a run of non-blank lines: kept as lines (code, list, table) or a paragraph."""
    indented = all(line.startswith(("    ", "\t")) for line in lines)
    listed = any(_LIST_ITEM.match(line) for line in lines)
    table = lines[0].lstrip().startswith("|")
    if indented or listed or table:
        return "lines", "\n".join(lines)
    return "paragraph", " ".join(line.strip() for line in lines)


def _units(text: str, limit: int, count: TokenCounter) -> list[Unit]:
    """Return the text's units in order, each with the heading path it falls under."""
    units: list[Unit] = []
    path: list[tuple[int, str]] = []
    for kind, body in blocks(text):
        section = " > ".join(h for _, h in path)
        if kind == "heading":
            found = _HEADING.match(body)
            assert found is not None
            level = len(found.group(1))
            path = [*(p for p in path if p[0] < level), (level, found.group(2).strip())]
            section = " > ".join(h for _, h in path)
            units.append(Unit(body, count(body), PARAGRAPH, section, heading=True))
        elif kind == "lines":
            units += _block_units(body, limit, count, section)
        else:
            sentences = split_sentences(body)
            for j, sentence in enumerate(sentences):
                glue = PARAGRAPH if j == 0 else SENTENCE
                units += _sized(sentence, glue, limit, count, section, SENTENCE)
    return units


def _block_units(body: str, limit: int, count: TokenCounter, section: str) -> list[Unit]:
    """Return a block as one unit, or, over the budget, one unit per line."""
    size = count(body)
    if size <= limit:
        return [Unit(body, size, PARAGRAPH, section)]
    out: list[Unit] = []
    for j, line in enumerate(body.split("\n")):
        out += _sized(line, PARAGRAPH if j == 0 else LINE, limit, count, section, LINE)
    return out


def _sized(
    text: str, glue: str, limit: int, count: TokenCounter, section: str, inner: str
) -> list[Unit]:
    """Return one unit, or, when ``text`` alone is over the budget, pieces cut at words."""
    size = count(text)
    if size <= limit:
        return [Unit(text, size, glue, section)]
    pieces = _split_long(text, limit, count)
    return [Unit(p, n, glue if k == 0 else inner, section) for k, (p, n) in enumerate(pieces)]


def _split_long(sentence: str, limit: int, count: TokenCounter) -> list[tuple[str, int]]:
    words = sentence.split()
    # Estimate words per piece from the sentence's own token density, then shrink until it fits.
    per_piece = max(1, int(len(words) * limit / max(count(sentence), 1)))
    out, start = [], 0
    while start < len(words):
        end = min(len(words), start + per_piece)
        piece = " ".join(words[start:end])
        while end - start > 1 and count(piece) > limit:
            end -= max(1, (end - start) // 10)
            piece = " ".join(words[start:end])
        out.append((piece, count(piece)))
        start = end
    return out


def _pack(units: list[Unit], target: int, limit: int) -> list[list[Unit]]:
    """Greedily group units up to ``target`` tokens, never past ``limit``.

    A heading opens a new chunk once the current one holds half the target, and never ends one.
    """
    pieces: list[list[Unit]] = []
    current: list[Unit] = []
    size = 0
    for unit in units:
        full = size + unit.tokens > limit or size >= target
        if current and (full or (unit.heading and size >= target / 2)):
            carried = []
            while len(current) > 1 and current[-1].heading:  # headings go with what follows
                carried.insert(0, current.pop())
            pieces.append(current)
            current, size = carried, sum(u.tokens for u in carried)
        current.append(unit)
        size += unit.tokens
    if current:
        pieces.append(current)
    return pieces


def _join(units: list[Unit]) -> str:
    """Join a chunk's units with their glue (the first one's is dropped)."""
    return "".join(u.glue + u.text if k else u.text for k, u in enumerate(units))
