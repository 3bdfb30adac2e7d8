"""Questions that name code, where keyword search finds what a sentence embedder blurs.

A documentation question often names an identifier ("What does ``render_to_log_kwargs`` do with
positional arguments?", "Does marshmallow run my validators on ``dump()``?"). The embedder splits
such a name into word pieces and ranks the sections that merely talk about the same topic; BM25
matches the name itself. So where a question names code, the graph methods fuse their ranking
with hybrid's (tools/gnn_ret/retriever.py, issue 54; docs/methods.md, "Questions that name code").

What counts is code-shaped only: a call (``dump()``), a snake_case name (``exc_info``), a dotted
name of two words (``structlog.get_logger``; not "U.S." or "e.g."), a decorator (``@pre_load``),
a keyword argument (``extra=``) or a backquoted span. CamelCase is left out: on the Wikipedia sets
it is a person's or a firm's name (McFly, FleetBoston, TransLink), and no question of any train or
dev split of musique, hotpotqa, 2wiki or NQ matches the pattern, so the rule leaves them as they
were.
"""

from __future__ import annotations

import re

IDENTIFIER = re.compile(
    r"`[^`\n]+`"  # a backquoted span
    r"|\b[A-Za-z_]\w*\(\)"  # a call: dump()
    r"|\b[A-Za-z]\w*_\w+"  # snake_case: exc_info, pre_load
    r"|\b[A-Za-z_]\w+\.[A-Za-z_]\w+"  # dotted, two letters a side: structlog.get_logger
    r"|@[A-Za-z_]\w+"  # a decorator: @validates_schema
    r"|\b\w+="  # a keyword argument: extra=
)


def identifiers(text: str) -> list[str]:
    """Return the code-shaped names in ``text``, in order (module doc)."""
    return IDENTIFIER.findall(text)


def names_identifiers(text: str) -> bool:
    """Whether ``text`` names code (module doc): a call, snake_case, a dotted name and so on."""
    return IDENTIFIER.search(text) is not None
