"""Evaluation: the harness of ``hopgraph eval``, and beside it the work done by hand.

- the harness, here: ``datasets``, ``metrics``, ``runner``, ``report``, ``answers``, ``oracle``,
  ``coverage``, ``rerank_metrics``, ``split_dataset``, ``same_scores`` and ``same_index`` (do two
  runs or two indexes agree), ``tables`` (plain-text tables), ``doc_markers`` (the generated
  part of a hand-written page), ``imports`` (the layers drawn);
- ``bench``: speed and memory benchmarks (``python -m hopgraph.evals.bench``);
- ``studies``: one module per study the docs cite;
- ``faults``: damage and kill harnesses;
- ``servers``: the servers tests start (a scripted LLM, an embeddings endpoint, a Ray cluster);
- ``rendering``: the generated tables of the README and the docs.
"""
