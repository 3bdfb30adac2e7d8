"""Evaluation: datasets, metrics, the eval runner, and benchmarks (``hopgraph.evals.bench``)."""
