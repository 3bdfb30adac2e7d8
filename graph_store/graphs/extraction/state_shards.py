"""The offline extractor's counts and claims in shards by the hash of their strings (a cluster's).

Between writes the extractor keeps every lower-case word's count, every title's count and alias
keys, and which title claims each key (extraction.readings.CorpusReadings): 790 MB at a million
titles in the one task that summed them, a gigabyte in the one that shifted them for a write,
both growing with the corpus. A cluster keeps them cut by the hash of the string they are about
(title_table.key_hash, in ranges: frequency_shards.shard_of). A shard holds the lower-case words
of its range and the alias keys of its range, each key with the titles having it and their
chunk counts. Every question a reading or a write asks of the state is about one key, and a
one-word key falls in the same shard as the word it is checked against, so a task a shard
answers it:

- a first reading: tasks count their rows into a file a shard (:func:`split_counts`), a task a
  shard sums them (:func:`merged`) and writes its part of the title index (:func:`save_shard`),
  a task joins the parts (title_table.join_tables);
- a write: the driver counts its change into shards (:func:`change_shards`: as small as the
  change), a task a shard applies it (:meth:`StateShard.shift`) and sends back the keys whose
  links may have changed.

The claims, the common words and the keys sent back equal one process's
(tests/unit/graph_store/cluster/test_cluster_readings.py, test_reading_update.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from hopgraph.graph_store.documents.schema import Chunk

from .frequency_shards import shard_of
from .offline import TitleIndex, lower_case_words, title_keys, token_key
from .title_table import TITLES, remove_table, string_hashes, write_table

STATE_SHARDS = "state-shards"
"""The folder of a graph folder where a cluster's extractor state lies, a file a shard."""
SHARDS_KEY = "state_shards"
"""The saved readings' extra that says the state lies in shards, and how many."""

KeyTitles = dict[str, dict[str, int]]
"""Alias keys, each with the titles having it and their chunks (titles of no chunk dropped)."""


@dataclass
class StateShard:
    """The lower-case words and the alias keys of one range of the hash."""

    lower: dict[str, int] = field(default_factory=dict)
    keys: KeyTitles = field(default_factory=dict)

    def claims(self) -> dict[str, str]:
        """Return each key's claim: the entity of the first title, in string order, having it."""
        return {key: token_key(min(titles)) for key, titles in self.keys.items()}

    def longest(self) -> int:
        """Return the most words of a claimed key (0 for none)."""
        return max((key.count(" ") + 1 for key in self.keys), default=0)

    def shift(self, lower: Mapping[str, int], keys: Mapping[str, Mapping[str, int]]) -> set[str]:
        """Apply a change's counts (:func:`change_shards`); return the keys it may relink.

        The words that became or stopped being common (a one-word alias's link turns on
        them), and the linking keys of titles that came or went: what
        ``CorpusReadings.shift`` returns, for this shard's range.
        """
        words = apply_counts(self.lower, lower)  # common words first, as one process does
        relinked = set()
        for key, titles in keys.items():
            having = self.keys.setdefault(key, {})
            if apply_counts(having, titles):
                relinked.add(key)
            if not having:
                del self.keys[key]
        changed = {w for w in words if w == w.lower()}
        return changed | {k for k in relinked if TitleIndex.indexes(k, self.lower)}

    def save(self, path: Path) -> None:
        """Write the shard to ``path`` (JSON)."""
        path.write_bytes(orjson.dumps([self.lower, self.keys]))

    @classmethod
    def load(cls, path: Path) -> StateShard:
        """Read what :meth:`save` wrote."""
        lower, keys = orjson.loads(path.read_bytes())
        return cls(lower, keys)


def apply_counts(counts: dict[str, int], change: Mapping[str, int]) -> set[str]:
    """Add ``change`` to ``counts``; return the strings whose presence (count > 0) changed."""
    flipped = set()
    for x, delta in change.items():
        was = counts.get(x, 0)
        now = was + delta
        if (now > 0) != (was > 0):
            flipped.add(x)
        if now > 0:
            counts[x] = now
        elif was:
            del counts[x]
    return flipped


