"""The one entity linker: a question's mentions linked to entities as the chunks' were.

The offline extractor links a chunk's mentions to the corpus's page titles and their aliases
(extraction.offline.TitleIndex, longest match first). A question must be linked the same way,
or its entities never meet the chunks': IIER seeds on them, G-RAG counts the concepts a passage
shares with the question, ToG-2 starts its search from them. An opened index holds one linker
(``Index.entity_linker``), built on first use and shared by every method that needs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hopgraph.graph_store.documents.schema import Chunk

from .extraction.offline import TitleIndex, content_words, corpus_titles, find_mentions


@dataclass(frozen=True)
class Linked:
    """What a text links to."""

    words: list[str]
    """The text's lower-cased tokens."""
    entities: list[str]
    """The entity keys it mentions, in order of first mention, each once (years left out)."""

    def content_words(self) -> list[str]:
        """Return the tokens that are neither stop words nor connectors."""
        return content_words(self.words)


class EntityLinker:
    """The corpus's title and alias index, and mention matching against it."""

    def __init__(self, titles: TitleIndex) -> None:
        """Link against ``titles`` (:meth:`of_chunks` builds them from a corpus)."""
        self.titles = titles

    @classmethod
    def of_chunks(cls, chunks: Iterable[Chunk]) -> EntityLinker:
        """Index the titles of ``chunks`` as the offline extractor does.

        One-word aliases the corpus writes in lower case are skipped.
        """
        return cls(corpus_titles(chunks))

    def link(self, text: str) -> Linked:
        """Return the text's tokens and the entities it mentions."""
        words, mentions = find_mentions(text, self.titles)
        keys = dict.fromkeys(m.key for m in mentions if not m.is_date)
        return Linked(words, list(keys))
