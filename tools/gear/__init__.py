"""GEAR's graph expansion (spec gear): triple beams from a base list, fused back (NaiveGE, SyncGE).

The agent that reads, reasons and rewrites with gist memory is ``hopgraph.agents.gear``; this
room holds the single-step retrievers it and the CLI call.
"""
