"""One write to an index as one generation: new files in its folder, tagged Chroma rows, a commit.

A write never changes what the committed manifest points to. It adds files under
``gNNNNNN/`` and rows tagged with its number, and commits by replacing ``manifest.json``
(:meth:`Manifest.write`). Whatever it removes (rows, a replaced collection) is listed in the
new manifest's ``purge`` and removed only after the commit. So a write killed at any moment
leaves the previous generation whole: the next write (under the lock) first drops collections it
had started, deletes rows tagged after the committed generation (when an uncommitted folder shows
a write was under way: a write makes its folder before it tags a row), removes uncommitted folders
and finishes the committed generation's purge (:func:`recover`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from types import TracebackType

from hopgraph.core.errors import disk_full, disk_full_error
from hopgraph.core.file_reads import expect
from hopgraph.core.threads import Map, in_process
from hopgraph.graph_store.stores import chroma_seal
from hopgraph.graph_store.stores.chroma_parts import PassageStore, open_store
from hopgraph.graph_store.stores.manifest import (
    MANIFEST,
    Manifest,
    expected_sums,
    fsync_directory,
    record_files,
)
from hopgraph.graph_store.stores.vdb_chroma import (
    ChromaLocation,
    ChromaVectorStore,
    CollectionMissingError,
)

from .lock import LOCK_FILE

log = logging.getLogger(__name__)

JOURNAL = "pending.json"
"""Collections a write created before its commit (dropped if it never commits)."""
LEGACY_PARTS = ("chunks.jsonl", "bm25", "graph")


CHROMA_DIR = "chroma"
"""Where an embedded index keeps its Chroma files (format 1 had one folder per write)."""


def folder_name(generation: int) -> str:
    """Return the folder holding the files a generation wrote."""
    return f"g{generation:06d}"


def generation_of(name: str) -> int | None:
    """Return the generation whose folder is called ``name``, or ``None``."""
    return int(name[1:]) if name.startswith("g") and name[1:].isdigit() else None


def passages_location(directory: Path, manifest: Manifest) -> ChromaLocation:
    """Return where the manifest says the index's passage vectors live."""
    parts = manifest.chroma_parts
    if manifest.settings.chroma_url:
        return ChromaLocation(manifest.collection, url=manifest.settings.chroma_url, parts=parts)
    assert manifest.chroma_dir is not None
    return ChromaLocation(manifest.collection, path=directory / manifest.chroma_dir, parts=parts)


class Generation:
    """The write in progress: number, folder, collections it created; commit or roll back."""

    def __init__(self, directory: Path, committed: Manifest | None, run: Map = in_process) -> None:
        """Begin a write after ``committed``.

        ``run``: who makes the Chroma calls of the purge after the commit (a cluster's tasks,
        GraphTasks.stores), here by default.
        """
        self.run = run
        self.directory = directory
        self.committed = committed
        self.number = (committed.generation if committed else 0) + 1
        self.folder = directory / folder_name(self.number)
        self.created: list[ChromaLocation] = []
        self.committed_now = False

    def __enter__(self) -> Generation:
        self.directory.mkdir(parents=True, exist_ok=True)
        recover(self.directory, self.committed)
        if self.committed is not None:  # what it reads of the last one is verified as read:
            # damage copied into this generation would be recorded as sound
            expect(expected_sums(self.directory, self.committed), self.directory)
        self.folder.mkdir()
        fsync_directory(self.directory)  # the folder marks the write before any row is tagged
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Once the manifest names this generation, a failure after it (a purge) is not undone:
        # the next write's recovery finishes the purge.
        if err is None:
            return
        full = disk_full(err)
        written = _size_of(self.folder) if full else 0
        if not self.committed_now:
            self.rollback()
        if full:  # named as such, not as damage: the index needs no repair
            raise disk_full_error(self.directory, written, self.committed_now) from err

    def create_collection(self, location: ChromaLocation) -> ChromaVectorStore:
        """Create a collection for this write, journalled first so a crash cannot orphan it."""
        self.journal(location)
        return ChromaVectorStore(location, create=True)

    def journal(self, location: ChromaLocation) -> None:
        """Note a collection this write will create (elsewhere: a cluster's task), before it is."""
        self.created.append(location)
        _write_journal(self.directory, self.number, self.created)

    def commit(self, manifest: Manifest) -> None:
        """Write ``manifest`` as this generation, then purge what it removed and old folders."""
        manifest.generation = self.number
        fsync_tree(self.folder)
        record_files(self.directory, manifest, self.committed)
        manifest.chroma_files = {}  # this write changed Chroma: sealed below, after its purge
        manifest.write(self.directory)
        self.committed_now = True
        (self.directory / JOURNAL).unlink(missing_ok=True)
        purge(self.directory, manifest, self.run)
        purged, manifest.purge = any(manifest.purge.values()), {}  # later readers skip none
        chroma_seal.seal(self.directory, manifest)
        if purged or manifest.chroma_files:
            manifest.write(self.directory)
        # The previous generation's files stay for readers that opened its manifest just now.
        keep = _referenced(manifest) | (_referenced(self.committed) if self.committed else set())
        _remove_unreferenced(self.directory, keep)

    def rollback(self) -> None:
        """Undo an uncommitted write (best effort: the next write's recovery finishes it)."""
        try:
            recover(self.directory, self.committed)  # removes the folder too
        except Exception as err:  # the server went away, the device is full: the next write
            # recovers (the folder stays: it tells the next write that rows may need removing);
            # the write's own error is what the caller sees
            log.warning("could not undo the failed write yet (%s); the next write will", err)


