"""Entity-name normalisation shared by every extractor, so names from different sources meet."""

from __future__ import annotations

import re
import unicodedata

_PAREN = re.compile(r"\s*\([^)]*\)\s*")
_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = "\"'“”‘’.,;:!?"


def normalise(name: str) -> str:
    """Lower-case, NFKC, straight quotes, single spaces, no leading article or edge punctuation."""
    text = unicodedata.normalize("NFKC", name).replace("’", "'").lower()
    text = _SPACE.sub(" ", text).strip().strip(_EDGE_PUNCT).strip()
    return text[4:] if text.startswith("the ") else text


def title_aliases(title: str) -> set[str]:
    """Names a page is mentioned by: its title, without the (disambiguation), before a comma."""
    aliases = {normalise(title)}
    bare = normalise(_PAREN.sub(" ", title))
    aliases.add(bare)
    head = bare.split(",")[0].strip()
    # "Lambert, Margrave of Tuscany" → "lambert" would claim every Lambert (and "John, Count
    # Palatine of Gelnhausen" every John): only multi-word heads are aliases.
    if " " in head:
        aliases.add(head)
    return {a for a in aliases if a}
