"""The corpus's title index on disk, memory-mapped: what a question is linked against.

A graph build saves the title index its readings were made against (every alias key and the
title entity that claims it, and the words the corpus writes in lower case) as two tables of
strings sorted by a 64-bit hash of their key. An opened index links questions against them
where they lie (``Index.entity_linker``: the hashes memory-mapped, an entry read when its hash
matches), so a serving process neither holds the corpus's aliases as Python objects (about 700
bytes a chunk) nor reads every chunk's text to build them at its first question.

A table is three files: ``NAME.hashes.npy`` (uint64, sorted), ``NAME.starts.npy`` (int64, where
each entry starts in the blob, one more than the entries) and ``NAME.bin`` (the entries,
``key NUL value`` each, in hash order). A lookup is a binary search of the hashes and a compare
of the key's bytes: a hash collision costs one more compare, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from hopgraph.core.file_reads import FileReads, release_pages, verify_file

from .offline import TitleIndex

TITLES = "titles"
"""The tables' file stem in a graph folder: ``titles-aliases.*``, ``titles-common.*`` and
``titles.json`` (the longest alias's word count)."""


def key_hash(key: str) -> int:
    """Return a key's 64-bit hash (the same in every process, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")


def string_hashes(strings: Sequence[str]) -> np.ndarray:
    """Return each string's :func:`key_hash`, as an array."""
    return np.fromiter((key_hash(s) for s in strings), dtype=np.uint64, count=len(strings))


class StringTable(Mapping[str, str]):
    """A table of ``key → value`` strings written by :func:`write_table`, memory-mapped."""

    def __init__(self, stem: Path) -> None:
        # a plain array over the mapped file: numpy's memmap wraps every scalar it gives
        self.hashes = np.load(verify_file(f"{stem}.hashes.npy"), mmap_mode="r").view(np.ndarray)
        self.count = len(self.hashes)
        self.starts = np.load(verify_file(f"{stem}.starts.npy"), mmap_mode="r")
        self.blob = FileReads(Path(f"{stem}.bin"))
        size = self.blob.size
        if len(self.starts) != len(self.hashes) + 1 or int(self.starts[-1]) != size:
            raise ValueError(f"{stem}.* do not agree: the table was not written whole")

    def _entry(self, i: int) -> tuple[bytes, bytes]:
        key, _, value = self.blob.read(int(self.starts[i]), int(self.starts[i + 1])).partition(
            b"\0"
        )
        return key, value

    def __getitem__(self, key: str) -> str:
        return self.found(key, key_hash(key))

    def found(self, key: str, h: int) -> str:
        """Return the value of ``key``, of hash ``h``; raise KeyError when it is not held."""
        i = int(self.hashes.searchsorted(np.uint64(h)))
        wanted = None
        while i < self.count and int(self.hashes[i]) == h:  # most keys asked are not held
            wanted = wanted or key.encode("utf-8")
            found, value = self._entry(i)
            if found == wanted:
                return value.decode("utf-8")
            i += 1
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (self._entry(i)[0].decode("utf-8") for i in range(len(self.hashes)))

    def __len__(self) -> int:
        return len(self.hashes)


FILTER_BLOCK = 1 << 20
"""Entries of a saved table a filter is made of at a time."""


class LookedUp(Mapping[str, str]):
    """A saved table as a reading asks it: each key looked up once, then kept (found or not).

    A reading asks hundreds of keys a chunk, most of them again and again (the same names); a
    batch's lookups are a few tens of thousands, where the whole table as a dictionary is
    about 800 MB a million titles. Most keys asked are not held: a filter of one bit an
    entry's hash (a byte an entry) turns 97 % of those away before the table is searched.
    """

    def __init__(self, table: StringTable) -> None:
        self.table = table
        self.asked: dict[str, str | None] = {}
        width = max(8, int(table.count - 1).bit_length() + 3)  # 8 bits an entry at least
        self.mask = (1 << width) - 1
        bits = np.zeros(1 << (width - 3), dtype=np.uint8)
        # by blocks of entries: the temporaries of every entry at once were 32 bytes each
        for at in range(0, table.count, FILTER_BLOCK):
            spots = table.hashes[at : at + FILTER_BLOCK] & np.uint64(self.mask)
            np.bitwise_or.at(bits, (spots >> np.uint64(3)).astype(np.int64),
                             (np.uint8(1) << (spots & np.uint64(7)).astype(np.uint8)))  # fmt: skip
        release_pages(table.hashes)  # its mapped pages read: 8 bytes an entry
        self.bits = bits.tobytes()

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        """Return ``key``'s value, looked up in the table the first time it is asked."""
        try:
            value = self.asked[key]
        except KeyError:
            value = self.asked[key] = self._looked_up(key)
        return default if value is None else value

    def _looked_up(self, key: str) -> str | None:
        h = key_hash(key)
        spot = h & self.mask
        if not self.bits[spot >> 3] >> (spot & 7) & 1:
            return None  # no entry has a hash there
        try:
            return self.table.found(key, h)
        except KeyError:
            return None

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)