def split_counts(
    lower: Mapping[str, int],
    titles: Mapping[str, int],
    keys: Mapping[str, Sequence[str]],
    shards: int,
) -> list[StateShard]:
    """Cut counts (``keys``: each title's offline.title_keys) into ``shards`` shards."""
    out = [StateShard() for _ in range(shards)]
    words = list(lower)
    for word, s in zip(words, _shards(words, shards), strict=True):
        out[s].lower[word] = lower[word]
    pairs = [(key, title) for title in titles for key in keys[title][1:]]
    for (key, title), s in zip(pairs, _shards([k for k, _ in pairs], shards), strict=True):
        out[s].keys.setdefault(key, {})[title] = titles[title]
    return out


def merged(parts: Iterable[StateShard]) -> StateShard:
    """Sum shards of one range counted over parts of the corpus."""
    lower: Counter[str] = Counter()
    keys: dict[str, Counter[str]] = {}
    for part in parts:
        lower.update(part.lower)
        for key, titles in part.keys.items():
            keys.setdefault(key, Counter()).update(titles)
    return StateShard(dict(lower), {key: dict(titles) for key, titles in keys.items()})


def change_shards(
    removed: Sequence[Chunk], added: Sequence[Chunk], shards: int
) -> list[tuple[dict[str, int], KeyTitles]]:
    """Count a change (chunks ``removed`` and ``added``) into each shard's part of it.

    Each shard's: its words' change of lower-case count, its keys' change of titles' counts.
    """
    lower: Counter[str] = Counter(w for c in added for w in lower_case_words(c))
    lower.subtract(w for c in removed for w in lower_case_words(c))
    titles: Counter[str] = Counter(c.title for c in added if c.title)
    titles.subtract(c.title for c in removed if c.title)
    moved = {title: delta for title, delta in titles.items() if delta}
    parts = split_counts(
        {w: d for w, d in lower.items() if d}, moved, {t: title_keys(t) for t in moved}, shards
    )
    return [(part.lower, part.keys) for part in parts]


def shard_path(directory: Path, shard: int) -> Path:
    """Return the file of shard ``shard`` of the state saved in graph folder ``directory``."""
    return directory / STATE_SHARDS / f"shard-{shard:03d}.json"


def table_stems(directory: Path, shard: int) -> tuple[Path, Path]:
    """Return the stems of a shard's part of the title index (aliases, common words)."""
    return (
        directory / STATE_SHARDS / f"{TITLES}-aliases.{shard:03d}",
        directory / STATE_SHARDS / f"{TITLES}-common.{shard:03d}",
    )


def remove_tables(directory: Path, shards: int) -> None:
    """Remove the shards' parts of the title index, once joined (title_table.join_tables)."""
    for s in range(shards):
        for stem in table_stems(directory, s):
            remove_table(stem)


def save_shard(state: StateShard, directory: Path, shard: int) -> int:
    """Save a shard and its part of the title index in ``directory``; return its longest key."""
    state.save(shard_path(directory, shard))
    claims = state.claims()
    aliases, common = table_stems(directory, shard)
    write_table(aliases, claims, claims.__getitem__)
    write_table(common, state.lower, lambda _: "")
    return state.longest()


def load_whole(directory: Path, shards: int) -> tuple[Counter[str], dict[str, str]]:
    """Return the lower-case counts and the claims of a state saved in shards, joined.

    For one process's write on a cluster's index: one process holds the corpus anyway.
    """
    lower: Counter[str] = Counter()
    claims: dict[str, str] = {}
    for s in range(shards):
        shard = StateShard.load(shard_path(directory, s))
        lower.update(shard.lower)
        claims.update(shard.claims())
    return lower, claims


def read_shards(directory: Path) -> int:
    """Read each shard of the state saved in graph folder ``directory`` in turn (a check).

    Returns their count; raises what a damaged shard raises, or names a missing one.
    """
    found = sorted((directory / STATE_SHARDS).glob("shard-*.json"))
    for s, path in enumerate(found):
        if path != shard_path(directory, s):
            raise FileNotFoundError(f"{shard_path(directory, s)} (a shard of the state) is missing")
        StateShard.load(path)
    return len(found)


def _shards(strings: Sequence[str], shards: int) -> list[int]:
    return shard_of(string_hashes(strings), shards).tolist()
