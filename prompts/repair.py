"""The one repair request every structured LLM question makes when its reply cannot be read.

Not from a paper: the methods' prompts assume a model that follows the format. Sent after the
original prompt with the unreadable reply and what the parser missed (slots ``reply``,
``error``), once; see ``hopgraph.core.llm.parse_with_repair``.
"""

REPAIR = """Your previous reply could not be read ({error}):

{reply}

Reply again in exactly the format asked for above, with nothing else."""
