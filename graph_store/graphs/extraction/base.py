"""What an extractor produces, and the one method it has."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hopgraph.graph_store.documents.schema import Chunk


@dataclass(frozen=True, slots=True)
class Triple:
    """A (subject, predicate, object) fact read from one chunk; entities are normalised names."""

    subject: str
    predicate: str
    object: str

    @property
    def text(self) -> str:
        """Return the triple as the text that is embedded and searched: "s p o"."""
        return f"{self.subject} {self.predicate} {self.object}"


@dataclass(frozen=True, slots=True)
class Extraction:
    """Everything read from one chunk."""

    chunk_id: str
    entities: tuple[str, ...]
    keywords: tuple[str, ...]
    triples: tuple[Triple, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "chunk_id": self.chunk_id,
            "entities": list(self.entities),
            "keywords": list(self.keywords),
            "triples": [[t.subject, t.predicate, t.object] for t in self.triples],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Extraction:
        """Build an extraction from :meth:`to_dict` output."""
        return cls(
            chunk_id=data["chunk_id"],
            entities=tuple(data["entities"]),
            keywords=tuple(data["keywords"]),
            triples=tuple(Triple(*t) for t in data["triples"]),
        )


class Extractor(Protocol):
    """Reads entities, keywords and triples from chunks."""

    name: str

    def extract(self, chunks: Sequence[Chunk], show_progress: bool = False) -> list[Extraction]:
        """Return one extraction per chunk, in order."""
        ...
