"""Answering agents as LangGraph state machines, one package each.

``rgnn_ret`` (sub-questions, recurrent GNN retrieval, self-critique), ``gear`` (SyncGE, gist
memory, reason / rewrite, passageLink) and ``retrieve_answer`` (any single-step retriever, then
the citing reader). Each package holds ``state.py``, ``context.py`` and ``graph.py``; their nodes
call the retrievers of :mod:`hopgraph.tools`. :func:`~hopgraph.agents.run.run_agent` runs any
of them by method name, checkpointed and streamed.
"""
