"""Build into a staging directory and swap it in, so a failed build never damages the last index.

A writer holds an exclusive lock beside the index. The swap is two renames on one file system;
if a process dies between them, the next open puts the previous index back.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from hopgraph.errors import IndexStateError


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


@contextlib.contextmanager
def staged(directory: Path, copy_existing: bool) -> Iterator[Path]:
    """Yield a staging directory; on a clean exit it replaces ``directory``, else it is removed."""
    recover(directory)
    for stale in directory.parent.glob(f".{directory.name}.staging-*"):
        shutil.rmtree(stale, ignore_errors=True)  # left by a process that was killed mid-build
    staging = _sibling(directory, "staging-", uuid.uuid4().hex[:8])
    if copy_existing:
        shutil.copytree(directory, staging)
    else:
        staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    swap(staging, directory)


def swap(staging: Path, directory: Path) -> None:
    """Move ``staging`` to ``directory``, keeping the old one until the new one is in place."""
    backup = _sibling(directory, "old-", uuid.uuid4().hex[:8])
    if directory.exists():
        os.rename(directory, backup)
    os.rename(staging, directory)
    shutil.rmtree(backup, ignore_errors=True)


def recover(directory: Path) -> None:
    """Restore the previous index if a swap was interrupted between its two renames."""
    if directory.exists():
        return
    backups = sorted(directory.parent.glob(f".{directory.name}.old-*"), key=os.path.getmtime)
    if backups:
        os.rename(backups[-1], directory)