def _size_of(folder: Path) -> int:
    """Return the bytes of the files under ``folder`` (what a write had written)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def write_under_way(directory: Path, committed: Manifest) -> bool:
    """Tell whether a write began after ``committed`` (running, or killed before its commit)."""
    return (directory / JOURNAL).is_file() or bool(_uncommitted(directory, committed.generation))


def _uncommitted(directory: Path, done: int) -> list[Path]:
    """Return the generation folders of writes after generation ``done``."""
    return [
        folder
        for folder in directory.iterdir()
        if folder.is_dir() and (generation_of(folder.name) or 0) > done
    ]


def recover(directory: Path, committed: Manifest | None) -> None:
    """Bring the stores back to exactly the committed generation (see the module docstring)."""
    journal = directory / JOURNAL
    pending = json.loads(journal.read_text(encoding="utf-8")) if journal.is_file() else None
    if pending and (committed is None or pending["generation"] > committed.generation):
        for each in pending["collections"]:
            drop_collection(
                ChromaLocation(each["collection"], _path(each), each["url"], each.get("parts", 0))
            )
    done = committed.generation if committed else 0  # none: an unreadable index being replaced
    uncommitted = _uncommitted(directory, done)
    # A write tags rows only after making its folder, so without one no rows need finding: at
    # a million rows the search by tag takes seconds. The folders go last, once the rows have.
    if committed is not None and (uncommitted or committed.format_version == 1):
        for location, _ in _stores(directory, committed):
            if (store := _open(location)) is not None:
                try:
                    store.delete(store.ids_after(done))
                    if committed.format_version == 1:
                        store.tag_all(0)
                finally:
                    store.close()
    if committed is not None and committed.chroma_files and (pending or uncommitted):
        # Chroma is the committed generation's again, not byte for byte: seal it anew while
        # the journal or a folder still tells `check` to read it for itself.
        chroma_seal.seal(directory, committed)
        committed.write(directory)
    journal.unlink(missing_ok=True)
    for folder in uncommitted:
        shutil.rmtree(folder, ignore_errors=True)
    if committed is not None:
        purge(directory, committed)


def purge(directory: Path, manifest: Manifest, run: Map = in_process) -> None:
    """Remove what the committed ``manifest`` says its write removed (idempotent).

    ``run``: makes the deletes, a call a collection (each partition's of a partitioned one).
    """
    for location, ids in _stores(directory, manifest):
        if ids:
            run(delete_rows, [(each, ids) for each in location.each()])
    for collection in manifest.purge.get("collections", []):
        drop_collection(_sibling(passages_location(directory, manifest), collection))


def delete_rows(location: ChromaLocation, ids: list[str]) -> None:
    """Delete rows by id from one collection, if it is there (an id it lacks is no error)."""
    if (store := _open(location)) is not None:
        try:
            store.delete(ids)
        finally:
            store.close()


def drop_collection(location: ChromaLocation) -> None:
    """Drop a collection (each of a partitioned one's) if it exists."""
    for each in location.each():
        store = _open(each)
        if store is not None:
            store.drop()
            store.close()


def fsync_tree(folder: Path) -> None:
    """Flush every file under ``folder`` (and the folders themselves) to disk."""
    for root, _, files in os.walk(folder):
        for name in files:
            handle = os.open(Path(root) / name, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
        fsync_directory(Path(root))


def _stores(directory: Path, manifest: Manifest) -> list[tuple[ChromaLocation, list[str]]]:
    passages = passages_location(directory, manifest)
    return [
        (passages, manifest.purge.get("passages", [])),
        (passages.triples(), manifest.purge.get("triples", [])),
    ]


def _open(location: ChromaLocation) -> PassageStore | None:
    if location.path is not None and not location.path.exists():
        return None
    try:
        return open_store(location, missing_ok=True)
    except CollectionMissingError:
        return None  # never created (no graphs yet), or already dropped


def _sibling(location: ChromaLocation, collection: str) -> ChromaLocation:
    return ChromaLocation(collection, location.path, location.url)


def _path(entry: dict) -> Path | None:
    return Path(entry["path"]) if entry["path"] else None


def _write_journal(directory: Path, number: int, created: list[ChromaLocation]) -> None:
    entries = [
        {
            "collection": c.collection,
            "path": str(c.path) if c.path else None,
            "url": c.url,
            "parts": c.parts,
        }
        for c in created
    ]
    temporary = directory / f".{JOURNAL}.tmp"
    temporary.write_text(json.dumps({"generation": number, "collections": entries}))
    os.replace(temporary, directory / JOURNAL)
    fsync_directory(directory)


def written_by_a_build(entry: Path) -> bool:
    """Tell whether a folder entry is one a write makes before its first commit."""
    name = entry.name
    if name.startswith(f"{CHROMA_DIR}-") and generation_of(name[len(CHROMA_DIR) + 1 :]):
        return True  # a cluster's build writes its Chroma partitions there (cluster/build.py)
    return generation_of(name) is not None or name in {
        LOCK_FILE,
        CHROMA_DIR,
        JOURNAL,
        f".{JOURNAL}.tmp",
        f".{MANIFEST}.tmp",
    }


def remove_first_build(directory: Path) -> None:
    """Remove what a failed first build wrote (its lock stays: the caller holds it)."""
    for entry in directory.iterdir():
        if written_by_a_build(entry) and entry.name != LOCK_FILE:
            _remove(entry)


def _referenced(manifest: Manifest) -> set[str]:
    """Return the paths (relative, as POSIX) a manifest's files live under."""
    paths = [manifest.path(Path(), part) for part in ("chunks", "bm25", "graph")]
    paths += [Path(name) for name in manifest.files.values()]
    paths += [Path(p) for p in [*manifest.segments, *manifest.vectors, *manifest.ann.values()]]
    names = {p.as_posix() for p in paths}
    return names | ({manifest.chroma_dir} if manifest.chroma_dir else set())


def _remove_unreferenced(directory: Path, keep: set[str]) -> None:
    """Remove generation folders and format-1 files no kept manifest names.

    A generation folder kept for a part of it (a BM25 or vector segment that later writes still
    use) loses its other entries: its chunk table and graphs are a whole index's size.
    """
    tops = {name.split("/")[0] for name in keep}
    children = {"/".join(name.split("/")[:2]) for name in keep}
    for entry in directory.iterdir():
        generated = generation_of(entry.name) is not None
        # chroma-gNNNNNN: format 1's, a repair's or a cluster build's store; chroma: a store
        # that a build elsewhere replaced (cluster/build.py)
        legacy = entry.name in (*LEGACY_PARTS, CHROMA_DIR) or entry.name.startswith("chroma-")
        if not (generated or legacy) or entry.name == MANIFEST:
            continue
        if entry.name not in tops:
            _remove(entry)
        elif generated and entry.is_dir() and entry.name not in keep:
            for child in entry.iterdir():
                if f"{entry.name}/{child.name}" not in children:
                    _remove(child)


def _remove(entry: Path) -> None:
    if entry.is_dir():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)
