"""Reading documents: a source's files found and read, cut into chunks, and ``--where`` filters.

The ground floor of the index: ``schema`` (the ``Document`` and ``Chunk`` value types),
``loaders`` (a folder, a file or a JSONL corpus into documents), ``file_formats`` (each kind of
file as Markdown text: ``markdown``, ``rst`` with ``rst_sphinx``'s stand-ins for Sphinx and
``rst_autodoc`` / ``autodoc``'s objects read from a package's source),
``chunking`` and ``filters``. It imports nothing else of the index.
"""
