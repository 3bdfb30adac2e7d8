"""The index manifest: settings, model, counts and versions, written last on every build."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from hopgraph.errors import IndexStateError
from hopgraph.settings import IndexSettings

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
_VERSIONED = ("hopgraph", "chromadb", "bm25s", "sentence-transformers", "torch", "numpy")


class Manifest(BaseModel):
    """What an index directory holds and how it was made."""

    model_config = ConfigDict(extra="ignore")

    format_version: int
    settings: IndexSettings
    embedder: dict[str, Any]
    collection: str
    chroma_dir: str | None
    counts: dict[str, int]
    versions: dict[str, str]
    created_at: str
    updated_at: str
    timings: dict[str, float] = {}
    graph: dict[str, Any] | None = None
    """Settings, counts and timings of the passage and knowledge graphs, once built."""

    def write(self, directory: Path) -> None:
        """Write ``manifest.json`` (the last file of a build)."""
        text = self.model_dump_json(indent=2)
        (directory / MANIFEST).write_text(text + "\n", encoding="utf-8")


def now() -> str:
    """Return the current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str]:
    """Return the versions of the packages that shape an index."""
    out = {}
    for name in _VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def read_manifest(directory: Path) -> Manifest:
    """Read and check the manifest of ``directory``."""
    path = directory / MANIFEST
    if not directory.is_dir():
        raise IndexStateError(
            f"no index at {directory}",
            f"build one with `hopgraph index SOURCE --index {directory}`",
        )
    if not path.is_file():
        raise IndexStateError(
            f"{directory} is not a hopgraph index (no {MANIFEST})",
            "point --index at a directory made by `hopgraph index`",
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise IndexStateError(f"{path} is unreadable: {err}", "rebuild the index") from err
    found = raw.get("format_version") if isinstance(raw, dict) else None
    if found != FORMAT_VERSION:
        made_by = (raw.get("versions") or {}).get("hopgraph", "?") if isinstance(raw, dict) else "?"
        raise IndexStateError(
            f"{directory} has index format {found} (made by hopgraph {made_by}); "
            f"this hopgraph reads format {FORMAT_VERSION}",
            f"rebuild it with `hopgraph index SOURCE --index {directory}`",
        )
    try:
        return Manifest.model_validate(raw)
    except ValidationError as err:
        raise IndexStateError(f"{path} is damaged: {err}", "rebuild the index") from err
