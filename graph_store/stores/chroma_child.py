"""Run the Chroma part of `hopgraph check` beside the rest (graph_store.index.check_chroma).

In a forked child (core.forked): a native library that crashes on a damaged file takes
the child down, not the check, which then names the crash; and the child imports Chroma (a
third of a second) and reads it while the check reads the other parts. Started first, it
costs the check almost nothing. Where fork is not there, or threads run, it runs in place.
"""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

from hopgraph.core.errors import HopgraphError
from hopgraph.core.forked import Forked


class ChromaCheck:
    """The Chroma check of one index, under way."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # Forking a process that runs threads (a server; a command that failed with Chroma's
        # or the encoder's threads running), or whose Chroma started its runtime's threads
        # (invisible to Python), can deadlock the child: then it runs here.
        alone = threading.active_count() == 1 and "chromadb" not in sys.modules
        # What the child runs on (numpy, pydantic, the manifest; Chroma it imports only to open
        # the store) is imported here, before the fork: the check needs it too, and the child
        # inherits it instead of importing it again beside this process (0.3 s of CPU, which a
        # busy machine adds to the check's time).
        self._module = importlib.import_module("hopgraph.graph_store.index.check_chroma")
        self._work = Forked("reading Chroma", self._findings, in_child=alone)

    def _findings(self) -> list[str]:
        return self._module.findings(self.directory)

    def collect(self) -> list[str]:
        """Return what is wrong with Chroma; a child that crashed or ran out of time is a finding.

        The limit (:data:`LIMIT`) stops a native library that never returns on a damaged file.
        """
        try:
            return self._work.result(LIMIT)
        except HopgraphError as err:
            return [err.message]

    def stop(self) -> None:
        """Wait for the child without its findings (the index has no readable manifest)."""
        self.collect()


LIMIT = 600.0
"""Seconds the Chroma check may take before its child is stopped and named. A sealed store is
checked by its files' CRC-32s (seconds at a million chunks); every row is read only in a store
with no seal (one written before seals, or a Chroma server)."""


def start(directory: Path) -> ChromaCheck:
    """Start checking ``directory``'s Chroma (see :meth:`ChromaCheck.collect`)."""
    return ChromaCheck(directory)
