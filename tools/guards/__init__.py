"""The no-harm guard the graph methods stand on: dense retrieval's confident first chunks kept.

- ``guard``: :class:`Guarded`, the guard itself (over the dense baseline);
- ``hop_classifier``: whether a question looks multi-hop (the guard stands aside when it does).
"""
