"""A file read where asked: a serving process's lookups hold none of it.

A server looks up a few lines of a large table per query (a hit's chunk, its document's
record). Memory-mapped, those tables showed in its RSS far past what was read: the kernel maps
the cached pages around each fault in as well (fault-around), so 200 GNN-Ret queries on a
300,000-chunk index brought 90 MB of the 150 MB chunk table into the process for the 4,800
lines they read, growing with the corpus and the queries. ``os.pread`` copies out the bytes
asked for: the page cache keeps the file, shared and reclaimable, and the process only what
it parsed.

Each read is also verified (issue 73): an index's manifest records a CRC-32 for every 1 MiB
block of its files, and a reader checks a block the first time this process uses its bytes
(:class:`BlockSums`), so damage that keeps a file's size is the error `hopgraph check` gives,
never an answer.

The arrays of an uncompressed ``.npz`` (what ``np.savez`` writes) can be mapped where they lie
(:func:`mapped_members`): ``np.load`` reads a member whole even with ``mmap_mode``, but a stored
member's bytes lie contiguous in the file, so a reader holds the pages it reads (a task, its rows
of every chunk's lists; a server, the rows its queries touch), and lets go of them
(:func:`release_pages`).
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from .errors import IndexStateError

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
        """Return bytes ``start`` to ``stop`` (fewer at the file's end), verified."""
        verify_range(self.path, start, stop)
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


BLOCK = 1 << 20
"""The bytes one recorded CRC-32 covers (Manifest.blocks)."""
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
"""Open a file, not what a link in its place points to (POSIX; file_problem names links first)."""


def block_sums(path: Path, size: int | None, flags: int = 0) -> tuple[str, str]:
    """Return a file's CRC-32 and its blocks' (8 hex digits each), reading it once.

    Read no further than ``size`` (the size the manifest records; None: to the end); ``flags``
    are added to the open's (O_NOFOLLOW: a link in the file's place is not followed).
    """
    whole, blocks, left = 0, [], -1 if size is None else size
    with os.fdopen(os.open(path, os.O_RDONLY | flags), "rb") as handle:
        while left and (block := handle.read(BLOCK if left < 0 else min(BLOCK, left))):
            whole = zlib.crc32(block, whole)
            blocks.append(f"{zlib.crc32(block):08x}")
            left = left - len(block) if left > 0 else left
    return f"{whole:08x}", "".join(blocks)


class BlockSums:
    """What one file's blocks must hash to, and which of them this process has verified.

    ``sums``: 8 hex digits a block of ``block`` bytes; ``block`` 0: one CRC-32 of the whole
    file (a file of one block, or one an index recorded before blocks were), verified whole on
    its first read. ``hint``: how to mend the file, worked out when damage is found.
    """

    def __init__(
        self, path: str, size: int, sums: str, hint: Callable[[], str], block: int = 0
    ) -> None:
        self.path, self.size, self.sums, self.hint = path, size, sums, hint
        self.block = block or max(size, 1)
        count = -(-size // self.block)
        if len(sums) != 8 * max(count, 1):
            raise IndexStateError(
                f"{path}: the manifest records {len(sums) // 8} block checksums for "
                f"{count} blocks of {self.block:,} bytes",
                hint(),
            )
        self.verified = np.zeros(max(count, 1), dtype=bool)
        self.whole = False
        self.identity = _identity(path)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        """Give what a task in another process takes: what must hold, not what was verified."""
        return {k: getattr(self, k) for k in ("path", "size", "sums", "hint", "block")}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(**state)  # type: ignore[misc]  # verified anew where it is read

    def verify(self, start: int = 0, stop: int | None = None) -> None:
        """Verify the blocks that bytes ``start`` to ``stop`` lie in (not yet verified here)."""
        if self.whole:
            return
        stop = self.size if stop is None else min(stop, self.size)
        if stop <= start:
            return
        first, last = start // self.block, (stop - 1) // self.block
        if self.verified[first : last + 1].all():
            return
        self.verify_blocks(np.arange(first, last + 1))

    def verify_blocks(self, blocks: np.ndarray) -> None:
        """Verify the blocks numbered ``blocks`` (ascending) that are not verified yet."""
        todo = blocks[~self.verified[blocks]]
        if not len(todo):
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | NOFOLLOW)  # a link put in its place: refused
        except OSError as err:
            raise IndexStateError(f"{self.path} cannot be read: {err}", self.hint()) from err
        with self._lock, os.fdopen(fd, "rb") as handle:
            for number in todo.tolist():
                at = number * self.block
                data = os.pread(handle.fileno(), min(self.block, self.size - at), at)
                if f"{zlib.crc32(data):08x}" != self.sums[number * 8 : number * 8 + 8]:
                    raise IndexStateError(
                        f"{self.path} is damaged: its CRC-32 is not the one recorded when it was "
                        f"written (bytes {at:,} to {at + len(data):,})",
                        self.hint(),
                    )
                self.verified[number] = True
            self.whole = bool(self.verified.all())


def _identity(path: str) -> tuple[int, ...] | None:
    """Return what tells this file from another put at its path (a copy, a file swapped in)."""
    try:
        found = os.stat(path, follow_symlinks=False)
    except OSError:
        return None  # missing or unreadable: its first read says so
    return found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size


_SUMS: dict[str, BlockSums] = {}
_SUMS_LOCK = threading.Lock()


def _unlocked_in_child() -> None:
    """Give a forked child locks of its own: a server's verifying thread may hold one at fork."""
    global _SUMS_LOCK
    _SUMS_LOCK = threading.Lock()
    for sums in _SUMS.values():
        sums._lock = threading.Lock()


os.register_at_fork(after_in_child=_unlocked_in_child)


def expect(sums: list[BlockSums], under: Path | None = None) -> None:
    """Record what the files of an opened generation must hash to (this process's readers).

    A file's verified blocks stay verified while its recorded sums and the file are the same
    (an index's files are never changed once written): another open of the same generation
    verifies nothing again, but a file put in its place (a copy, another of the same size) is
    verified anew.
    ``under``: the index folder; what is recorded of its files that are gone (an older
    generation's, purged) is let go, so a server that follows writes holds no more of it.
    """
    with _SUMS_LOCK:
        if under is not None:
            prefix = os.path.join(os.path.abspath(under), "")
            gone = [k for k in _SUMS if k.startswith(prefix) and not os.path.exists(k)]
            for key in gone:
                del _SUMS[key]
        for found in sums:
            key = os.path.abspath(found.path)
            known = _SUMS.get(key)
            same = (known.sums, known.size, known.identity) if known is not None else None
            if same != (found.sums, found.size, found.identity):
                _SUMS[key] = found


def registered() -> list[BlockSums]:
    """Return what this process expects of the files it reads (a write's, for its tasks)."""
    with _SUMS_LOCK:
        return list(_SUMS.values())


def expected(path: str | Path) -> BlockSums | None:
    """Return what ``path``'s blocks must hash to; None for a file no opened index records."""
    return _SUMS.get(os.path.abspath(path))


def verify_range(path: str | Path, start: int = 0, stop: int | None = None) -> None:
    """Verify bytes ``start`` to ``stop`` of an index's file before they are used."""
    sums = expected(path)
    if sums is not None:
        sums.verify(start, stop)


def verify_file(path: str | Path) -> Path:
    """Verify a whole file an index recorded (a reader loads it whole); return its path."""
    verify_range(path)
    return Path(path)


def verify_whole(paths: Iterable[str | Path], stop: threading.Event | None = None) -> None:
    """Verify every block not yet verified of these files (a server's, of what it opened).

    A few blocks at a time, so that readers' checks of the same files interleave. ``stop``:
    set to end early (the generation was closed). Damage raises IndexStateError.
    """
    for path in paths:
        sums = expected(path)
        if sums is None:
            continue
        for first in range(0, len(sums.verified), 16):
            if sums.whole or (stop is not None and stop.is_set()):
                break
            sums.verify_blocks(np.arange(first, min(first + 16, len(sums.verified))))


def verify_rows(array: np.ndarray, rows: np.ndarray | None = None) -> None:
    """Verify the bytes of ``array[rows]`` (every row: None) where it maps an index's file.

    ``array``: a memory-mapped table (np.load with mmap_mode, or a view of one); an array in
    memory was verified when its file was read.
    """
    filename = getattr(array, "filename", None)
    sums = expected(filename) if filename else None
    if sums is None or sums.whole or not len(array):
        return
    first = file_offset(array)
    if first is None:
        sums.verify()
        return
    width = array.strides[0] if array.ndim else array.itemsize
    if rows is None:
        sums.verify(first, first + width * len(array))
        return
    rows = np.asarray(rows, dtype=np.int64)
    starts = first + rows * width
    blocks = np.concatenate([starts // sums.block, (starts + width - 1) // sums.block])
    sums.verify_blocks(np.unique(blocks))


def mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """Return the memory map an array is a view of, if any (a table loaded with mmap_mode)."""
    base: object = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    return base


def release_pages(*arrays: np.ndarray) -> None:
    """Let go of the mapped pages of these arrays (written back first; the page cache keeps them).

    A mapped page read or written counts in the process's RSS until the mapping goes: a task
    that reads or writes a file of the whole corpus a block at a time lets go after each.
    Arrays that map no file are left as they are.
    """
    for array in arrays:
        mapping = mapping_of(array)
        if mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
            mapping.flush()
            mapping.madvise(mmap.MADV_DONTNEED)


def file_offset(array: np.ndarray) -> int | None:
    """Return where ``array``'s first byte lies in the file it maps (None: not known).

    The map starts at the memmap's ``offset`` rounded down to the allocation granularity, and a
    view of a slice keeps its parent's map and ``offset``.
    """
    mapping, offset = mapping_of(array), getattr(array, "offset", None)
    if mapping is None or offset is None:
        return None
    mapped_from = offset - offset % mmap.ALLOCATIONGRANULARITY
    return int(array.ctypes.data - np.frombuffer(mapping, np.uint8).ctypes.data + mapped_from)


def mapped_members(path: Path) -> dict[str, np.ndarray] | None:
    """Map every member of the archive ``path`` by name (no ``.npy``); ``None`` if compressed.

    Raises OSError, ValueError, KeyError or zipfile.BadZipFile on a file that is not one.
    """
    with zipfile.ZipFile(path) as archive:
        members = {i.filename.removesuffix(".npy"): i for i in archive.infolist()}
    if any(i.compress_type != zipfile.ZIP_STORED for i in members.values()):
        return None
    return {name: mapped_member(path, info) for name, info in members.items()}


def saved_text(value: np.ndarray) -> str:
    """Return a string scalar saved in an archive (scipy saves a format as bytes) as str."""
    item = np.asarray(value).item()
    return item.decode() if isinstance(item, bytes) else str(item)


def mapped_member(path: Path, info: zipfile.ZipInfo) -> np.ndarray:
    """Map one stored .npy member of a zip file (its bytes lie contiguous in the file)."""
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        local = handle.read(30)  # the local file header: names and extra field follow it
        if local[:4] != b"PK\x03\x04":
            raise ValueError(f"no zip entry at {info.header_offset}")
        start = info.header_offset + 30 + int.from_bytes(local[26:28], "little")
        start += int.from_bytes(local[28:30], "little")
        handle.seek(start)
        version = np.lib.format.read_magic(handle)
        read_header = {
            (1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0,
        }[version]
        shape, fortran, dtype = read_header(handle)
        offset = handle.tell()
    if dtype.hasobject:
        raise ValueError("an object array")
    if not shape or 0 in shape:  # np.memmap cannot map zero bytes; a scalar is read whole
        with np.load(path) as data:
            return data[info.filename.removesuffix(".npy")]
    order = "F" if fortran else "C"
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
