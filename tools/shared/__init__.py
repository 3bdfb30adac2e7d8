"""What every retrieval method shares: the retriever interface, hits, fusion, expansion, weights.

- ``base``: :class:`Retriever` (one ``retrieve(query, k, where)``) and the bases a method stands on;
- ``hits``: :class:`Hit` and :class:`Provenance`, the one result type;
- ``fusion``: reciprocal rank fusion and score fusion;
- ``expand``: a hit's neighbours or whole section (``--expand``);
- ``weights``: trained weights on disk (and the shipped ones in ``weights_data/``);
- ``training``: the one training loop the trained methods fit with;
- ``registry``: the name → retriever table (each class imported on first use).
"""
