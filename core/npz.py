"""Arrays of an uncompressed ``.npz`` (what ``np.savez`` writes), memory-mapped where they lie.

``np.load`` reads a member of an archive whole, even with ``mmap_mode``; but a stored member's
bytes lie contiguous in the file, so it can be mapped as a ``.npy`` is. A reader then holds the
pages it reads (a task, its rows of every chunk's lists; a server, the rows its queries touch).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np


def mapped_members(path: Path) -> dict[str, np.ndarray] | None:
    """Map every member of the archive ``path`` by name (no ``.npy``); ``None`` if compressed.

    Raises OSError, ValueError, KeyError or zipfile.BadZipFile on a file that is not one.
    """
    with zipfile.ZipFile(path) as archive:
        members = {i.filename.removesuffix(".npy"): i for i in archive.infolist()}
    if any(i.compress_type != zipfile.ZIP_STORED for i in members.values()):
        return None
    return {name: mapped_member(path, info) for name, info in members.items()}


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
