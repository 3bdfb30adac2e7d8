"""The graphs: what is read from the chunks, and the graphs made of it.

``extraction`` (entities, keywords and triples, offline or by an LLM), the passage graph
(``passage_graph``, its semantic edges from ``semantic`` and ``ann``), the knowledge graph
(``knowledge_graph``), the triples' vectors (``triple_table``) and the ``entity_linker``, which
links a question's mentions as the extractor linked the chunks'. Written by the index's life
(hopgraph.graph_store.index.graph_build), read by the retrievers.
"""
