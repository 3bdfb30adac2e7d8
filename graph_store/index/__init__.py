"""The index's life: opened, written, checked and mended.

``reader`` (``Index``, the read side) and ``live`` (``LiveIndex``, a reader that follows new
generations); the writes: ``build`` (a new index), ``changes`` (add, delete, sync), ``commit``
(the tables and the manifest of a write), ``graph_build`` (the graphs kept current) and
``triple_vectors``; ``generations`` (each write a folder and a manifest written last) and
``lock`` (the write lock); ``check``, ``check_chroma`` and ``repair``.
"""
