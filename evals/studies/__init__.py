"""The studies whose figures docs/methods.md, docs/evaluation.md and docs/documents.md cite.

One module per kept study, each run by hand (``python -m hopgraph.evals.studies.NAME``) and
each named in the section whose figures it makes; the results they keep are in evals/results/.
"""
