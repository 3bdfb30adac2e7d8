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
from collections.abc import Iterable, Iterator, Mapping
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


def write_table(stem: Path, pairs: Iterable[tuple[str, str]]) -> None:
    """Write ``pairs`` (keys distinct, no NUL in a key) as the table at ``stem``."""
    entries = sorted((key_hash(k), k.encode("utf-8") + b"\0" + v.encode("utf-8")) for k, v in pairs)
    sizes = np.fromiter((len(e) for _, e in entries), dtype=np.int64, count=len(entries))
    np.save(f"{stem}.hashes.npy", np.fromiter((h for h, _ in entries), np.uint64, len(entries)))
    np.save(f"{stem}.starts.npy", np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    Path(f"{stem}.bin").write_bytes(b"".join(e for _, e in entries))


def save_titles(directory: Path, index: TitleIndex) -> None:
    """Write ``index`` (its claims and common words) into the graph folder ``directory``."""
    write_table(directory / f"{TITLES}-aliases", index.aliases.items())
    write_table(directory / f"{TITLES}-common", ((w, "") for w in index.common_words))
    (directory / f"{TITLES}.json").write_text(json.dumps({"longest": index.longest}))


def load_titles(directory: Path) -> TitleIndex | None:
    """Open the title index saved in ``directory``, memory-mapped; None when none was saved."""
    facts = directory / f"{TITLES}.json"
    if not facts.is_file():
        return None  # graphs built before the table, or by the LLM extractor
    longest = int(json.loads(facts.read_text(encoding="utf-8"))["longest"])
    aliases = StringTable(directory / f"{TITLES}-aliases")
    common = StringTable(directory / f"{TITLES}-common")
    return TitleIndex.claimed(aliases, common.keys(), longest)
