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
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.stores.manifest import MANIFEST

LOCK_FILE = ".lock"


class LockedError(IndexStateError):
    """Another process holds the index's write lock (``holder``: its PID, as it wrote it)."""

    def __init__(self, directory: Path, holder: str) -> None:
        super().__init__(
            f"{directory} is being written by PID {holder or 'unknown'}",
            "wait for that write to finish, then retry (or give --wait SECONDS)",
        )
        self.holder = holder


@contextlib.contextmanager
def write_lock(directory: Path, create: bool = False, wait: float = 0.0) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` for the duration of a write (filelock).

    The lock file is ``.lock`` inside the index folder, which only a build (``create``) makes;
    any other write to a folder that is not there, or is not an index, is refused before
    anything is written (the lock file included). The
    holder writes its PID into the lock file, so a second writer can say who holds it. With
    ``wait`` (seconds) a second writer waits that long for the first, saying so on stderr once;
    without, it is refused at once (LockedError).
    """
    from filelock import Timeout

    if create:
        directory.mkdir(parents=True, exist_ok=True)
    elif not directory.is_dir():
        raise IndexStateError(
            f"no index at {directory}",
            f"build one with `hopgraph index SOURCE --index {directory}`",
        )
    elif not (directory / MANIFEST).exists() and not any(directory.glob("g0*")):
        raise IndexStateError(  # refused before the lock file is made: none is left there
            f"{directory} is not a hopgraph index (no {MANIFEST})",
            "point --index at a directory made by `hopgraph index`",
        )
    path = directory / LOCK_FILE
    lock = _file_lock(directory)
    try:
        lock.acquire()
    except Timeout:
        if wait <= 0:
            raise LockedError(directory, _holder(path)) from None
        _await(lock, directory, wait)
    try:
        path.write_text(str(os.getpid()), encoding="utf-8")
        yield
    finally:
        lock.release()


def wait_for_writer(directory: Path, wait: float) -> None:
    """Return once no process writes ``directory`` (at most ``wait`` seconds; one line said).

    For a reader whose index another process is building: it then reads what was committed.
    """
    from filelock import Timeout

    lock = _file_lock(directory)
    try:
        lock.acquire()
    except Timeout:
        _await(lock, directory, wait)
    lock.release()


def _await(lock: Any, directory: Path, wait: float) -> None:
    """Acquire ``lock`` within ``wait`` seconds, saying once whom it waits for; else raise."""
    from filelock import Timeout

    holder = _holder(Path(lock.lock_file))
    print(f"waiting up to {wait:g} s for PID {holder or 'unknown'}, which is writing {directory} …",
          file=sys.stderr, flush=True)  # fmt: skip
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        raise IndexStateError(
            f"{directory} is still being written by PID {holder or 'unknown'} after {wait:g} s",
            "retry when that write ends, or wait longer (--wait SECONDS, HOPGRAPH_WAIT)",
        ) from None


def remove_lock_folder(directory: Path) -> None:
    """Remove ``directory`` if it holds nothing but an unheld lock (what a failed build made).

    Taken under the lock itself, so a writer that came in meanwhile keeps its folder; one that
    polls for the lock then makes the folder and the lock file again.
    """
    from filelock import Timeout

    lock = _file_lock(directory)
    try:
        lock.acquire()
    except (Timeout, OSError):
        return
    try:
        if [entry.name for entry in directory.iterdir()] == [LOCK_FILE]:
            (directory / LOCK_FILE).unlink()
            directory.rmdir()
    finally:
        lock.release()


def _file_lock(directory: Path) -> Any:
    """Return the index's lock, not yet taken: tried at once, its own in this process too."""
    from filelock import FileLock  # with asyncio: for writes, not for every reader

    return FileLock(directory / LOCK_FILE, timeout=0, is_singleton=False)


def _holder(path: Path) -> str:
    """Return the PID the lock's holder wrote ('' when it has not yet, or the file is gone)."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


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
