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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np

from hopgraph.core.file_reads import FileReads

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
        self.hashes = np.load(f"{stem}.hashes.npy", mmap_mode="r")
        self.starts = np.load(f"{stem}.starts.npy", mmap_mode="r")
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
        h = np.uint64(key_hash(key))
        wanted = key.encode("utf-8")
        i = int(np.searchsorted(self.hashes, h))
        while i < len(self.hashes) and self.hashes[i] == h:
            found, value = self._entry(i)
            if found == wanted:
                return value.decode("utf-8")
            i += 1
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (self._entry(i)[0].decode("utf-8") for i in range(len(self.hashes)))

    def __len__(self) -> int:
        return len(self.hashes)


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


def save_titles(directory: Path, index: TitleIndex) -> None:
    """Write ``index`` (its claims and common words) into the graph folder ``directory``."""
    aliases = index.aliases
    write_table(directory / f"{TITLES}-aliases", aliases, aliases.__getitem__)
    write_table(directory / f"{TITLES}-common", index.common_words, lambda _: "")
    (directory / f"{TITLES}.json").write_text(json.dumps({"longest": index.longest}))


def read_titles(directory: Path) -> TitleIndex:
    """Read the title index saved in ``directory`` into memory (a reading task's lookups).

    :func:`load_titles` maps it for a server's few lookups a question; a reading makes
    hundreds a chunk, each a dictionary's.
    """
    longest = int(json.loads((directory / f"{TITLES}.json").read_text(encoding="utf-8"))["longest"])
    aliases = dict(_entries(directory / f"{TITLES}-aliases"))
    common = frozenset(key for key, _ in _entries(directory / f"{TITLES}-common"))
    return TitleIndex.claimed(aliases, common, longest)


def _entries(stem: Path) -> Iterator[tuple[str, str]]:
    """Yield a table's (key, value) pairs, its blob read whole."""
    starts = np.load(f"{stem}.starts.npy").tolist()
    blob = Path(f"{stem}.bin").read_bytes()
    for at, end in pairwise(starts):
        key, _, value = blob[at:end].partition(b"\0")
        yield key.decode("utf-8"), value.decode("utf-8")


def load_titles(directory: Path) -> TitleIndex | None:
    """Open the title index saved in ``directory``, memory-mapped; None when none was saved."""
    facts = directory / f"{TITLES}.json"
    if not facts.is_file():
        return None  # graphs built before the table, or by the LLM extractor
    longest = int(json.loads(facts.read_text(encoding="utf-8"))["longest"])
    aliases = StringTable(directory / f"{TITLES}-aliases")
    common = StringTable(directory / f"{TITLES}-common")
    return TitleIndex.claimed(aliases, common.keys(), longest)
