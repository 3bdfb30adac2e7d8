"""A file read where asked: a serving process's lookups hold none of it.

A server looks up a few lines of a large table per query (a hit's chunk, its document's
record). Memory-mapped, those tables showed in its RSS far past what was read: the kernel maps
the cached pages around each fault in as well (fault-around), so 200 GNN-Ret queries on a
300,000-chunk index brought 90 MB of the 150 MB chunk table into the process for the 4,800
lines they read, growing with the corpus and the queries. ``os.pread`` copies out the bytes
asked for: the page cache keeps the file, shared and reclaimable, and the process only what
it parsed.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path

WINDOW = 4096
"""Bytes read at a time while looking for a line's ends."""


class FileReads:
    """Reads of byte ranges of one file (its descriptor closed when this is collected)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        self._closed = weakref.finalize(self, os.close, self._fd)
        self.size = os.fstat(self._fd).st_size

    def read(self, start: int, stop: int) -> bytes:
        """Return bytes ``start`` to ``stop`` (fewer at the file's end)."""
        parts, at = [], start
        while at < stop:
            part = os.pread(self._fd, stop - at, at)
            if not part:
                break
            parts.append(part)
            at += len(part)
        return b"".join(parts)

    def line_around(self, offset: int) -> tuple[int, int]:
        """Return where the line holding byte ``offset`` starts and ends (before its newline)."""
        low = max(0, offset - WINDOW // 2)
        around = self.read(low, min(self.size, offset + WINDOW // 2))
        before, after = around.rfind(b"\n", 0, offset - low), around.find(b"\n", offset - low)
        if (before >= 0 or low == 0) and (after >= 0 or low + len(around) == self.size):
            return low + before + 1, low + after if after >= 0 else self.size  # one read
        start = offset
        while start > 0:
            low = max(0, start - WINDOW)
            found = self.read(low, start).rfind(b"\n")
            if found >= 0:
                start = low + found + 1
                break
            start = low
        end = offset
        while end < self.size:
            found = self.read(end, min(self.size, end + WINDOW)).find(b"\n")
            if found >= 0:
                return start, end + found
            end = min(self.size, end + WINDOW)
        return start, self.size

    def close(self) -> None:
        """Close the file now."""
        self._closed()
