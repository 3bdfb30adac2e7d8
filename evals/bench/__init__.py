"""Benchmarks: indexing throughput against the embedder alone, and query latency per method.

Run ``python -m evals.bench --data ../shared/data/2wiki``; see ``--help``.
"""
