"""A corpus's document frequencies by string hash, cut into shards of the hash's range.

A cluster's reading tasks each count the strings their rows hold (entities and words); the
corpus's frequencies are their sum, which every part's keywords are picked with
(extraction.keywords). Summed by one task, they were 550 MB at a million chunks and grew by
370 MB a million: the sum of every distinct string's counts. Cut by the hash's range into as
many shards as there are parts, each shard is summed by a task of its own and looked up a
shard at a time, so no task holds more than a shard of them.

Two strings of one hash would have their frequencies summed: with 64-bit hashes, less than
one chance in a million at five million strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .table import Vocabulary
from .title_table import string_hashes

Frequencies = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Strings by their 64-bit hashes (title_table.key_hash) and, for each, the rows holding it as
an entity and as a word: a task sums arrays, never the strings (a million entities' strings
and their vocabulary were 200 MB of a write's driver)."""


def shard_of(hashes: np.ndarray, shards: int) -> np.ndarray:
    """Return each 64-bit hash's shard: equal ranges of the hash, in order.

    In order: shard 0 holds the smallest hashes, so shards taken in turn are in hash order.
    """
    top = hashes.astype(np.uint64) >> np.uint64(32)
    return ((top * np.uint64(shards)) >> np.uint64(32)).astype(np.int64)


class SharedFrequencies:
    """Document frequencies of strings by hash (sorted), summed and saved by a task."""

    def __init__(self, hashes: np.ndarray, entity: np.ndarray, word: np.ndarray) -> None:
        self.hashes, self.entity, self.word = hashes, entity, word

    def save(self, path: Path) -> None:
        """Write the three arrays into one .npz at ``path``."""
        with path.open("wb") as file:  # np.savez would add ".npz" to a name without it
            np.savez(file, hashes=self.hashes, entity=self.entity, word=self.word)

    @classmethod
    def load(cls, path: Path) -> SharedFrequencies:
        """Read what :meth:`save` wrote."""
        with np.load(path) as saved:
            return cls(saved["hashes"], saved["entity"], saved["word"])

    def of(self, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
        """Return the frequencies of each id of ``vocab`` (0 for a string no row holds)."""
        return self.of_hashes(string_hashes(vocab.strings))

    def of_hashes(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the frequencies of the strings of hashes ``wanted`` (0 for one not held)."""
        at = np.minimum(np.searchsorted(self.hashes, wanted), max(len(self.hashes) - 1, 0))
        held = self.hashes[at] == wanted if len(self.hashes) else np.zeros(len(wanted), bool)
        entity, word = np.zeros(len(wanted), np.int64), np.zeros(len(wanted), np.int64)
        entity[held], word[held] = self.entity[at[held]], self.word[at[held]]
        return entity, word


def summed(parts: Sequence[Frequencies]) -> SharedFrequencies:
    """Sum the parts' frequencies by string hash."""
    if not parts:
        empty = np.zeros(0, np.int64)
        return SharedFrequencies(np.zeros(0, np.uint64), empty, empty)
    hashes, at = np.unique(np.concatenate([h for h, _, _ in parts]), return_inverse=True)
    entity = np.bincount(at, np.concatenate([e for _, e, _ in parts]), len(hashes))
    word = np.bincount(at, np.concatenate([w for _, _, w in parts]), len(hashes))
    return SharedFrequencies(hashes, entity.astype(np.int64), word.astype(np.int64))


def shard_file(folder: Path, name: str, shard: int) -> Path:
    """Return the file of shard ``shard`` of the frequencies saved as ``name`` in ``folder``."""
    return folder / f"{name.removesuffix('.npz')}.{shard}.npz"


def save_shards(frequencies: Frequencies, folder: Path, name: str, shards: int) -> None:
    """Save one part's frequencies in ``shards`` files, a range of hashes each."""
    hashes, entity, word = frequencies
    shard = shard_of(hashes, shards)
    for s in range(shards):
        mine = shard == s
        SharedFrequencies(hashes[mine], entity[mine], word[mine]).save(shard_file(folder, name, s))


def sum_shard(files: Sequence[Path], to: Path) -> None:
    """Sum one shard of the parts' frequencies (``files``) and save it to ``to``."""
    loaded = [SharedFrequencies.load(path) for path in files]
    summed([(f.hashes, f.entity, f.word) for f in loaded]).save(to)


def frequencies_in_shards(
    folder: Path, name: str, shards: int, vocab: Vocabulary
) -> tuple[np.ndarray, np.ndarray]:
    """Return the summed frequencies (saved as ``name``'s shards) of each id of ``vocab``.

    One shard is loaded at a time, for the strings of ``vocab`` in its range.
    """
    wanted = string_hashes(vocab.strings)
    shard = shard_of(wanted, shards)
    entity, word = np.zeros(len(wanted), np.int64), np.zeros(len(wanted), np.int64)
    for s in np.unique(shard).tolist():
        mine = np.flatnonzero(shard == s)
        found = SharedFrequencies.load(shard_file(folder, name, s))
        entity[mine], word[mine] = found.of_hashes(wanted[mine])
    return entity, word
