"""Extraction of entities, keywords and triples from chunks: offline (default) or by an LLM.

Both extractors return the same :class:`Extraction` per chunk, so the graphs do not care which
one ran.
"""

from .base import Extraction, Extractor, Triple

__all__ = ["Extraction", "Extractor", "Triple"]
