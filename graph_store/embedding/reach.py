"""How much of a text an embedding model reads: the rule both query paths cut texts by."""

from __future__ import annotations


def model_reach(max_length: int) -> int:
    """Return how many characters of a text a model reading ``max_length`` tokens can see.

    A word piece spans at most about a hundred characters (WordPiece's longest word), so the
    text past (max_length + 1) * 102 characters is never read; tokenizing it anyway cost a 1 MB
    query 0.6 s of a server's CPU (tests/integration/test_mcp.py). Only a text averaging over a
    hundred characters a token could read further: words past a hundred characters (one [UNK]
    each), or long runs of spaces, which no token holds. A byte-level or SentencePiece
    vocabulary's pieces are shorter still.
    """
    return (max_length + 1) * 102
