"""Allow ``python -m hopgraph``."""

import sys

from hopgraph.cli import main

sys.exit(main())
