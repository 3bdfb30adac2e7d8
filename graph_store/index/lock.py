"""The write lock of an index, and the undoing of a format-1 swap cut short.

A writer holds an exclusive lock (``.lock`` inside the index folder) for its whole write
(hopgraph.graph_store.index.generations makes the write itself atomic); writes run with the cyclic
garbage collector paused. Indexes of format 1 were rewritten
whole and swapped in with two renames; if a process died between them, the next open puts the
previous index back.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path

from hopgraph.core.errors import IndexStateError

LOCK_FILE = ".lock"


@contextlib.contextmanager
def write_lock(directory: Path, create: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` for the duration of a write (filelock).

    The lock file is ``.lock`` inside the index folder, which only a build (``create``) makes;
    any other write to a folder that is not there is refused before anything is written. The
    holder writes its PID into the lock file, so a second writer can say who holds it.
    """
    from filelock import FileLock, Timeout  # with asyncio: for writes, not for every reader

    if create:
        directory.mkdir(parents=True, exist_ok=True)
    elif not directory.is_dir():
        raise IndexStateError(
            f"no index at {directory}",
            f"build one with `hopgraph index SOURCE --index {directory}`",
        )
    path = directory / LOCK_FILE
    lock = FileLock(path, timeout=0)  # never wait: a second writer is told at once
    try:
        lock.acquire()
    except Timeout as err:
        holder = path.read_text(encoding="utf-8").strip() if path.exists() else ""
        raise IndexStateError(
            f"{directory} is being written by PID {holder or 'unknown'}",
            "wait for that write to finish, then retry",
        ) from err
    try:
        path.write_text(str(os.getpid()), encoding="utf-8")
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a write (restored after, as it was).

    A write at a million chunks holds millions of objects and makes millions more (chunks,
    triples, records), none of them in reference cycles; the collector's full passes over them
    cost 6-10 s of an 80 s write and free nothing. Reference counting still frees everything.
    Used as a decorator of a whole write, so its objects are freed before the collector runs
    again (re-enabled inside the write, its first pass would walk them all).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def recover(directory: Path) -> None:
    """Restore the previous index if a format-1 swap was interrupted between its two renames."""
    if directory.exists():
        return
    backups = sorted(directory.parent.glob(f".{directory.name}.old-*"), key=os.path.getmtime)
    if backups:
        os.rename(backups[-1], directory)
