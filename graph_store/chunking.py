"""Split long documents into chunks of about ``chunk_tokens`` tokens without cutting sentences.

Short documents stay whole. A long one is cut into ``n = ceil(tokens / chunk_tokens)`` chunks of
balanced size (so a 210-token passage becomes two of ~105, not 200 + 10), at sentence ends;
a single sentence longer than the budget is cut at word boundaries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from .documents import Chunk, Document, chunk_id

TokenCounter = Callable[[str], int]

# A sentence ends at . ! ? (optionally followed by quotes/brackets) and white space, or at a
# newline; abbreviations occasionally split early, which only costs a slightly shorter chunk.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (rough, rule-based)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def chunk_document(doc: Document, chunk_tokens: int, count: TokenCounter) -> list[Chunk]:
    """Return the chunks of ``doc``; a document within the budget is one chunk with the doc's id."""
    total = count(doc.text)
    if total <= chunk_tokens:
        return [Chunk(id=doc.id, doc_id=doc.id, title=doc.title, text=doc.text)]
    target = math.ceil(total / math.ceil(total / chunk_tokens))
    pieces = _pack(_units(doc.text, chunk_tokens, count), target, chunk_tokens)
    n = len(pieces)
    return [
        Chunk(
            id=chunk_id(doc.id, i, n),
            doc_id=doc.id,
            title=doc.title,
            text=t,
            position=i,
            n_chunks=n,
        )
        for i, t in enumerate(pieces)
    ]


def _units(text: str, limit: int, count: TokenCounter) -> list[tuple[str, int]]:
    """Return (sentence, tokens) pairs, cutting any sentence longer than ``limit`` by words."""
    units = []
    for sentence in split_sentences(text):
        size = count(sentence)
        if size <= limit:
            units.append((sentence, size))
        else:
            units.extend(_split_long(sentence, limit, count))
    return units


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


def _pack(units: list[tuple[str, int]], target: int, limit: int) -> list[str]:
    """Greedily join sentences up to ``target`` tokens, never past ``limit``."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for text, tokens in units:
        if current and (size + tokens > limit or size >= target):
            pieces.append(" ".join(current))
            current, size = [], 0
        current.append(text)
        size += tokens
    if current:
        pieces.append(" ".join(current))
    return pieces
