"""How `hopgraph ui` words what it shows: the index's figures, passages with code, graph labels.

The page prints what the API gives, so the wording is decided here, where it is tested: the
index's counts as tables of words and rounded figures (never a nested object or a 16-digit
float), a passage split into prose and code (code highlighted by Pygments, escaped by it, so
the page can insert it as HTML), a graph node named by its section rather than by its
document's title (a manual's passages all share one), and an example question drawn from the
index itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from itertools import islice
from typing import Any

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

from hopgraph.graph_store import Index

CODE_STYLE = "default"
"""Pygments' colour scheme (dark text on a light grey ground, like the page)."""
LABEL_WIDTH = 40
"""Characters of a graph node's label (hopgraph.explain cuts a longer one)."""
SEP = " › "
COUNT_WORDS = {"chunks": "chunks (passages)"}
GRAPH_WORDS = {
    "chunks": "chunks in the graph",
    "entities": "entities",
    "triples": "triples",
    "triples_per_chunk": "triples per chunk",
    "mean_degree": "edges per chunk (mean)",
}
EDGE_WORDS = {
    "structural": "consecutive chunks of one document",
    "entity": "chunks that name the same entity",
    "keyword": "chunks that share keywords",
    "semantic": "each chunk and its most similar chunks",
    "link": "a chunk to the page whose title it mentions",
}
Table = dict[str, Any]


# -- figures ----------------------------------------------------------------------------------


def figure(value: Any) -> str:
    """Return a value as the page shows it: 1,234 / 2.67 / yes; a mapping as "key value, …"."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != 0 and abs(value) < 0.005:  # would read 0, which is not what it is
            return "≈ 0"
        return f"{value:,.2f}".rstrip("0").rstrip(".")  # 2.6666… reads 2.67, 1.50 reads 1.5
    if isinstance(value, Mapping):
        return ", ".join(f"{words(k)} {figure(v)}" for k, v in value.items())
    if value is None:
        return "—"
    return str(value)


def words(key: str, known: Mapping[str, str] = GRAPH_WORDS) -> str:
    """Return a manifest key as words: ``triples_per_chunk`` reads "triples per chunk"."""
    return known.get(key, key.replace("_", " "))


def index_tables(index: Index) -> list[Table]:
    """Return the index view's tables: the index, its graphs, and their edges by type."""
    manifest = index.manifest
    about = [["index", index.directory.name], ["generation", figure(manifest.generation)],
             ["embedding model", manifest.settings.model]]  # fmt: skip
    about += [[words(k, COUNT_WORDS), figure(v)] for k, v in manifest.counts.items()]
    tables = [{"caption": "Index", "head": ["", ""], "rows": about}]
    counts = manifest.graph["counts"] if manifest.graph else None
    if not counts:
        note = [["graphs", "not built: `hopgraph graph build --index …` builds them"]]
        return [*tables, {"caption": "Graphs", "head": ["", ""], "rows": note}]
    graph = [[words(k), figure(v)] for k, v in counts.items() if k != "edges"]
    tables.append({"caption": "Graphs", "head": ["", ""], "rows": graph})
    edges = dict(counts.get("edges", {}))
    rows = [[kind, figure(n), EDGE_WORDS.get(kind, "")] for kind, n in edges.items()]
    rows.append(["all", figure(sum(edges.values())), ""])
    tables.append({"caption": "Edges by type", "head": ["type", "edges", "joins"], "rows": rows})
    return tables


# -- passages ---------------------------------------------------------------------------------


@cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


@cache
def code_css() -> str:
    """Return the CSS of highlighted code (the page's ``.code`` blocks)."""
    rules = HtmlFormatter(style=CODE_STYLE).get_style_defs(".code").splitlines()
    return "\n".join(r for r in rules if r.startswith(".code"))


def highlighted(code: str, language: str) -> str:
    """Return ``code`` as escaped HTML spans (Pygments); plain, escaped, in an unknown language."""
    try:
        lexer = get_lexer_by_name(language) if language else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    return highlight(code, lexer, HtmlFormatter(style=CODE_STYLE, nowrap=True))


def passage_parts(text: str) -> list[dict[str, str]]:
    """Split a passage into headings, prose and code blocks (fenced or indented), in order.

    Prose keeps its line breaks (``{"kind": "text", "text"}``, shown as text), a heading is its
    words without the ``#`` marks (``{"kind": "heading", "text"}``), and code comes as
    ``{"kind": "code", "language", "html"}``, highlighted and escaped by Pygments.
    """
    lines = text.split("\n")
    parts: list[dict[str, str]] = []
    at = 0
    tokens = _markdown().parse(text)
    for i, token in enumerate(tokens):
        block = token.type in ("fence", "code_block", "heading_open")
        if not block or token.level != 0 or not token.map:
            continue
        start, end = token.map
        _prose(parts, "\n".join(lines[at:start]))
        if token.type == "heading_open":
            parts.append({"kind": "heading", "text": tokens[i + 1].content})
        else:
            language = token.info.split()[0] if token.info.strip() else ""
            parts.append({"kind": "code", "language": language,
                          "html": highlighted(token.content, language)})  # fmt: skip
        at = end
    _prose(parts, "\n".join(lines[at:]))
    return parts


def _prose(parts: list[dict[str, str]], text: str) -> None:
    if text.strip():
        parts.append({"kind": "text", "text": text.strip("\n")})


# -- graph labels and the example question ----------------------------------------------------


def node_label(title: str, section: str, width: int = LABEL_WIDTH) -> str:
    """Name a passage by its section ("Signals › Sending"), its innermost headings kept.

    A section path starts with its page's title (schema.Chunk.section_path); one too long keeps
    the headings nearest the passage, since those tell a manual's passages apart.
    """
    headings = [h.strip() for h in section.split(" > ") if h.strip()] or [title]
    label = SEP.join(headings)
    while len(label) > width and len(headings) > 1:
        headings = headings[1:]
        label = "…" + SEP + SEP.join(headings)
    return label if len(label) <= width else label[: width - 1] + "…"


def example_question(index: Index, scan: int = 50) -> str:
    """Return a question about the index's first document, for the page's empty question box.

    It names a heading of that document when one of its first chunks has one, else the title.
    """
    chunks = iter(index.chunks.values())
    first = next(chunks, None)
    if first is None:
        return "Type a question"
    title = " ".join(first.title.split())
    for chunk in [first, *islice(chunks, scan)]:
        if chunk.doc_id != first.doc_id:
            break
        heading = chunk.section.split(" > ")[-1].strip()
        if heading and heading != title:
            return f"What does {title} say about {heading}?"
    return f"What is known about {title}?"
