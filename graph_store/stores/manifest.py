"""The index manifest: what an index holds, in which files; writing it commits a write.

Every write puts its new files under a generation folder (``g000007/``), adds rows to Chroma
tagged with that generation, and then replaces ``manifest.json`` atomically (write a temporary
file, fsync, rename, fsync the folder). A reader sees the last manifest and nothing newer: the
files it names and the Chroma rows of its generation or older.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from hopgraph.core.config import DEFAULT_MODEL
from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import BLOCK, NOFOLLOW, BlockSums, block_sums, expect
from hopgraph.core.index_settings import IndexSettings

from .ivf import IVF_FILE

MANIFEST = "manifest.json"
MANIFEST_LIMIT = 64 << 20
"""The most bytes a manifest is read to: one of a ten-million-passage index is a few hundred kB."""
FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)
"""Format 1 (one folder per index, rewritten whole on every write) is read as generation 0;
its first write tags its Chroma rows and turns it into format 2."""
LEGACY_FILES = {"chunks": "chunks.jsonl", "bm25": "bm25", "graph": "graph"}
TRIPLE_VECTORS = "triple_vectors"
"""The part (a key of ``Manifest.files``) holding the triple vectors (graphs.triple_table)."""
_VERSIONED = ("hopgraph", "chromadb", "bm25s", "sentence-transformers", "torch", "numpy")


class Manifest(BaseModel):
    """What an index directory holds and how it was made."""

    model_config = ConfigDict(extra="ignore")

    format_version: int
    settings: IndexSettings
    embedder: dict[str, Any]
    collection: str
    chroma_dir: str | None
    chroma_parts: int = 0
    """0: the passages' Chroma rows are one collection; P: P collections, one per partition of
    a cluster's build (graph_store/stores/chroma_parts.py)."""
    counts: dict[str, int]
    versions: dict[str, str]
    created_at: str
    updated_at: str
    timings: dict[str, float] = {}
    graph: dict[str, Any] | None = None
    """Settings, counts and timings of the passage and knowledge graphs, once built."""
    generation: int = 0
    files: dict[str, str] = {}
    """Where each part lives, relative to the index folder: chunks, bm25, graph, triple_vectors."""
    segments: list[str] = []
    """The BM25 segments the index is made of (folders relative to the index; kdb_bm25)."""
    vectors: list[str] = []
    """The segments of its chunk vectors (folders relative to the index; vector_table). Empty in
    an index written before them: its vectors are read from Chroma until its next write."""
    ann: dict[str, str] = {}
    """The IVF file of each vector segment that has one (graph_store/stores/ivf.py): ``segment ->
    file``, relative to the index. Derived from the segment: a missing or damaged one makes
    readers search that segment exactly (with a warning); `hopgraph check --repair` rebuilds it."""
    sizes: dict[str, int] = {}
    """The size of every file the generation is made of (Chroma's aside), by path relative to
    the index: readers check them when they open it (a truncated, emptied or missing file)."""
    checksums: dict[str, str] = {}
    """Their CRC-32s (hex), which `hopgraph check` verifies: damage that keeps a file's size."""
    blocks: dict[str, str] = {}
    """The CRC-32 of each block of ``block_size`` bytes (8 hex digits a block) of every file
    over one block: readers verify a block before they first use its bytes (a file of one
    block: its checksum). Absent for a file recorded before them: it is verified whole."""
    block_size: int = 0
    """The bytes a block of ``blocks`` holds (core.file_reads.BLOCK when they were recorded)."""
    chroma_files: dict[str, tuple[int, str]] = {}
    """Size and CRC-32 of every file of the embedded Chroma store as its write left it, by path
    relative to the index (graph_store/stores/chroma_seal.py). No reader opens Chroma, so they hold
    until the next write; empty while a write's purge is under way and for Chroma servers."""
    rows: dict[str, str] = {}
    """Chunks whose Chroma row has another id: ``chunk id -> row id``. A chunk replaced under its
    id (a changed document in ``sync``) gets a new row, ``ID\x1fgN`` (documents.row_id), so that
    the previous generation's readers keep the old one until it is purged."""
    purge: dict[str, list[str]] = {}
    """What this generation removed from Chroma: ``passages`` and ``triples`` row ids and whole
    ``collections``. Removed only once the manifest is committed (readers of the previous
    generation keep them until then), and removed again by the next write if a crash intervened."""

    def row_of(self, chunk_id: str) -> str:
        """Return the id of the Chroma row that holds ``chunk_id``'s vector."""
        return self.rows.get(chunk_id, chunk_id)

    def path(self, directory: Path, part: str) -> Path:
        """Return where ``part`` (chunks, bm25, graph, documents) of this generation lives."""
        return directory / (self.files[part] if part in self.files else LEGACY_FILES[part])

    def write(self, directory: Path) -> None:
        """Replace ``manifest.json`` atomically and durably: this is the commit of a write."""
        text = self.model_dump_json(indent=2) + "\n"
        temporary = directory / f".{MANIFEST}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, directory / MANIFEST)
        fsync_directory(directory)