def write_table(stem: Path, keys: Iterable[str], value: Callable[[str], str]) -> None:
    """Write the table of ``keys`` (distinct, no NUL in a key) and each one's ``value``.

    An entry is encoded at a time, in hash order, straight to the blob: a sorted list of every
    encoded entry took 500 MB of a write's driver at a million titles.
    """
    keys = list(keys)  # the strings held already: a list of references
    hashes = np.fromiter((key_hash(k) for k in keys), dtype=np.uint64, count=len(keys))
    order = np.argsort(hashes, kind="stable")
    starts = np.zeros(len(keys) + 1, dtype=np.int64)
    with open(f"{stem}.bin", "wb", buffering=1 << 20) as blob:
        for n in range(len(order)):
            key = keys[int(order[n])]
            entry = key.encode("utf-8") + b"\0" + value(key).encode("utf-8")
            blob.write(entry)
            starts[n + 1] = starts[n] + len(entry)
    np.save(f"{stem}.hashes.npy", hashes[order])
    np.save(f"{stem}.starts.npy", starts)


def join_tables(stems: Sequence[Path], stem: Path) -> None:
    """Write the tables ``stems`` as one table ``stem``, a table at a time.

    Each table holds a range of the hash, in order (frequency_shards.shard_of): their entries
    one after the other are in hash order. The arrays are written into mapped files, the
    blobs copied: no table is held whole.
    """
    sizes = [len(np.load(f"{part}.hashes.npy", mmap_mode="r")) for part in stems]
    total = sum(sizes)
    hashes = np.lib.format.open_memmap(f"{stem}.hashes.npy", "w+", np.uint64, (total,))
    starts = np.lib.format.open_memmap(f"{stem}.starts.npy", "w+", np.int64, (total + 1,))
    starts[0], at, offset = 0, 0, 0
    with open(f"{stem}.bin", "wb") as blob:
        for part, size in zip(stems, sizes, strict=True):
            hashes[at : at + size] = np.load(f"{part}.hashes.npy", mmap_mode="r")
            starts[at + 1 : at + size + 1] = np.load(f"{part}.starts.npy", mmap_mode="r")[1:]
            starts[at + 1 : at + size + 1] += offset
            with open(f"{part}.bin", "rb") as piece:
                shutil.copyfileobj(piece, blob, 1 << 20)
                offset += piece.tell()
            at += size
    hashes.flush()
    starts.flush()


def remove_table(stem: Path) -> None:
    """Remove the files of the table ``stem`` (those there)."""
    for suffix in (".hashes.npy", ".starts.npy", ".bin"):
        Path(f"{stem}{suffix}").unlink(missing_ok=True)


def save_longest(directory: Path, longest: int) -> None:
    """Write the most words of a key in the index saved in ``directory``."""
    (directory / f"{TITLES}.json").write_text(json.dumps({"longest": longest}))


def save_titles(directory: Path, index: TitleIndex) -> None:
    """Write ``index`` (its claims and common words) into the graph folder ``directory``."""
    aliases = index.aliases
    write_table(directory / f"{TITLES}-aliases", aliases, aliases.__getitem__)
    write_table(directory / f"{TITLES}-common", index.common_words, lambda _: "")
    save_longest(directory, index.longest)


class SavedTitles:
    """A saved title index a reading task looks keys up in, a batch of chunks at a time.

    The whole index read into a dictionary was 800 MB a million titles in every reading task;
    a reading reads against the keys it looks up, each looked up in the saved tables once
    (:class:`LookedUp`), and so exactly as against the whole. What was looked up is kept for
    the next batches (names recur) up to :data:`KEPT` keys, then let go: a task holds a
    bounded part of the index whatever the corpus.
    """

    def __init__(self, directory: Path) -> None:
        self.longest = _longest(directory)
        self.aliases = StringTable(directory / f"{TITLES}-aliases")
        self.common = StringTable(directory / f"{TITLES}-common")
        self.looked_up = LookedUp(self.aliases), LookedUp(self.common)
        self.index = TitleIndex.claimed(*self.looked_up, self.longest)

    def batch(self) -> TitleIndex:
        """Return the index a batch of chunks reads against: what was looked up, kept."""
        if sum(len(table.asked) for table in self.looked_up) > KEPT:
            for table in self.looked_up:
                table.asked.clear()  # the filters stay: they are the tables'
        return self.index


KEPT = 1 << 18
"""Keys a reading task keeps looked up (about 40 MB of strings) before it lets them go."""


def _longest(directory: Path) -> int:
    """Return the most words of a key in the index saved in ``directory``."""
    table = verify_file(directory / f"{TITLES}.json")
    return int(json.loads(table.read_text(encoding="utf-8"))["longest"])


def load_titles(directory: Path) -> TitleIndex | None:
    """Open the title index saved in ``directory``, memory-mapped; None when none was saved."""
    facts = directory / f"{TITLES}.json"
    if not facts.is_file():
        return None  # graphs built before the table, or by the LLM extractor
    longest = _longest(directory)
    aliases = StringTable(directory / f"{TITLES}-aliases")
    common = StringTable(directory / f"{TITLES}-common")
    return TitleIndex.claimed(aliases, common.keys(), longest)
