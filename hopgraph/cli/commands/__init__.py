"""The CLI's command groups, one module each; a group's module is imported when its command runs.

``documents`` (index, add, sync, docs, delete), ``queries`` (retrieve, explain, info, config
show), ``ask``, ``chat``, ``graphs`` (the ``graph`` group), ``evaluation`` (eval, demo, with
``demo`` its work), ``train``, ``trace``, ``check``, ``serving`` (ui, mcp) and ``watch``
(``sync --watch``). ``ask``, ``chat``, ``train`` and ``trace`` add their own parsers and import
their work only when run, so ``hopgraph --help`` stays cheap.
"""
