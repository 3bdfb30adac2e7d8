"""The embedded Chroma store sealed at commit: a later change to any of its bytes is seen.

Chroma keeps no checksum, and its files hold bytes it never reads (HNSW capacity past the
element count, SQLite free pages): a flipped byte there changes no answer, so no reading of the
store can notice it. And every open of the store rewrites some of its files (it replays its log
into the HNSW index and saves it again), so a checksum taken at commit would be stale after the
first reader. hopgraph's readers therefore never open Chroma (dense search reads the vector
table; the GEAR methods the triple-vector table), and the last step of a commit records the
size and CRC-32 of each of the store's files (Manifest.chroma_files), which `hopgraph check`
compares without opening the store. A write changes the files before it commits: while one is
under way, or after one that never committed, the check reads the store itself instead
(graph_store.index.check_chroma).
"""

from __future__ import annotations

from pathlib import Path

from .manifest import Manifest, crc32, file_problem


def store_folder(directory: Path, manifest: Manifest) -> Path | None:
    """Return the embedded store's folder, or ``None`` (a Chroma server holds the vectors)."""
    if manifest.settings.chroma_url or not manifest.chroma_dir:
        return None
    return directory / manifest.chroma_dir


def seal(directory: Path, manifest: Manifest) -> None:
    """Record the size and CRC-32 of every file of the store (none for a Chroma server).

    Call it once nothing holds the store open: a client still open may write on closing.
    """
    folder = store_folder(directory, manifest)
    files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder else []
    manifest.chroma_files = {
        p.relative_to(directory).as_posix(): (p.stat().st_size, crc32(p)) for p in files
    }


def broken(directory: Path, manifest: Manifest) -> list[str]:
    """Return what differs from the seal: each file missing, resized or changed."""
    out = []
    for name, (size, checksum) in manifest.chroma_files.items():
        path = directory / name
        problem = file_problem(path, directory, size)
        if problem is not None:
            out.append(f"{path} {problem}")
        elif crc32(path, size) != checksum:
            out.append(f"{path} is damaged: its CRC-32 is not the one recorded when it was written")
    return out
