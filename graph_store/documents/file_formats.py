"""Read one file of a user's documents into a title, a text and metadata, by the file's kind.

Every kind becomes Markdown-style text, so the chunker reads one syntax. Markdown stays as
written (its front matter becomes metadata); reStructuredText is parsed by docutils with
Sphinx's markup and rendered as Markdown (:mod:`.rst`); HTML gives its text
and headings, no markup (BeautifulSoup); PDF its pages' text (pypdf). Bytes are read as UTF-8,
else as charset-normalizer's best guess, which is reported. A file that is binary or cannot be
decoded raises :class:`SkipFile` with the reason: the loader skips it with a warning (or, when
strict, stops before anything is written).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .markdown import outside_code, parse_blocks, split_front_matter

Scalar = str | int | float | bool
"""What a metadata value may be: what Chroma stores and ``--where key=value`` compares."""


RESERVED_FIELDS = frozenset(
    {"id", "text", "doc_id", "position", "n_chunks", "section", "source", "generation"}
)
"""Metadata names hopgraph sets itself; a document's own fields may not take them."""


def check_fields(fields: dict[str, Scalar]) -> None:
    """Raise ValueError naming a metadata key hopgraph reserves."""
    taken = sorted(RESERVED_FIELDS & fields.keys())
    if taken:
        raise ValueError(
            f"metadata field(s) {', '.join(map(repr, taken))} are reserved by hopgraph "
            f"({', '.join(sorted(RESERVED_FIELDS))}); rename them"
        )


class SkipFile(Exception):
    """A file that cannot be read as a document; the message is the reason."""


@dataclass(frozen=True)
class Parsed:
    """One file's document: title, text (Markdown-style headings) and metadata."""

    title: str
    text: str
    metadata: dict[str, Scalar] = field(default_factory=dict)
    encoding: str | None = None
    """The encoding it was decoded from when that was not UTF-8."""
    warnings: tuple[str, ...] = ()
    """What could not be read of it (an include that is missing), each naming the place."""


def decode(data: bytes) -> tuple[str, str | None]:
    """Return the text of ``data`` and its encoding when not UTF-8; raise SkipFile if binary."""
    if b"\x00" in data[:8192]:
        raise SkipFile("binary file (NUL bytes), not text")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    found = from_bytes(data)
    best = found.best()
    if best is None:
        raise SkipFile("not UTF-8 and no other text encoding fits; re-encode it as UTF-8")
    # A short text fits several code pages equally well; Windows-1252 (Latin-1's superset) is
    # by far the most common of them, so it wins a tie.
    tied = [m for m in found if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    best = next((m for m in tied if m.encoding == "cp1252"), best)
    return str(best), best.encoding


def _title_from_stem(path: Path) -> str:
    return path.stem.replace("_", " ").replace("-", " ").strip()


def read_plain(path: Path, text: str) -> Parsed:
    """Plain text or Markdown: a leading level-1 heading is the title, else the file name."""
    body = text.strip()
    # the title can only be the first block: parse up to the first blank line, not the file
    first = next(iter(parse_blocks(body.partition("\n\n")[0])), None)
    if first and first.kind == "heading" and first.level == 1 and body.startswith(first.text):
        rest = body[len(first.text) :].strip()
        if rest:
            return Parsed(first.title, rest)
    return Parsed(_title_from_stem(path), body)


_MYST_TARGET = re.compile(r"^ {0,3}\([^()\s]+\)=[ \t]*$")
"""A MyST label line, ``(label)=``: a link target (Sphinx's Markdown), no text of its own."""
_MYST_ROLE = re.compile(r"\{[\w][\w:.+-]*\}(?=`)")
"""A MyST role's name, ``{func}`` in ``{func}`name```: the page shows the code span alone."""


def _myst_to_markdown(line: str) -> str | None:
    """Return a line without MyST's markup: None for a label line, roles without their names."""
    return None if _MYST_TARGET.match(line) else _MYST_ROLE.sub("", line)


def read_markdown(path: Path, text: str) -> Parsed:
    """Markdown: YAML front matter → metadata (``title`` → the title), then as plain text.

    MyST label lines (``(label)=``) are dropped (they mark a heading as a link target), and
    outside code blocks a role's name before its code span (``{func}`name``` reads ```name```).
    """
    metadata: dict[str, Scalar] = {}
    block, text = split_front_matter(text)
    text = outside_code(text, _myst_to_markdown)
    if block is not None:
        metadata = front_matter(block, path)
    title = metadata.pop("title", None)
    if title is not None:
        return Parsed(str(title), text.strip(), metadata)
    parsed = read_plain(path, text)
    return Parsed(parsed.title, parsed.text, metadata)


def front_matter(block: str, path: Path) -> dict[str, Scalar]:
    """Parse a YAML front-matter block into scalar metadata (see :func:`scalar`)."""
    import yaml

    try:
        data = yaml.safe_load(block)
    except yaml.YAMLError as err:
        raise SkipFile(f"its front matter is not valid YAML ({err.__class__.__name__})") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkipFile("its front matter is not a YAML mapping (key: value lines)")
    fields = {str(k): scalar(v) for k, v in data.items() if v is not None}
    try:
        check_fields(fields)
    except ValueError as err:
        raise SkipFile(f"its front matter: {err}") from err
    return fields


def scalar(value: object) -> Scalar:
    """Return a metadata value as a scalar: dates as ISO text, lists joined by ", ", else JSON."""
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value)
    return json.dumps(value, default=str, ensure_ascii=False)


