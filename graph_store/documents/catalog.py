"""A JSONL corpus located line by line, not loaded: what a build on a cluster hands its tasks.

``catalog_jsonl(path)`` reads the file once, a line at a time, checks every record as
``load_jsonl`` does (the same errors, with line numbers) and keeps, per document, its id, the
size of its text and where its line is, not its text. A task then reads only its own lines
(``LineSlice.documents``): the driver of a build over millions of passages holds ids and
offsets (tens of bytes a document), not the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hopgraph.core.errors import InputError
from hopgraph.core.settings import settings

from .loaders import LoadReport, check_unique_ids, parse_line, within_size
from .schema import Document


def text_size(doc: Document) -> int:
    """Return how much text a document weighs in a partition plan (characters)."""
    return len(doc.title) + len(doc.text) + 1


@dataclass(frozen=True)
class LineSlice:
    """Some lines of a JSONL corpus: a partition's documents, read where the task runs."""

    path: str
    offsets: np.ndarray
    lengths: np.ndarray
    numbers: np.ndarray
    """Each line's number in the file (for errors)."""

    def documents(self) -> list[Document]:
        """Read and parse these lines, in the slice's order."""
        path, docs = Path(self.path), []
        source = str(path.resolve())
        with path.open("rb") as file:
            for offset, length, number in zip(
                self.offsets, self.lengths, self.numbers, strict=True
            ):
                file.seek(int(offset))
                docs.append(parse_line(file.read(int(length)), path, int(number), source))
        return docs


@dataclass(frozen=True)
class Catalog:
    """Where each document of a JSONL corpus is: id, text size and line, in file order."""

    path: Path
    ids: list[str]
    sizes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    numbers: np.ndarray
    report: LoadReport

    def __len__(self) -> int:
        return len(self.ids)

    def slice(self, places: Sequence[int] | np.ndarray) -> LineSlice:
        """Return the lines of the documents at ``places`` (positions in the catalog)."""
        at = np.asarray(places, dtype=np.int64)
        return LineSlice(str(self.path), self.offsets[at], self.lengths[at], self.numbers[at])


def catalog_jsonl(path: Path, strict: bool = False, max_mb: float | None = None) -> Catalog:
    """Locate every document of the JSONL file ``path``; see the module doc.

    As ``load_corpus``: a document over ``max_mb`` of text (default: the ``max_document_mb``
    setting) is skipped and named, or, ``strict``, refused; duplicate ids and an empty file
    are errors.
    """
    limit = settings().max_document_mb if max_mb is None else max_mb
    report = LoadReport(path, files=1)
    ids: list[str] = []
    sizes, offsets, lengths, numbers = [], [], [], []
    source, offset = str(path.resolve()), 0
    try:
        file = path.open("rb")
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({err.strerror})") from err
    with file:
        for number, line in enumerate(file, start=1):
            if line.strip():
                doc = parse_line(line, path, number, source)
                if within_size(doc, limit, strict, report):
                    ids.append(doc.id)
                    sizes.append(text_size(doc))
                    offsets.append(offset)
                    lengths.append(len(line))
                    numbers.append(number)
            offset += len(line)
    if not ids:
        why = f" (every document is over the {limit:g} MB limit)" if report.skipped else ""
        raise InputError(
            f"{path}: the corpus is empty{why}", "give at least one document with text"
        )
    check_unique_ids((Document(i, "", "") for i in ids), str(path))
    report.documents = len(ids)
    return Catalog(
        path,
        ids,
        np.asarray(sizes, dtype=np.int64),
        np.asarray(offsets, dtype=np.int64),
        np.asarray(lengths, dtype=np.int64),
        np.asarray(numbers, dtype=np.int64),
        report,
    )
