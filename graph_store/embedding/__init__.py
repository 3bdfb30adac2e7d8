"""The embedders: passages and queries into unit vectors.

``embedders`` (sentence-transformers, the hashing embedder, choosing one from the settings),
``onnx_encoder`` (the model's ONNX export, which embeds queries with a fast start), ``reach``
(how much of a text a model reads), ``endpoint`` (an OpenAI-compatible embeddings server) and
``vector_cache`` (vectors of text kept on disk by the hash of model and text). Beside the
stores: neither imports the other.
"""
