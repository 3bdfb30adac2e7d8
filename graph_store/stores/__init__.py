"""The stores of an index: where its chunks, vectors and keywords are kept, and its manifest.

``manifest`` (what a generation holds, in which files, with their sizes and checksums), the
chunk and document tables (``chunk_table``, ``doc_table``), the vector table with each large
segment's IVF (``vector_table``, ``ivf``) and ``vector_search``, BM25 (``kdb_bm25``, with
``bm25_query`` for GNN-Ret's pruned top), and Chroma (``vdb_chroma``, its seal ``chroma_seal``
and ``chroma_child``, which opens it in a child process). ``base`` holds the roles' interfaces.
"""
