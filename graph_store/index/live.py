"""An index that follows writes, for long-running readers (servers, chat, the Python API).

An opened :class:`Index` answers from the generation it opened, whatever is written after. A
reader that runs for days should answer from the newest committed generation: between requests,
:meth:`LiveIndex.current` looks at the manifest (one ``stat``, the file is read only when it
changed) and, when a newer generation was committed, opens it and closes the old one. It never
switches during a request: a caller takes ``current()`` once and uses that index to the end.
Concurrent requests (a server's worker threads) take it with :meth:`LiveIndex.reading`, so the
old generation is closed only when the last request reading it is done.

Each generation it opens is verified whole, in a thread of its own (:class:`Verification`), so
damage is found when a server opens it, not only when a query reaches the damaged bytes; until
then a reader verifies each block before it first uses it, as every reader does.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import verify_whole
from hopgraph.graph_store.stores.manifest import MANIFEST, read_manifest

from .reader import Index

log = logging.getLogger(__name__)


class Verification:
    """Every file of an opened generation verified against its recorded block checksums.

    The check runs in a daemon thread (a server's start-up and a request that meets a new
    generation do not wait for it); ``damage`` holds what it found, for the server to refuse
    every request with, as `check` names it, until a repair commits a sound generation.
    """

    def __init__(self, index: Index) -> None:
        self.damage: IndexStateError | None = None
        self._stop = threading.Event()
        paths = [index.directory / name for name in index.manifest.sizes]
        name = f"verify-g{index.manifest.generation}"
        self.thread = threading.Thread(target=self._run, args=(paths,), name=name, daemon=True)
        self.thread.start()

    def _run(self, paths: list[Path]) -> None:
        try:
            verify_whole(paths, self._stop)
        except IndexStateError as err:
            if self._stop.is_set():
                return  # closed, or moved on: its files may be gone (a purge), not damaged
            self.damage = err
            log.error("%s (fix: %s)", err.message, err.hint)

    def stop(self) -> None:
        """End the check early: its generation is no longer served."""
        self._stop.set()


class LiveIndex:
    """The newest committed generation of an index directory, reopened between requests."""

    def __init__(
        self,
        directory: str | Path,
        model: str | None = None,
        opener: Callable[[Path, str | None], Index] = Index.open,
    ) -> None:
        """Open ``directory`` (checked against ``model`` when given, as Index.open does).

        ``opener``: how a generation is opened (a cluster's router deploys its shards).
        """
        self.directory, self.model, self.opener = Path(directory), model, opener
        self._lock = threading.Lock()
        read_manifest(self.directory)  # a missing index or manifest: the error every command gives
        self._stamp = self._manifest_stamp()
        self._index = opener(self.directory, model)
        self.verification = Verification(self._index)
        self._readers: dict[int, int] = {}  # id(index) → requests reading it now
        self.reopened = 0
        """How many newer generations have been opened since."""

    def current(self) -> Index:
        """Return the index of the newest committed generation (reopened if a write committed).

        Raises the damage its verification found (IndexStateError, with `check`'s fix).
        """
        with self._lock:
            stamp = self._manifest_stamp()
            if stamp != self._stamp:
                self._stamp = stamp
                if read_manifest(self.directory).generation != self._index.generation:
                    fresh = self.opener(self.directory, self.model)
                    old, self._index = self._index, fresh
                    self.verification.stop()
                    self.verification = Verification(fresh)
                    if not self._readers.get(id(old)):
                        old.close()  # else the last request reading it closes it
                    self.reopened += 1
            index, damage = self._index, self.verification.damage
        if damage is not None:  # a new error each time: one raised again keeps every traceback
            raise IndexStateError(damage.message, damage.hint)
        return index

    @contextmanager
    def reading(self) -> Iterator[Index]:
        """Yield the newest generation for one request, kept open until the request ends."""
        index = self.current()
        with self._lock:
            self._readers[id(index)] = self._readers.get(id(index), 0) + 1
        try:
            yield index
        finally:
            with self._lock:
                left = self._readers.pop(id(index)) - 1
                if left:
                    self._readers[id(index)] = left
                elif index is not self._index:
                    index.close()

    def _manifest_stamp(self) -> tuple[int, int, int]:
        """Identify the manifest file: a commit replaces it (rename), changing these."""
        found = os.stat(self.directory / MANIFEST)
        return found.st_ino, found.st_mtime_ns, found.st_size

    def close(self) -> None:
        """Close the open generation."""
        self.verification.stop()
        self._index.close()

    def __enter__(self) -> LiveIndex:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