def part_files(directory: Path, manifest: Manifest) -> list[Path]:
    """Return every file the manifest's generation is made of (Chroma's aside), sorted.

    An IVF file counts only while the manifest names it: one that a repair replaced stays in
    its segment's folder, no longer read.
    """
    roots = [*manifest.files.values(), *manifest.segments, *manifest.vectors]
    roots += manifest.ann.values()
    found: set[Path] = set()
    for root in map(directory.joinpath, roots):
        if root.is_file():
            found.add(root)
        elif root.is_dir():
            found.update(p for p in root.rglob("*") if p.is_file())
    named = {directory / name for name in manifest.ann.values()}
    return sorted(p for p in found if p.name != IVF_FILE or p in named)


def crc32(path: Path, size: int | None = None) -> str:
    """Return a file's CRC-32 as hex, read in 1 MB blocks (zlib: gigabytes a second).

    ``size``: read no further (the size the manifest records: a file grown since, or a device
    put in its place, is not read on and on). A symbolic link is not followed.
    """
    return block_sums(path, size, NOFOLLOW)[0]


def file_problem(path: Path, directory: Path, size: int | None = None) -> str | None:
    """Return what keeps ``path`` from being read as a file of the index, or ``None``.

    A file an index wrote is a regular file inside it, readable, of the size recorded: a
    symbolic link (to /dev/zero, to a folder), a device, a folder, or a file that lies
    outside the index through a linked folder is named, never opened: reading one could
    take every byte of memory or never end.
    """
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return "is missing"
    except OSError as err:
        return f"cannot be looked at: {err.strerror or err}"
    if stat.S_ISLNK(found.st_mode):
        return f"is a symbolic link (to {os.readlink(path)}), not a file the index wrote"
    if not stat.S_ISREG(found.st_mode):
        return f"is {_kind(found.st_mode)}, not a regular file"
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(directory) + os.sep):
        return f"lies outside the index, at {real} (a folder on its way is a link)"
    if not os.access(path, os.R_OK):
        return f"is unreadable (permission denied): give {_user()} read access to it"
    if size is not None and found.st_size != size:
        return f"is damaged: {found.st_size} bytes, {size} when written"
    return None


