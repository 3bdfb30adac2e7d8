"""Markdown read by a CommonMark parser (markdown-it-py): front matter and top-level blocks.

Every document reaches the chunker as Markdown-style text (the readers turn reStructuredText,
HTML and PDF into it), so this is the one place that decides what is a heading, a code block
or a paragraph. Blocks keep their source lines exactly as written (a code block's text is
byte for byte the file's); a heading also carries its plain text (inline markup removed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

BlockKind = Literal["heading", "lines", "paragraph"]
MAX_HEADING = 150
"""A longer "# ..." line is text, not a heading: a table flattened into one line, as the
benchmark corpora hold (musique-02867)."""


@dataclass(frozen=True)
class Block:
    """A top-level block: a heading (``level``, ``title``), lines kept as written, or a paragraph.

    "lines" are code, lists, tables, quotes and HTML: a chunk may end inside one only at a line.
    A paragraph's text has its hard-wrapped lines joined by spaces.
    """

    kind: BlockKind
    text: str
    level: int = 0
    title: str = ""


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin)


def _lines(text: str) -> tuple[str, list[str]]:
    """Return the text with line ends as the parser counts them, and its lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, text.split("\n")


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Return (the YAML front matter block or None, the text after it)."""
    if not text.startswith("---"):  # front matter opens the file: most need no parse here
        return None, text
    text, lines = _lines(text)
    tokens = _parser().parse(text)
    if tokens and tokens[0].type == "front_matter" and tokens[0].map:
        return tokens[0].content, "\n".join(lines[tokens[0].map[1] :])
    return None, text


def parse_blocks(text: str) -> list[Block]:
    """Return the top-level blocks of ``text`` in order."""
    text, lines = _lines(text)
    out: list[Block] = []
    tokens = _parser().parse(text)
    for i, token in enumerate(tokens):
        if token.level != 0 or not token.map or token.nesting == -1:
            continue
        source = "\n".join(lines[token.map[0] : token.map[1]]).strip("\n")
        if token.type == "heading_open" and len(source) <= MAX_HEADING:
            title = plain_text(tokens[i + 1])
            out.append(Block("heading", source.strip(), int(token.tag[1]), title))
        elif token.type in ("paragraph_open", "heading_open") and not _is_pipe_rows(source):
            out.append(Block("paragraph", " ".join(line.strip() for line in source.splitlines())))
        elif token.type != "front_matter" and source.strip():
            out.append(Block("lines", source))
    return out


def outside_code(text: str, change: Callable[[str], str | None]) -> str:
    """Return ``text`` with ``change`` applied to each line outside code blocks (None: drop it)."""
    text, lines = _lines(text)
    code: set[int] = set()
    for token in _parser().parse(text):
        if token.type in ("fence", "code_block") and token.map:
            code.update(range(*token.map))
    changed = (line if i in code else change(line) for i, line in enumerate(lines))
    return "\n".join(line for line in changed if line is not None)


def _is_pipe_rows(source: str) -> bool:
    """Tell whether a paragraph is rows of a table without a delimiter row (kept as lines)."""
    return all(line.lstrip().startswith("|") for line in source.splitlines())


def plain_text(inline: Token) -> str:
    """Return an inline token's text without markup: code spans' text, links' text, image alts."""
    parts: list[str] = []
    for child in inline.children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(plain_text(child))
    return " ".join("".join(parts).split())
