"""Typed settings shared by the index, the retrievers and the CLI.

Explicit arguments win over environment variables; environment variables win over defaults.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def default_index_dir() -> Path:
    """Return the index directory to use when none is given: $HOPGRAPH_INDEX or ./hopgraph-index."""
    return Path(os.environ.get("HOPGRAPH_INDEX", "hopgraph-index"))


def cache_dir() -> Path:
    """Return where hopgraph keeps derived data such as evaluation indexes.

    ``$HOPGRAPH_CACHE`` if set, else ``$XDG_CACHE_HOME/hopgraph``, else ``~/.cache/hopgraph``.
    """
    if os.environ.get("HOPGRAPH_CACHE"):
        return Path(os.environ["HOPGRAPH_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "hopgraph"


class IndexSettings(BaseModel):
    """How an index is built. Stored in the manifest; an index is reopened with these."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(
        DEFAULT_MODEL,
        description="sentence-transformers model name or local path; 'hashing' is a tiny "
        "lexical embedder for tests and smoke runs",
    )
    chunk_tokens: int = Field(200, ge=16, le=4096, description="target chunk size in model tokens")
    batch_size: int = Field(32, ge=1, le=4096, description="passages per embedding batch")
    chroma_url: str | None = Field(
        None, description="Chroma server URL (http://host:port); None = embedded PersistentClient"
    )
    collection_prefix: str = Field("hopgraph", description="prefix of Chroma collection names")

    @field_validator("chroma_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"chroma_url must start with http:// or https://, got {value!r}")
        return value

    @classmethod
    def from_env(cls, **overrides: object) -> IndexSettings:
        """Build settings from ``HOPGRAPH_*`` variables, then explicit non-None overrides."""
        values: dict[str, object] = {}
        env = {
            "model": "HOPGRAPH_MODEL",
            "chunk_tokens": "HOPGRAPH_CHUNK_TOKENS",
            "batch_size": "HOPGRAPH_BATCH_SIZE",
            "chroma_url": "HOPGRAPH_CHROMA_URL",
        }
        for field, var in env.items():
            if os.environ.get(var):
                values[field] = os.environ[var]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
