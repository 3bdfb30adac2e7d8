"""Plain-text tables for the terminal."""

from __future__ import annotations

from collections.abc import Sequence


def render_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Render a header, a rule and rows; the first column left-aligned, the rest right."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, rows)])
