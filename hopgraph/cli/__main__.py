"""``python -m hopgraph.cli``: the ``hopgraph`` command."""

import sys

from .main import main

sys.exit(main())
