"""Multi-step methods as LangGraph state machines (RGNN-Ret, GEAR, ToG-2), one package each.

Each agent package holds ``state.py``, ``context.py`` and ``graph.py``; their nodes call the
single-step retrievers of :mod:`tools`. None is implemented yet: see the project's issues.
"""
