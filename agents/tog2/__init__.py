"""ToG-2 over hopgraph's own knowledge graph (spec tog2 §3 and §8.3): KG × text search."""
