"""How hits look in a terminal: shared by the commands and the demo."""

from __future__ import annotations

import shutil
import textwrap

from hopgraph.tools import Hit
from hopgraph.tools.shared.hits import order_note


def format_hits(hits: list[Hit], gold: set[str] | frozenset[str] = frozenset()) -> str:
    """Render hits for a terminal: rank, score, id, title, then a wrapped snippet."""
    width = min(shutil.get_terminal_size((100, 20)).columns, 120)
    blocks = []
    for rank, hit in enumerate(hits, start=1):
        mark = " [gold]" if hit.doc_id in gold else ""
        head = f"{rank:>2}. {hit.score:.3f}  {hit.id}  {hit.title}{mark}"
        body = textwrap.shorten(hit.text, width=max(40, 3 * width - 20), placeholder=" …")
        blocks.append(head + "\n" + textwrap.indent(textwrap.fill(body, width - 6), "      "))
    note = order_note(hits)
    if note is not None:  # scores rise somewhere: the order is the method's (tools/shared/hits.py)
        blocks.append(textwrap.fill(f"({note})", width))
    return "\n".join(blocks)
