"""Evaluation: datasets, metrics, the eval runner, and benchmarks (``evals.bench``)."""
