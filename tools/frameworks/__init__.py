"""The framework seams: the retrievers as a LangChain retriever and a LlamaIndex retriever.

Glue at the edge (STYLE.md): nothing below imports LangChain's retriever classes or LlamaIndex.
"""
