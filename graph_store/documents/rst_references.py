"""Sphinx's ``:ref:`` and ``:doc:`` shown as Sphinx shows them: the title they point to.

A bare ``:ref:`label``` shows the title of the section the label stands before, and a bare
``:doc:`path``` the title of that document; both live in other files of the same folder. So a
folder's load first scans its pages (:func:`scan_folder`: each page's first title and its
labels, by the lines reStructuredText writes them in) and renders every page within
:func:`resolving`; a reference it cannot resolve shows its label or path, as Sphinx does with a
warning. ``Title <target>`` shows its title, as before.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from docutils import nodes

SCANNED_SUFFIXES = (".rst", ".rest", ".txt", ".md", ".markdown")
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
"""A section title's underline or overline: one punctuation character, repeated."""
_LABEL = re.compile(r"^\.\.\s+_(`[^`]+`|[^:]+):\s*$")
_MARKDOWN_TITLE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_INLINE = re.compile(
    r":[\w:+.-]+:`([^`<]*?)(?:\s*<[^`]*>)?`"  # a role: its text, or its title
    r"|``([^`]*)``"  # literal text
    r"|`([^`<]*?)(?:\s*<[^`]*>)?`_*"  # a link or the default role
)


SPHINX_LABELS = {
    "genindex": "Index",
    "modindex": "Module Index",
    "py-modindex": "Python Module Index",
    "search": "Search Page",
}
"""The labels Sphinx itself gives its generated pages, with their titles (a page's own win)."""


@dataclass(frozen=True)
class References:
    """The titles a folder's pages give: by label, and by document (path without suffix)."""

    labels: dict[str, str] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)
    root: Path | None = None

    def document_title(self, target: str, source: str) -> str | None:
        """Return the title of ``:doc:`target``` written in the file ``source``, if known."""
        if self.root is None:
            return None
        if target.startswith("/"):
            name = PurePosixPath(target.lstrip("/"))
        else:
            try:
                here = Path(source).resolve().parent.relative_to(self.root)
            except ValueError:
                return None
            name = PurePosixPath(here.as_posix()) / target
        parts: list[str] = []
        for part in name.parts:  # "../x" from a sub-folder
            if part == "..":
                if parts:
                    parts.pop()
            elif part != ".":
                parts.append(part)
        return self.documents.get("/".join(parts))


_NONE = References()
_CURRENT: ContextVar[References | None] = ContextVar("rst_references", default=None)


@contextlib.contextmanager
def resolving(references: References) -> Iterator[None]:
    """Render the pages parsed within with ``references`` (the folder's titles)."""
    token = _CURRENT.set(references)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def scan_folder(root: Path, files: Iterable[tuple[Path, str]]) -> References:
    """Return the labels and page titles of the folder's pages (``files``: path, relative name)."""
    labels: dict[str, str] = {}
    documents: dict[str, str] = {}
    for path, name in files:
        if path.suffix.lower() not in SCANNED_SUFFIXES:
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # the load itself reports the file
        markdown = path.suffix.lower() in (".md", ".markdown")
        title, found = scan_markdown(text) if markdown else scan_rst(text)
        labels.update(found)
        if title:
            documents[str(PurePosixPath(name).with_suffix(""))] = title
    return References(labels, documents, root.resolve())


def scan_rst(text: str) -> tuple[str, dict[str, str]]:
    """Return a page's first section title and each label's title (the section after it)."""
    lines = text.splitlines()
    titles: dict[int, str] = {}
    for i, line in enumerate(lines[:-1]):
        under = lines[i + 1]
        underlined = _ADORNMENT.match(under) and len(under.rstrip()) >= len(line.strip())
        if line.strip() and not _ADORNMENT.match(line) and underlined:
            titles[i] = plain_title(line)
    labels: dict[str, str] = {}
    pending: list[str] = []
    for i, line in enumerate(lines):
        found = _LABEL.match(line)
        if found:
            pending.append(normal_label(found.group(1).strip("`")))
        elif line.strip() and pending:
            at = i if i in titles else i + 1 if _ADORNMENT.match(line) else -1
            if at in titles:  # a label before a section: its title (else it needs one given)
                labels.update(dict.fromkeys(pending, titles[at]))
            pending = []
    first = titles[min(titles)] if titles else ""
    return first, labels


def scan_markdown(text: str) -> tuple[str, dict[str, str]]:
    """Return a Markdown page's first H1 (MyST's labels are left to its own syntax)."""
    found = _MARKDOWN_TITLE.search(text)
    return (plain_title(found.group(1)) if found else ""), {}


def plain_title(line: str) -> str:
    """Return a title as a reader sees it: inline markup and references reduced to their text."""
    text = _INLINE.sub(lambda m: next(g for g in m.groups() if g is not None), line)
    return " ".join(text.replace("**", "").replace("*", "").split())


def normal_label(label: str) -> str:
    """Return a label as Sphinx keys it: lower case, whitespace collapsed."""
    return " ".join(label.lower().split())


def reference_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: D103
    text = nodes.unescape(text)
    titled = re.match(r"^(.+?)\s*<[^<>]+>$", text, re.DOTALL)
    target = text.lstrip("!")
    if titled:
        shown = titled.group(1)
    elif name.rpartition(":")[2] == "ref":
        label = normal_label(target)
        shown = (_CURRENT.get() or _NONE).labels.get(label) or SPHINX_LABELS.get(label, target)
    else:
        source = str(inliner.document.get("source", ""))
        shown = (_CURRENT.get() or _NONE).document_title(target, source) or target
    return [nodes.inline(rawtext, shown)], []
