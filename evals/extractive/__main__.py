"""``python -m hopgraph.evals.extractive``: the answer without an LLM against its passages."""

from . import main

raise SystemExit(main())
