"""A passage's sentences as an answer quotes them: prose, and code blocks and list items whole.

What a "sentence" is: a prose sentence (not cut after initials or "c."), a fenced code block
whole, a list item whole (to a blank line or the next item), or a Markdown heading.
"""

from __future__ import annotations

import re

from hopgraph.graph_store.graphs.extraction.offline import extraction_sentences

_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})", re.MULTILINE)
HEADING = re.compile(r"^#{1,6}\s")
"""A Markdown heading: a piece of its own, which names a section and states nothing."""
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#\.)\s+")
"""A line that starts a list item: a bullet, or a number."""


def sentences(text: str) -> list[str]:
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
        if HEADING.match(line):  # a piece of its own
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


_GLUED = re.compile(r"(?<![\w.`/:])(?:[a-z]{2,}|[0-9]{4}|\))[.!?](?=[A-Z][a-z]+[ ,])")
"""A sentence's end glued to the next one's start, as scraped text often has it ("politician.He
was elected"): a word (or a year, or a closing parenthesis) that no dot, slash or backtick comes
before, so that a dotted name (`marshmallow.Schema`, a.b.Config) is left whole."""


def _unglue(text: str) -> str:
    """Put a space after each glued sentence end that closes three words or more.

    "Use marshmallow.Schema to load" is a name in a short clause, not two sentences.
    """

    def spaced(end: re.Match) -> str:
        clause = text[text.rfind(". ", 0, end.start()) + 1 : end.start()]
        return end[0] + " " if len(clause.split()) >= 2 else end[0]

    return _GLUED.sub(spaced, text)


def _prose(text: str) -> list[str]:
    """Split prose into sentences, re-joining splits after initials and abbreviations."""
    out: list[str] = []
    for piece in extraction_sentences(_unglue(text)):
        piece = " ".join(piece.split())
        if out and (_CONTINUES.match(piece) or _OPEN.search(out[-1])):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
    return out
