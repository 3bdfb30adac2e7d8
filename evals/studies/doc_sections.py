"""Count chunks whose section is not a heading path of their own file.

``python -m hopgraph.evals.studies.doc_sections DOCS_FOLDER`` loads a documentation folder as
``hopgraph index`` would, chunks it with the default settings and checks every chunk's ``section``
against the file's headings found independently of the chunker: the section nodes of docutils'
doctree for .rst (their titles' text, below the page title; includes followed) and markdown-it's
heading tokens for .md. A chunk before any heading has the section "". Prints the count and the
first wrong chunks; exits 1 when there is any.

The figures it makes: docs/documents.md, "Documentation".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hopgraph.core.settings import settings
from hopgraph.graph_store.documents.chunking import chunk_document
from hopgraph.graph_store.documents.loaders import load_corpus
from hopgraph.graph_store.documents.schema import Chunk, Document
from hopgraph.graph_store.embedding.embedders import load_embedder


def rst_heading_paths(path: Path) -> set[str]:
    """Return the heading paths of a .rst file from docutils' section nodes."""
    from docutils import nodes
    from docutils.core import publish_doctree

    from hopgraph.graph_store.documents import rst, rst_sphinx

    text = path.read_text(encoding="utf-8")
    rst_sphinx.register_unknown(text)
    tree = publish_doctree(text, source_path=str(path), settings_overrides=rst.docutils_settings())
    tops = [c for c in tree.children if isinstance(c, nodes.section)]
    paths = {""}
    for section in tree.findall(nodes.section):
        titles = []
        node = section
        while isinstance(node, nodes.section):
            if not (len(tops) == 1 and node is tops[0]):
                titles.append(" ".join(node[0].astext().split()))
            node = node.parent
        paths.add(" > ".join(reversed(titles)))
    return paths


def markdown_heading_paths(text: str) -> set[str]:
    """Return the heading paths of a Markdown text from markdown-it's heading tokens."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    paths, stack = {""}, []
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            level = int(token.tag[1])
            title = " ".join(
                "".join(
                    c.content for c in tokens[i + 1].children or () if c.type != "softbreak"
                ).split()
            )
            stack = [*(s for s in stack if s[0] < level), (level, title)]
            paths.add(" > ".join(t for _, t in stack))
    return paths


def wrong_sections(folder: Path, chunk_tokens: int) -> tuple[int, list[tuple[Chunk, set[str]]]]:
    """Return (chunks checked, the chunks whose section is not among their file's headings)."""
    loaded = load_corpus(folder, include=("*.rst", "*.md", "**/*.rst", "**/*.md"))
    count = load_embedder(settings().model).count_tokens
    checked, wrong = 0, []
    for doc in loaded.documents:
        paths = _paths(doc)
        for chunk in chunk_document(doc, chunk_tokens, count):
            checked += 1
            if chunk.section not in paths:
                wrong.append((chunk, paths))
    return checked, wrong


def _paths(doc: Document) -> set[str]:
    path = Path(doc.source)
    if path.suffix == ".rst":
        return rst_heading_paths(path)
    return markdown_heading_paths(doc.text)


def main(argv: list[str] | None = None) -> int:
    """Run the check and print its figures."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.studies.doc_sections", description=__doc__
    )
    parser.add_argument("folder", type=Path, help="a documentation folder (.rst / .md files)")
    parser.add_argument("--chunk-tokens", type=int, default=settings().chunk_tokens)
    parser.add_argument("--show", type=int, default=10, help="wrong chunks to print")
    args = parser.parse_args(argv)
    checked, wrong = wrong_sections(args.folder, args.chunk_tokens)
    files = len({c.doc_id for c, _ in wrong})
    print(
        f"{checked} chunks, {len(wrong)} with a section that is not a heading of their file "
        f"({files} files)"
    )
    for chunk, _ in wrong[: args.show]:
        print(f"  {chunk.id}: {chunk.section!r}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
