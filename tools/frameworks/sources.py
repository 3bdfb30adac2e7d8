"""Where a framework's retriever reads: an index folder, an open ``Index`` or a ``LiveIndex``.

An ``Index`` answers from the generation it opened, whatever is written after; a ``LiveIndex``
from the newest committed one, as the servers do, so a long-running app's retriever sees
`hopgraph sync`. A path opens a ``LiveIndex`` the retriever keeps.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hopgraph.core.errors import InputError
from hopgraph.graph_store import Index, LiveIndex
from hopgraph.graph_store.documents.filters import Where
from hopgraph.tools.shared.expand import Expansion, expand_hits
from hopgraph.tools.shared.hits import Hit
from hopgraph.tools.shared.registry import DEFAULT_PRESET, make_retriever

IndexSource = str | os.PathLike[str] | Index | LiveIndex
"""What a retriever takes as its index."""


class IndexReader:
    """The index each call of a retriever reads."""

    def __init__(self, source: object) -> None:
        """Take a path (opened as a LiveIndex), an ``Index`` or a ``LiveIndex``.

        A path that holds no index is the error every command gives (IndexStateError).
        """
        if isinstance(source, bool) or not isinstance(
            source, str | os.PathLike | Index | LiveIndex
        ):
            raise InputError(
                f"index: {type(source).__name__} {source!r:.60} is not an index",
                "give an index folder's path, hopgraph.Index.open(DIR) or hopgraph.LiveIndex(DIR)",
            )
        if isinstance(source, str | os.PathLike):
            source = LiveIndex(Path(source))
        self.source: Index | LiveIndex = source

    @property
    def directory(self) -> Path:
        """Return the index folder."""
        return self.source.directory

    @contextmanager
    def reading(self) -> Iterator[Index]:
        """Yield the index one call reads: the Index itself, or the newest generation."""
        if isinstance(self.source, Index):
            yield self.source
            return
        with self.source.reading() as index:
            yield index


def widened(
    reader: IndexReader,
    method: str,
    query: str,
    k: int,
    where: Where | None,
    expand: str | None,
    preset: str = DEFAULT_PRESET,
) -> list[Hit]:
    """Return ``method``'s hits on the index a call reads, widened by ``expand`` when given."""
    expansion = Expansion.parse(expand) if expand else None  # a typo is named before retrieving
    with reader.reading() as index:
        hits = make_retriever(method, index, preset=preset).retrieve(query, k, where)
        return expand_hits(index, hits, expansion) if expansion is not None else hits
