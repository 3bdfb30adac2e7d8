"""The servers tests start on 127.0.0.1, and a local Ray cluster to try the cluster paths.

``scripted_llm`` (an OpenAI-compatible chat model that follows a script), ``embedding_server``
(an embeddings endpoint), ``json_server`` (what those two share) and ``local_cluster``.
"""
