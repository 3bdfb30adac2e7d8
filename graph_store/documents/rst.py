"""reStructuredText to Markdown-style text through docutils, Sphinx's markup included.

The chunker reads one syntax, CommonMark (:mod:`.markdown`); this module renders a .rst file's
doctree in it. Section titles become ``#`` headings by nesting depth, as plain text (inline
markup removed, Markdown's own characters escaped). Literal blocks, doctests and code
directives become fenced code with their lines exactly as written; lists one item a line;
tables pipe rows; admonitions "Note: ..."; field lists "name: body". Comments, targets,
substitution definitions, raw output and navigation (``toctree``, ``contents``) give nothing.
Paragraphs are one line each, escaped where their start would read as Markdown syntax.

``.. include::`` is followed by docutils, relative to the including file; a missing or
unreadable include, or a circular one, leaves the rest of the file as it is and becomes a
warning that names it (:attr:`RstDocument.warnings`).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from docutils.core import publish_doctree

from . import rst_autodoc, rst_sphinx

_SETTINGS = {
    "_disable_config": True,  # no docutils.conf from the working or home directory
    "report_level": 5,  # problems are read off the doctree, not printed
    "halt_level": 5,
    "warning_stream": io.StringIO(),
    "file_insertion_enabled": True,
    "raw_enabled": False,  # raw output is never shown, so its :file: is never read
    "doctitle_xform": False,  # as Sphinx: the title is found below (a field list may precede it)
    "sectsubtitle_xform": False,
    "syntax_highlight": "none",
    "smart_quotes": False,
    "pep_references": False,
    "rfc_references": False,
    "line_length_limit": 1_000_000,
    "language_code": "en",
}

_INCLUDE_PROBLEM = re.compile(
    rf'"(?:literal)?include"|circular inclusion|literalinclude|^{rst_autodoc.WARNING}', re.I
)
"""The problems a page's warnings name: an include's, and an autodoc directive's object."""


def docutils_settings() -> dict[str, object]:
    """Return the settings docutils parses with (a fresh warning stream each time)."""
    return {**_SETTINGS, "warning_stream": io.StringIO()}


@dataclass(frozen=True)
class RstDocument:
    """A .rst file rendered: its title, its Markdown-style text and what could not be read."""

    title: str
    text: str
    warnings: tuple[str, ...] = ()


def parse_rst(text: str, path: Path) -> RstDocument:
    """Parse ``text`` (the contents of ``path``) and render it; includes resolve beside ``path``."""
    rst_sphinx.register_unknown(text)
    tree = publish_doctree(text, source_path=str(path), settings_overrides=docutils_settings())
    renderer = _Renderer()
    tops = [child for child in tree.children if isinstance(child, nodes.section)]
    title = " ".join(tops[0][0].astext().split()) if tops else ""
    for child in tree.children:
        if len(tops) == 1 and child is tops[0]:  # the page's title: its sections are the top
            for grandchild in child.children[1:]:
                renderer.block(grandchild, 1)
        else:
            renderer.block(child, 1)
    return RstDocument(title, "\n\n".join(renderer.blocks), tuple(_problems(tree, path)))


def _problems(tree: nodes.document, path: Path) -> list[str]:
    """Return the include and literalinclude problems of the doctree, each with its line."""
    out = []
    for message in tree.findall(nodes.system_message):
        words = " ".join(message[0].astext().split()) if message.children else ""
        if message["level"] >= 2 and _INCLUDE_PROBLEM.search(words):
            line = f" line {message['line']}" if message.get("line") else ""
            source = Path(message.get("source") or path).name
            out.append(f"{source}{line}: {words}")
    return out


_SKIPPED = (
    nodes.comment,
    nodes.target,
    nodes.substitution_definition,
    nodes.raw,
    nodes.image,
    nodes.transition,
    nodes.pending,
    nodes.system_message,
    nodes.docinfo,
    nodes.meta,
    nodes.title,
)
_CODE = (nodes.literal_block, nodes.doctest_block, nodes.math_block)
_LISTS = (nodes.bullet_list, nodes.enumerated_list)


