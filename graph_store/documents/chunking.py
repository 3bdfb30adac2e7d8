"""Split documents into chunks of about ``chunk_tokens`` tokens along their structure.

A document within the budget is one chunk, as written. A longer one is read as CommonMark
blocks (:mod:`.markdown`; the loaders turn other formats into Markdown): headings, code
(fenced, or indented), lists, tables, quotes, kept whole with their newlines, and paragraphs,
whose hard-wrapped lines are joined and which are split into sentences. It is cut into
``n = ceil(tokens / chunk_tokens)`` chunks of balanced size (a 210-token passage becomes two of
~105, not 200 + 10) between blocks or sentences, and at every heading, so that a chunk lies in
one section (a short document with several sections becomes several chunks). A chunk ends
mid-sentence (at a word) or mid-block (at a line) only when that sentence or block alone is
over the budget. Each chunk records the headings above its text (``section``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from .markdown import parse_blocks
from .schema import Chunk, Document, chunk_id

TokenCounter = Callable[[str], int]

# A sentence ends at . ! ? (optionally followed by quotes/brackets) and white space, or at a
# newline; abbreviations occasionally split early, which only costs a slightly shorter chunk.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\n+")
_HEADING_HINT = re.compile(r"^ {0,3}(?:#|=+[ \t]*$|-+[ \t]*$)", re.MULTILINE)
"""Where no line looks like this, the text has no heading and needs no parse."""
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
    """Return the chunks of ``doc``; a document in one piece is one chunk with the doc's id."""
    total = count(doc.text)
    if total <= chunk_tokens and not _HEADING_HINT.search(doc.text):  # no parse: most passages
        return [Chunk(id=doc.id, doc_id=doc.id, title=doc.title, text=doc.text)]
    target = math.ceil(total / math.ceil(total / chunk_tokens))
    pieces = _pack(_units(doc.text, chunk_tokens, count), target, chunk_tokens)
    n = len(pieces)
    if n == 1:  # within the budget and one section: as written
        section = _section(pieces[0])
        return [Chunk(id=doc.id, doc_id=doc.id, title=doc.title, text=doc.text, section=section)]
    return [
        Chunk(
            id=chunk_id(doc.id, i, n),
            doc_id=doc.id,
            title=doc.title,
            text=_join(units),
            position=i,
            n_chunks=n,
            section=_section(units),
        )
        for i, units in enumerate(pieces)
    ]


def _units(text: str, limit: int, count: TokenCounter) -> list[Unit]:
    """Return the text's units in order, each with the heading path it falls under."""
    units: list[Unit] = []
    path: list[tuple[int, str]] = []
    for block in parse_blocks(text):
        if block.kind == "heading":
            path = [*(p for p in path if p[0] < block.level), (block.level, block.title)]
            section = _path(path)
            units.append(Unit(block.text, count(block.text), PARAGRAPH, section, heading=True))
        elif block.kind == "lines":
            units += _block_units(block.text, limit, count, _path(path))
        else:
            for j, sentence in enumerate(split_sentences(block.text)):
                glue = PARAGRAPH if j == 0 else SENTENCE
                units += _sized(sentence, glue, limit, count, _path(path), SENTENCE)
    return units


def _path(path: list[tuple[int, str]]) -> str:
    return " > ".join(title for _, title in path if title)


def _block_units(body: str, limit: int, count: TokenCounter, section: str) -> list[Unit]:
    """Return a block as one unit, or, over the budget, one unit per line.

    A fenced code block over the budget becomes several fenced blocks instead (:func:`_code_parts`),
    so that every chunk's code reads as code, in its language.
    """
    size = count(body)
    if size <= limit:
        return [Unit(body, size, PARAGRAPH, section)]
    lines = body.split("\n")
    fence = _FENCE.match(lines[0])
    if fence and len(lines) > 2 and lines[-1].strip().startswith(fence.group(1)):
        parts = _code_parts(lines[0], lines[1:-1], lines[-1], limit, count)
        return [Unit(part, count(part), PARAGRAPH, section) for part in parts]
    out: list[Unit] = []
    for j, line in enumerate(lines):
        out += _sized(line, PARAGRAPH if j == 0 else LINE, limit, count, section, LINE)
    return out


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CONTINUES = re.compile(r"^\s*(?:[)\]}.,]|else\b|elif\b|except\b|finally\b|catch\b|case\b)")
"""A line that continues the statement above it: no code part starts with one."""


def _code_parts(
    opening: str, code: list[str], closing: str, limit: int, count: TokenCounter
) -> list[str]:
    """Cut a fenced block's ``code`` lines into fenced blocks of at most ``limit`` tokens.

    A part ends where the next line starts a statement: after a blank line or at the block's
    least indentation best, else at the least indented line that does not continue the one
    above (a nested statement); the last such place that fits. A single line over the budget
    is a part of its own. Each part opens with the block's fence and language.
    """
    room = max(1, limit - count(f"{opening}\n{closing}"))
    margin = min((len(x) - len(x.lstrip()) for x in code if x.strip()), default=0)

    def cost(at: int) -> float:  # how bad a part boundary before line ``at`` is (0: best)
        line = code[at]
        if not code[at - 1].strip():
            return 0
        indent = len(line) - len(line.lstrip())
        if not line.strip() or _CONTINUES.match(line):
            return math.inf
        return max(0, indent - margin)

    parts: list[list[str]] = []
    start = 0
    while start < len(code):
        end, size = start, 0
        while end < len(code):
            size += count(code[end]) + 1
            if size > room and end > start:
                break
            end += 1
        if end < len(code):  # the best boundary of those that fit, the last among equals
            best = min(range(start + 1, end + 1), key=lambda at: (cost(at), -at))
            end = best if cost(best) < math.inf else end
        while end > start + 1 and not code[end - 1].strip():
            end -= 1  # a blank line opens the next part rather than ends this one
        parts.append(code[start:end])
        start = end
        while start < len(code) and not code[start].strip():
            start += 1
    return ["\n".join([opening, *part, closing]) for part in parts if part]


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

    A heading always opens a new chunk (so that a chunk lies in one section: a section filter
    or a whole-section hit finds it), except after headings alone, and never ends one.
    """
    pieces: list[list[Unit]] = []
    current: list[Unit] = []
    size = 0
    for unit in units:
        full = size + unit.tokens > limit or size >= target
        if current and (full or (unit.heading and not all(u.heading for u in current))):
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


def _section(units: list[Unit]) -> str:
    """Return the section of a chunk: that of its first text, below any headings it opens with."""
    return next((u.section for u in units if not u.heading), units[-1].section)


def _join(units: list[Unit]) -> str:
    """Join a chunk's units with their glue (the first one's is dropped)."""
    return "".join(u.glue + u.text if k else u.text for k, u in enumerate(units))
