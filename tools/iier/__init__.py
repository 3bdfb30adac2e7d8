"""IIER (spec iier): evidence chains over the chunk interaction graph, and their trained scorer.

- ``retriever``: :class:`IIERRetriever`, keyword seeds then greedy chains;
- ``steps``: a chain's step features and the numpy chain ranker retrieval uses;
- ``scorer``: the trained chain scorer (torch), loaded from weights;
- ``training``: ``hopgraph train iier``.
"""
