"""The fault harnesses: damage every file of an index, kill writers mid-write, damage Chroma.

Each is run by hand and by an integration test (tests/integration/test_killed_writes.py,
tests/unit/test_repair_tables.py); their reports are in evals/results/ and docs/security.md.
"""
