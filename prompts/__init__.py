"""Prompt templates with named slots (``str.format``), one module per method, each citing its paper.

Nothing here imports the rest of hopgraph: the LLM client (hopgraph.core.llm) and every method
fill these in.
"""
