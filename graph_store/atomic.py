"""The write lock of an index, and the undoing of a format-1 swap cut short.

A writer holds an exclusive lock beside the index for its whole write (graph_store.generations
makes the write itself atomic). Indexes of format 1 were rewritten whole and swapped in with two
renames; if a process died between them, the next open puts the previous index back.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from hopgraph.core.errors import IndexStateError


def _sibling(directory: Path, kind: str, tag: str = "") -> Path:
    return directory.parent / f".{directory.name}.{kind}{tag}"


@contextlib.contextmanager
def write_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` for the duration of a write."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    # Opened without truncating: the holder's PID must survive a second writer's attempt.
    with open(_sibling(directory, "lock"), "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise IndexStateError(
                f"{directory} is being written by PID {holder}",
                "wait for that write to finish, then retry",
            ) from err
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield


def recover(directory: Path) -> None:
    """Restore the previous index if a format-1 swap was interrupted between its two renames."""
    if directory.exists():
        return
    backups = sorted(directory.parent.glob(f".{directory.name}.old-*"), key=os.path.getmtime)
    if backups:
        os.rename(backups[-1], directory)
