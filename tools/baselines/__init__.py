"""The baselines every paper compares against: BM25, dense retrieval and their hybrid."""
