"""How an index is built (:class:`IndexSettings`): stored in its manifest, reopened with it.

Apart from :mod:`hopgraph.core.settings` (re-exported there), so that reading a manifest, as
every query and `hopgraph check` does, needs pydantic but not pydantic-settings (0.1 s of
imports); only :meth:`IndexSettings.from_settings` reads the effective settings.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .config import DEFAULT_MODEL


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
    embeddings_url: str | None = Field(
        None,
        description="OpenAI-compatible embeddings endpoint serving ``model`` "
        "(http://host:port/v1); None = the model runs in process (sentence-transformers)",
    )
    collection_prefix: str = Field("hopgraph", description="prefix of Chroma collection names")
    vector_dtype: Literal["float32", "float16"] = Field(
        "float32",
        description="how the vector table stores vectors: float16 halves its memory and disk "
        "(cosines change in the fourth decimal)",
    )

    @field_validator("chroma_url", "embeddings_url")
    @classmethod
    def _check_url(cls, value: str | None, info: Any) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(
                f"{info.field_name} must start with http:// or https://, got {value!r}"
            )
        return value

    @classmethod
    def from_settings(cls, **overrides: object) -> IndexSettings:
        """Build settings from the effective :func:`settings`, then explicit non-None overrides."""
        from .settings import settings  # pydantic-settings: for a build, not to read a manifest

        current = settings()
        values: dict[str, object] = {
            "model": current.model,
            "chunk_tokens": current.chunk_tokens,
            "batch_size": current.batch_size,
            "chroma_url": current.chroma_url,
            "embeddings_url": current.embeddings_url,
            "vector_dtype": current.vector_dtype,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
