"""The floor every other package stands on: errors, settings, the LLM client and traces.

Nothing here imports hopgraph's other packages (only ``prompts``, the named templates); the
import-linter contracts in pyproject.toml keep it so.
"""
