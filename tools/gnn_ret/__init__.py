"""GNN-Ret (spec gnn_ret): query distances passed over the passage graph, and its trained form.

- ``retriever``: :class:`GNNRetriever`, the method (seeds, the expanded question, the fusion);
- ``layers``: one layer's message passing over a typed edge set (Eqs. 3–4);
- ``local``: the same layers computed over the neighbourhood a query reaches (sharded indexes);
- ``training``: RGNN-Ret's trained aggregation (``hopgraph train gnn_ret``);
- ``list_rerank``: the opt-in list reranker (``rerank=True``);
- ``identifiers``: whether a question names code (the code-question rule).
"""
