"""Prompt templates with named slots (``str.format``), one module per method, each citing its paper.

Nothing here imports the rest of hopgraph: the LLM client (hopgraph.core.llm) and every method
fill these in.
"""

PASSAGE = "Document: {title}\n{text}"
"""How every prompt shows a passage: its document's title, then its text. The papers write
"Wikipedia Title: …" (their corpora are Wikipedia); a user's corpus is not, so it says Document."""


def passage(title: str, text: str) -> str:
    """Render one passage for a prompt (:data:`PASSAGE`)."""
    return PASSAGE.format(title=title, text=text)