def read_rst(path: Path, text: str) -> Parsed:
    """reStructuredText, parsed by docutils with Sphinx's markup (:mod:`.rst`)."""
    from .rst import parse_rst

    parsed = parse_rst(text, path)
    return Parsed(parsed.title or _title_from_stem(path), parsed.text, warnings=parsed.warnings)


_LIST_GAP = re.compile(r"^(- .*)\n\n(?=- )", re.MULTILINE)
_BLOCKS = ("p", "div", "section", "article", "table", "tr", "ul", "ol", "blockquote", "dl")


def read_html(path: Path, text: str) -> Parsed:
    """HTML: the text and headings, no markup; ``<title>`` (else the first ``<h1>``) is the title.

    Headings become ``#`` lines, ``<pre>`` a fenced block, list items ``- `` lines, and block
    elements paragraphs; scripts, styles and navigation are dropped.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "nav"]):
        tag.decompose()
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    if title_tag:
        title_tag.decompose()
    for pre in soup.find_all("pre"):
        pre.replace_with(f"\n\n```\n{pre.get_text().strip(chr(10))}\n```\n\n")
    for level in range(1, 7):
        for heading in soup.find_all(f"h{level}"):
            words = heading.get_text(" ", strip=True)
            if not title and level == 1:
                title = words
                heading.decompose()
                continue
            heading.replace_with(f"\n\n{'#' * level} {words}\n\n")
    for item in soup.find_all("li"):
        item.replace_with(f"\n- {item.get_text(' ', strip=True)}\n")
    for br in soup.find_all("br"):
        br.replace_with("\n")
    for block in soup.find_all(_BLOCKS):
        block.insert_before("\n\n")
        block.insert_after("\n\n")
    body = re.sub(r"\n[ \t]*\n\s*", "\n\n", soup.get_text()).strip()
    while _LIST_GAP.search(body):  # a list's items on consecutive lines
        body = _LIST_GAP.sub(r"\1\n", body)
    return Parsed(title or _title_from_stem(path), body)


def read_pdf(path: Path) -> Parsed:
    """PDF: each page's text (pypdf), pages separated by blank lines; its Title, else the name."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise SkipFile("the PDF is encrypted; decrypt it first")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or ""
    except (PyPdfError, ValueError, KeyError) as err:
        raise SkipFile(f"not a readable PDF ({err.__class__.__name__}: {err})") from err
    body = "\n\n".join(p.strip() for p in pages if p.strip())
    if not body:
        raise SkipFile("the PDF has no text layer (scanned?); run OCR first")
    return Parsed(str(title).strip() or _title_from_stem(path), body, {"pages": len(pages)})


TextReader = Callable[[Path, str], Parsed]
TEXT_READERS: dict[str, TextReader] = {
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".txt": read_plain,
    ".text": read_plain,
    ".rst": read_rst,
    ".html": read_html,
    ".htm": read_html,
}
DOCUMENT_SUFFIXES = (*TEXT_READERS, ".pdf")
"""Suffixes read as one document per file (JSONL files hold one per line)."""


def read_file(path: Path, data: bytes) -> Parsed:
    """Return the document in ``path`` (whose bytes are ``data``) by its suffix."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return read_pdf(path)
    text, encoding = decode(data)
    parsed = TEXT_READERS[suffix](path, text)
    if not parsed.text.strip():
        raise SkipFile("it holds no text")
    return Parsed(parsed.title, parsed.text, parsed.metadata, encoding, parsed.warnings)
