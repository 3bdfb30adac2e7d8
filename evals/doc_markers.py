"""Generated text inside hand-written pages: the part between a start and an end marker.

One home for the three writers of generated documentation: the tables (evals/rendering/docs.py),
the scaling page's cost model (evals/rendering/cost_model.py) and the CLI and configuration
references (hopgraph/reference.py). Each names its own markers; the markers stay in the page.
"""

from __future__ import annotations


def between(text: str, start: str, end: str) -> str | None:
    """Return what lies between the markers (without the newlines beside them), or None."""
    if start not in text or end not in text.split(start, 1)[1]:
        return None
    inside = text.split(start, 1)[1].split(end, 1)[0]
    return inside.removeprefix("\n").removesuffix("\n")


def replaced(text: str, start: str, end: str, body: str) -> str:
    """Return ``text`` with ``body`` between the markers; ValueError naming them if absent."""
    if between(text, start, end) is None:
        raise ValueError(f"no {start} … {end} markers")
    head, rest = text.split(start, 1)
    return f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}"