def _kind(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a folder",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISFIFO: "a pipe",
        stat.S_ISSOCK: "a socket",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a file")


def _user() -> str:
    """Name the user this process runs as (whom a file must be readable by)."""
    try:
        import pwd

        return f"the user {pwd.getpwuid(os.getuid()).pw_name!r}"
    except (ImportError, KeyError):
        return "the user running hopgraph"


def read_bounded(path: Path, directory: Path, limit: int) -> bytes:
    """Return the bytes of a small file of the index (a manifest, a table's facts).

    Refused, with what is wrong, when it is not a regular file inside the index
    (:func:`file_problem`) or holds more than ``limit`` bytes: no more than that is read.
    """
    problem = file_problem(path, directory)
    if problem is not None:
        raise OSError(f"{path} {problem}")
    with os.fdopen(os.open(path, os.O_RDONLY | NOFOLLOW), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path} is damaged: over {limit} bytes, more than any such file holds")
    return data


def record_files(directory: Path, manifest: Manifest, previous: Manifest | None) -> None:
    """Record the size and CRC-32 of every file of ``manifest``'s generation.

    Files are never changed once written, so a file the previous manifest recorded with the
    same size keeps its checksum and block checksums: a write hashes only the files it wrote.
    A file recorded before block checksums (Manifest.blocks) is hashed once more, by the next
    write, for its blocks; one that no longer matches its checksum keeps the recorded one (so
    `check` still names it) and gets no blocks.
    """
    sizes, checksums, blocks = {}, {}, {}
    known = previous.checksums if previous else {}
    # blocks of another size (another version's) are hashed again
    known_blocks = previous.blocks if previous and previous.block_size == BLOCK else {}
    for path in part_files(directory, manifest):
        name = path.relative_to(directory).as_posix()
        sizes[name] = path.stat().st_size
        same = previous is not None and previous.sizes.get(name) == sizes[name]
        if same and name in known and (sizes[name] <= BLOCK or name in known_blocks):
            checksums[name] = known[name]
            if name in known_blocks:
                blocks[name] = known_blocks[name]
            continue
        checksums[name], sums = block_sums(path, sizes[name], NOFOLLOW)
        if same and name in known and checksums[name] != known[name]:
            checksums[name] = known[name]  # damaged since: `check` must still see it
        elif sizes[name] > BLOCK:
            blocks[name] = sums
    manifest.sizes, manifest.checksums, manifest.blocks = sizes, checksums, blocks
    manifest.block_size = BLOCK


def open_files(directory: Path, manifest: Manifest) -> None:
    """Refuse a generation with a file missing or resized; record what each must hash to.

    Its IVF files aside (readers do without). Reads verify the hashes (core.file_reads).
    """
    damaged = damaged_files(directory, manifest, derived=False)
    if damaged:
        path, what = damaged[0]
        more = f" ({len(damaged) - 1} more: `hopgraph check` lists them)" if damaged[1:] else ""
        raise IndexStateError(f"{path} {what}{more}", repair_hint(directory, manifest, path))
    expect(expected_sums(directory, manifest), directory)


def expected_sums(directory: Path, manifest: Manifest) -> list[BlockSums]:
    """Return what each file of the generation must hash to, a block at a time (readers').

    Each one's hint is a partial, not a closure: a task in another process is sent them.
    """

    def hint(name: str) -> Callable[[], str]:
        return partial(repair_hint, directory, manifest, directory / name)

    blocks = manifest.blocks if manifest.block_size else {}
    return [
        BlockSums(str(directory / name), manifest.sizes[name], sums, hint(name), block)
        for name, checksum in manifest.checksums.items()
        if name in manifest.sizes
        for sums, block in [
            (blocks[name], manifest.block_size) if name in blocks else (checksum, 0)
        ]
    ]


def damaged_files(
    directory: Path, manifest: Manifest, derived: bool = True
) -> list[tuple[str, str]]:
    """Return (file, what is wrong) for each file not as written: missing, resized, not a file.

    (:func:`file_problem`: a link or a device in a file's place is named, not followed.)

    ``derived=False`` leaves out the IVF files, which readers do without (Manifest.ann).
    """
    out = []
    skip = set() if derived else set(manifest.ann.values())
    for name, size in manifest.sizes.items():
        if name in skip:
            continue
        path = directory / name
        problem = file_problem(path, directory, size)
        if problem is not None:
            out.append((str(path), problem))
    return out


def rebuild_hint(directory: Path) -> str:
    """Return the repair of a damaged index: a build from its sources, named where known.

    The documents table records each document's file (or the folder it was indexed with): when
    they name one source, the hint is the command that rebuilds the index, run as printed.
    """
    source, model = index_source(directory)
    if source is None:
        return (
            f"rebuild it from its sources: `hopgraph index SOURCE --index {directory} --force` "
            "(SOURCE: the file or folder it was built from)"
        )
    extra = f" --model {shlex.quote(model)}" if model and model != DEFAULT_MODEL else ""
    return (
        f"rebuild it from its source: `hopgraph index {shlex.quote(source)} --index "
        f"{shlex.quote(str(directory))} --force{extra}`"
    )


def index_source(directory: Path) -> tuple[str | None, str | None]:
    """Return the one file or folder the index was built from, and its model.

    None for the source: several, or unknown; for the model: the manifest is unreadable. Read
    from the committed generation's documents table, or the newest one there is when the
    manifest is lost; only each record's ``source`` and ``root`` are looked at.
    """
    try:
        raw = json.loads(read_bounded(directory / MANIFEST, directory, MANIFEST_LIMIT))
        model = raw["settings"]["model"]
        tables = [directory / raw["files"]["documents"]]
    except (OSError, ValueError, KeyError, TypeError):
        model, tables = None, sorted(directory.glob("g*/documents.jsonl"), reverse=True)
    for table in tables:
        sources = _sources(table)
        if sources is not None:
            return (sources.pop() if len(sources) == 1 else None), model
    return None, model


def _sources(table: Path) -> set[str] | None:
    """Return the sources a documents table names (the folder indexed, else the file).

    Read a line at a time, and only a regular file of the index: a hint is worked out on
    damage, when the table may be anything.
    """
    if file_problem(table, table.parent.parent) is not None:
        return None
    try:
        with os.fdopen(os.open(table, os.O_RDONLY | NOFOLLOW), "rb") as lines:
            records = (json.loads(line) for line in lines if line.strip())
            found = {r.get("root") or r.get("source") or "" for r in records}
    except (OSError, ValueError, AttributeError):
        return None
    return None if "" in found or not found else found


def graphs_hint(directory: Path) -> str:
    """Return the repair of damaged graphs: a graph build."""
    return f"rebuild the graphs: `hopgraph graph build --index {directory}`"


def tables_hint(directory: Path) -> str:
    """Return the repair of a damaged table (chunks, documents, vectors, BM25)."""
    return (
        f"`hopgraph check --repair --index {directory}` writes it again from the index's "
        "other copy (Chroma's rows; BM25 from the chunks' texts)"
    )


def repair_hint(directory: Path, manifest: Manifest, path: str | Path) -> str:
    """Return the command that repairs a damaged file of the index."""
    if Path(path) in {directory / name for name in manifest.ann.values()}:
        return ann_hint(directory)
    graph_parts = [manifest.files[p] for p in ("graph", TRIPLE_VECTORS) if p in manifest.files]
    if manifest.graph and any(Path(path).is_relative_to(directory / p) for p in graph_parts):
        return graphs_hint(directory)
    if Path(path) == directory / MANIFEST:
        return rebuild_hint(directory)
    return tables_hint(directory)


def ann_hint(directory: Path) -> str:
    """Return the repair of a missing or damaged IVF file: rebuilt from its segment."""
    return (
        f"`hopgraph check --repair --index {directory}` rebuilds it from its vector segment "
        "(until then that segment is searched exactly)"
    )


def fsync_directory(directory: Path) -> None:
    """Make a rename inside ``directory`` durable."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


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
    if not path.exists() and any(directory.glob("g0*/chunks.jsonl")):
        raise IndexStateError(  # its generations are there: the commit record is what is lost
            f"{path} is missing: {directory} holds an index whose record of its parts is lost",
            rebuild_hint(directory),
        )
    if not path.exists() and not path.is_symlink():
        raise IndexStateError(
            f"{directory} is not a hopgraph index (no {MANIFEST})",
            "point --index at a directory made by `hopgraph index`",
        )
    try:
        data = read_bounded(path, directory, MANIFEST_LIMIT)
    except OSError as err:  # a link, a device, a folder, too large, no permission
        raise IndexStateError(str(err), rebuild_hint(directory)) from err
    try:
        raw = json.loads(data)
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
        raise IndexStateError(f"{path} is unreadable: {err}", rebuild_hint(directory)) from err
    found = raw.get("format_version") if isinstance(raw, dict) else None
    if found not in READABLE_FORMATS:
        made_by = (raw.get("versions") or {}).get("hopgraph", "?") if isinstance(raw, dict) else "?"
        raise IndexStateError(
            f"{directory} has index format {found} (made by hopgraph {made_by}); "
            f"this hopgraph reads formats {', '.join(map(str, READABLE_FORMATS))}",
            f"rebuild it with `hopgraph index SOURCE --index {directory}`",
        )
    try:
        return Manifest.model_validate(raw)
    except ValidationError as err:
        raise IndexStateError(f"{path} is damaged: {err}", rebuild_hint(directory)) from err
