"""Allow ``python -m hopgraph``."""

import sys

from .cli import main

sys.exit(main())
