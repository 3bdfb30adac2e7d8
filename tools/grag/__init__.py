"""G-RAG (spec g_rag): rerank a base list with a graph network over its documents' concepts.

- ``retriever``: :class:`GRAGRetriever`, the reranker retrieval runs (numpy);
- ``graph``: the document graph of a question (concepts standing in for AMR);
- ``model``: the network (torch) and its weights;
- ``training``: ``hopgraph train grag``.
"""
