"""The MCP server (``hopgraph mcp``): the retrievers and the answer as tools for other agents.

``server`` builds the FastMCP server over a :class:`~hopgraph.graph_store.LiveIndex` and runs it
over stdio or streamable HTTP.
"""
