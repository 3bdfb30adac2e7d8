"""Embeddings from an OpenAI-compatible endpoint (OpenAI, Ollama, TEI, vLLM, Infinity).

``--embeddings-url URL --model NAME`` (or ``HOPGRAPH_EMBEDDINGS_URL``) builds an index whose
vectors come from ``POST URL/embeddings``. The client is LangChain's ``OpenAIEmbeddings`` (the
openai client underneath: batching, retries with exponential backoff, a timeout), told not to
tokenise with tiktoken (it would download its tables, and the server need not be OpenAI's).
Every vector is kept in a SQLite cache (CACHE/embeddings.sqlite) under the hash of URL, model
and text, so a rebuild or a re-sync pays only for text it never sent. Vectors are normalised
(the index compares by cosine). Tokens are counted as words and punctuation (there is no
tokenizer to ask): chunks come out somewhat shorter than ``--chunk-tokens`` model tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from hopgraph.core.errors import HopgraphError
from hopgraph.core.settings import cache_dir, settings

from .vector_cache import VectorCache, cached_vectors

_PIECE = re.compile(r"\w+|[^\w\s]")


class EndpointError(HopgraphError):
    """The embeddings endpoint could not be used: down, refusing, or answering wrongly."""


class EndpointEmbedder:
    """The embedder (:class:`~hopgraph.graph_store.embedding.embedders.Embedder`) of an endpoint."""

    def __init__(self, name: str, url: str, batch_size: int = 32) -> None:
        from langchain_openai import OpenAIEmbeddings

        current = settings()
        key = current.embeddings_api_key or current.llm_api_key
        self.name, self.url, self.batch_size = name, url.rstrip("/"), batch_size
        self.client = OpenAIEmbeddings(
            model=name,
            base_url=self.url,
            api_key=key.get_secret_value() if key else "not-needed",  # local servers ignore it
            chunk_size=batch_size,
            max_retries=current.embeddings_max_retries,
            timeout=current.embeddings_timeout,
            check_embedding_ctx_length=False,  # no tiktoken: send the text as it is
        )
        self.cache = VectorCache(cache_dir() / "embeddings.sqlite")
        self.dimension = len(self.embed(["dimension"])[0])  # cached too: a rebuild sends nothing

    def embed(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Return the texts' normalised vectors: cached ones from the cache, the rest fetched."""
        source = f"{self.url}\0{self.name}"
        found = cached_vectors(
            self.cache, source, texts, self._fetch, self.batch_size * 8, progress
        )
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        return np.stack(found).astype(np.float32)

    def embed_fresh(self, texts: Sequence[str]) -> np.ndarray:
        """Return vectors asked of the endpoint now, not from the cache (to check the model)."""
        return self._fetch(list(texts))

    def _fetch(self, texts: list[str]) -> np.ndarray:
        try:
            rows = self.client.embed_documents(texts)
        except Exception as err:  # the openai client's connection, status and timeout errors
            raise EndpointError(
                f"embeddings endpoint {self.url} (model {self.name!r}) failed: "
                f"{type(err).__name__}: {err}",
                "check that the server is up and serves this model (HOPGRAPH_EMBEDDINGS_URL, "
                "--model), and HOPGRAPH_EMBEDDINGS_API_KEY if it needs a key",
            ) from err
        vectors = np.asarray(rows, dtype=np.float32)
        expected = getattr(self, "dimension", None)
        if (
            vectors.ndim != 2
            or len(vectors) != len(texts)
            or (expected is not None and vectors.shape[1] != expected)
        ):
            raise EndpointError(
                f"embeddings endpoint {self.url} (model {self.name!r}) sent {vectors.shape} "
                f"vectors for {len(texts)} texts of {expected or 'one'} dimension(s) each",
                "the model behind the endpoint changed: serve the index's model again, or "
                "rebuild the index with the new one",
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)

    def count_tokens(self, text: str) -> int:
        """Count words and punctuation marks (no tokenizer of the model is at hand)."""
        return len(_PIECE.findall(text))
