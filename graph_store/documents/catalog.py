"""A JSONL corpus located line by line, not loaded: what a build on a cluster hands its tasks.

``catalog_jsonl(path)`` reads the file once, a line at a time, checks every record as
``load_jsonl`` does (the same errors, with line numbers) and keeps, per document, the size of
its text, where its line is and its place in id order (what a plan cuts by), not its text nor
its id. A task then reads only its own lines (``LineSlice.documents``): the driver of a build
over millions of passages holds 40 bytes a document, not the corpus. The ids are held only
while the file is read (sorted there, which finds a repeated one): reading and cutting the
synthetic 3M corpus peaked at 942 MB when the catalog kept them and each figure as a Python
int, 414 MB now (evals/results/scale/catalog-driver-2026-12-05.json; the 3M build's driver
peaked at 1,000 MB before).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from hopgraph.core.errors import InputError
from hopgraph.core.settings import settings

from .loaders import LoadReport, parse_line, quote_ids, within_size
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
    """Where each document of a JSONL corpus is: text size and line, in file order."""

    path: Path
    order: np.ndarray
    """The documents' places in the file, in id order (:func:`id_order`)."""
    sizes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    numbers: np.ndarray
    report: LoadReport

    def __len__(self) -> int:
        return len(self.order)

    def slice(self, places: Sequence[int] | np.ndarray) -> LineSlice:
        """Return the lines of the documents at ``places`` (positions in the catalog)."""
        at = np.asarray(places, dtype=np.int64)
        return LineSlice(str(self.path), self.offsets[at], self.lengths[at], self.numbers[at])


def id_order(ids: Sequence[str]) -> np.ndarray:
    """Return the places of ``ids`` in id order (Python's string order), as int64."""
    return np.argsort(np.array(ids, dtype=object), kind="stable").astype(np.int64, copy=False)


def catalog_jsonl(path: Path, strict: bool = False, max_mb: float | None = None) -> Catalog:
    """Locate every document of the JSONL file ``path``; see the module doc.

    As ``load_corpus``: a document over ``max_mb`` of text (default: the ``max_document_mb``
    setting) is skipped and named, or, ``strict``, refused; duplicate ids and an empty file
    are errors.
    """
    limit = settings().max_document_mb if max_mb is None else max_mb
    report = LoadReport(path, files=1)
    ids: list[str] = []
    columns = [array("q") for _ in range(4)]  # 8 bytes a figure, not a Python int's 36
    sizes, offsets, lengths, numbers = columns
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
    order = id_order(ids)
    _refuse_repeats(ids, order, path)
    report.documents = len(ids)
    del ids  # the catalog keeps places, not ids
    return Catalog(path, order, *(np.frombuffer(c, dtype=np.int64) for c in columns), report)


def _refuse_repeats(ids: list[str], order: np.ndarray, path: Path) -> None:
    """Raise if two documents share an id (neighbours in id order), naming the repeated ones."""
    repeated = [ids[b] for a, b in pairwise(order) if ids[a] == ids[b]]
    if repeated:
        raise InputError(
            f"{path}: duplicate document ids: {quote_ids(repeated)}", "document ids must be unique"
        )
