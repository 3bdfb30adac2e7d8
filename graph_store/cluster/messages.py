"""Where Ray's own messages go in a hopgraph process: a file of their own, named once on stderr.

Two sources would otherwise reach the user's terminal, or a stdio MCP client's protocol stream:

- Ray Serve's logger, a line per deployment step and, while a lost replica is replaced, one
  per call it routes (hundreds a second);
- the cluster's error messages (a node marked dead, a worker killed, the state dumps that come
  with them: about 40 lines after a lost node), which Ray's driver prints on **stdout** from a
  thread of its own whatever ``log_to_driver`` says, with no setting to turn it off. They are
  written to the file by replacing the one function that thread prints through
  (``ray._private.worker.print_to_stdstream``; with ``log_to_driver=False``, as
  ``connect.connected`` starts every process, nothing else calls it).

A server's stderr keeps its own one line per request; a build's stdout its report.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def messages_file() -> Path:
    """Return this process's file of Ray's messages."""
    return Path(tempfile.gettempdir()) / f"hopgraph-ray-{os.getpid()}.log"


_handlers: dict[Path, logging.FileHandler] = {}
"""This process's handler of its messages file (by path: a forked child has its own)."""


def ray_messages_to_file() -> Path:
    """Send Ray's messages in this process to :func:`messages_file`; say where, once.

    Called again (Serve's start sets its logger's handlers anew), it puts the handler back.
    """
    path = messages_file()
    handler = _handlers.get(path)
    if handler is None:
        handler = _handlers[path] = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter(FORMAT))
        print(f"Ray's messages: {path}", file=sys.stderr, flush=True)
    for name in ("ray.serve", "hopgraph.ray"):
        target = logging.getLogger(name)
        for old in [h for h in target.handlers if h is not handler]:
            target.removeHandler(old)
        if handler not in target.handlers:
            target.addHandler(handler)
        target.setLevel(logging.INFO)
        target.propagate = False
    from ray._private import worker

    worker.print_to_stdstream = _to_file
    return path


def _to_file(data: dict[str, Any], ignore_prefix: bool = False) -> None:
    """Write a batch of lines Ray's driver would print (its error listener's) to the file."""
    source = data.get("pid", "ray")
    log = logging.getLogger("hopgraph.ray")
    for line in data.get("lines", []):
        log.warning("(%s) %s", source, line)
