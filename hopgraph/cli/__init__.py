"""The ``hopgraph`` command: its parser, its options and one module per command group.

- ``main``: parse, configure, run, and turn errors into exit codes (the entry point);
- ``parser`` and ``graph_parser``: every subcommand's arguments (``hopgraph --help`` imports no
  more than these and ``options``: each handler is imported when its command runs);
- ``options``: the options commands share, and the lazy handlers;
- ``commands``: the command groups, one module each (``documents``, ``queries``, ``ask``,
  ``chat``, ``graphs``, ``evaluation``, ``train``, ``trace``, ``check``, ``serving``, ``watch``);
- ``formatting``: hits as the terminal shows them.
"""

from .main import main
from .parser import build_parser

__all__ = ["build_parser", "main"]