class _Renderer:
    """Walk a doctree, appending each block's Markdown text to :attr:`blocks`."""

    def __init__(self) -> None:
        self.blocks: list[str] = []

    def block(self, node: nodes.Node, depth: int) -> None:
        """Render one body element at section depth ``depth``."""
        if isinstance(node, (*_SKIPPED, nodes.Invisible)):
            return
        if isinstance(node, nodes.section):
            self._section(node, depth)
        elif isinstance(node, _CODE):
            self._code(node)
        elif isinstance(node, _LISTS):
            self._list(node, depth)
        elif isinstance(node, nodes.table):
            self._table(node)
        elif isinstance(node, nodes.line_block):
            lines = [" ".join(line.astext().split()) for line in node.findall(nodes.line)]
            self._add("\n".join(escape_start(line) for line in lines if line))
        elif isinstance(node, nodes.topic | nodes.sidebar) and "contents" in node["classes"]:
            return
        elif isinstance(node, nodes.Admonition | nodes.topic | nodes.sidebar):
            self._labelled(node, depth)
        elif isinstance(node, nodes.definition_list | nodes.field_list | nodes.option_list):
            self._pairs(node, depth)
        elif isinstance(node, nodes.TextElement):
            self._paragraph(inline_text(node))
        else:
            for child in node.children:
                self.block(child, depth)

    def _add(self, text: str) -> None:
        if text.strip():
            self.blocks.append(text)

    def _paragraph(self, text: str) -> None:
        self._add(escape_start(" ".join(text.split())))

    def _section(self, node: nodes.section, depth: int) -> None:
        title = node[0].astext() if node.children else ""
        self._add("#" * min(depth, 6) + " " + escape_heading(" ".join(title.split())))
        for child in node.children[1:]:
            self.block(child, depth + 1)

    def _code(self, node: nodes.Element) -> None:
        code = node.astext()
        if not code.strip():
            return
        language = (node.get("language") or "").strip()
        if not language and isinstance(node, nodes.doctest_block):
            language = "pycon"
        runs = re.findall(r"^[ \t]*(`{3,})", code, re.MULTILINE)
        fence = "`" * max(3, 1 + max((len(r) for r in runs), default=0))
        self.blocks.append(f"{fence}{language.split()[0] if language else ''}\n{code}\n{fence}")

    def _list(self, node: nodes.Element, depth: int) -> None:
        lines: list[str] = []
        self._items(node, depth, lines, "")
        self._add("\n".join(lines))

    def _items(self, node: nodes.Element, depth: int, lines: list[str], indent: str) -> None:
        """Append a list's items as lines; a block a line cannot hold ends the list there."""
        start = node.get("start", 1)
        for number, item in enumerate(node.children, start=start):
            marker = f"{number}. " if isinstance(node, nodes.enumerated_list) else "- "
            prefix = indent + marker
            for child in item.children:
                if isinstance(child, nodes.paragraph):
                    text = " ".join(inline_text(child).split())
                    lines.append(prefix + escape_start(text))
                    prefix = indent + " " * len(marker)
                elif isinstance(child, _LISTS):
                    self._items(child, depth, lines, indent + " " * len(marker))
                else:  # code, tables, notes: their own blocks, the list goes on after them
                    self._add("\n".join(lines))
                    lines.clear()
                    self.block(child, depth)

    def _table(self, node: nodes.table) -> None:
        rows = [
            [" ".join(entry.astext().split()).replace("|", "\\|") for entry in row.children]
            for row in node.findall(nodes.row)
        ]
        if not rows:
            return
        width = len(rows[0])
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
        lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        self.blocks.append("\n".join(lines))

    def _labelled(self, node: nodes.Element, depth: int) -> None:
        """Render an admonition or topic: its label or title before its first paragraph."""
        children = list(node.children)
        if children and isinstance(children[0], nodes.title):
            label = " ".join(children.pop(0).astext().split())
        else:
            label = node.tagname.replace("_", " ").capitalize()
        if children and isinstance(children[0], nodes.paragraph):
            self._paragraph(f"{label}: {inline_text(children.pop(0))}")
        else:
            self._paragraph(f"{label}:")
        for child in children:
            self.block(child, depth)

    def _pairs(self, node: nodes.Element, depth: int) -> None:
        """Render definition, field and option lists: the term, then its body's blocks."""
        for item in node.children:
            term = [c for c in item.children if not isinstance(c, _BODIES)]
            label = " ".join(" ".join(inline_text(t).split()) for t in term)
            bodies = [c for c in item.children if isinstance(c, _BODIES)]
            children = [grand for body in bodies for grand in body.children]
            if children and isinstance(children[0], nodes.paragraph):
                self._paragraph(f"{label}: {inline_text(children.pop(0))}")
            else:
                self._paragraph(label)
            for child in children:
                self.block(child, depth)


_BODIES = (nodes.definition, nodes.field_body, nodes.description)


def inline_text(node: nodes.Node) -> str:
    """Return an element's text with inline code in backticks and other markup dropped."""
    if isinstance(node, nodes.Text):
        return str(node)
    if isinstance(node, nodes.literal):
        code = node.astext()
        return f"`` {code} ``" if "`" in code else f"`{code}`"
    if isinstance(node, nodes.raw | nodes.system_message | nodes.target | nodes.image):
        return ""
    if isinstance(node, nodes.footnote_reference | nodes.citation_reference):
        return f"[{node.astext()}]"
    if isinstance(node, nodes.option_string | nodes.option_argument):
        return node.astext()
    if isinstance(node, nodes.option):
        return " ".join(inline_text(c) for c in node.children)
    if isinstance(node, nodes.option_group):
        return ", ".join(inline_text(c) for c in node.children)
    return "".join(inline_text(child) for child in node.children)


_BLOCK_START = re.compile(
    r"^(?:#{1,6}(?:\s|$)|[>+*-](?:\s|$)|[=_*-]{3,}\s*$|```|~~~|<[a-zA-Z/!?]|\|)"
)
_ORDERED_START = re.compile(r"^(\d{1,9})([.)])(\s|$)")
_HEADING_SPECIALS = re.compile(r"([\\`*_\[\]<>&#|!~])")


def escape_start(line: str) -> str:
    """Backslash-escape a line whose start Markdown would read as a heading, list, quote, ...."""
    if _BLOCK_START.match(line):
        return "\\" + line
    return _ORDERED_START.sub(r"\1\\\2\3", line, count=1)


def escape_heading(text: str) -> str:
    """Escape a heading's plain text so that Markdown reads it back unchanged."""
    return _HEADING_SPECIALS.sub(r"\\\1", text)
