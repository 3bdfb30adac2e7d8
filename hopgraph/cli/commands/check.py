"""`hopgraph check [--repair]`: is every part of an index readable and in agreement?"""

from __future__ import annotations

import argparse
import json

from hopgraph.cli.options import index_dir
from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.stores import chroma_child


def check(args: argparse.Namespace) -> None:
    """Check (after ``--repair``, mend) an index; raise naming every problem found."""
    directory = index_dir(args)
    if args.repair:
        from hopgraph.graph_store.index.repair import repair

        done = repair(directory)
        for line in done:
            print(f"repaired {line}")
        if not done:
            print("nothing to repair")
    # The Chroma check runs in a child process that imports Chroma: started before this one
    # imports the rest, the two take about as long as either.
    chroma = chroma_child.start(directory)
    from hopgraph.graph_store.index.check import FULL_FIX, check_index

    problems = check_index(directory, chroma)
    if args.json:
        print(json.dumps([p.__dict__ for p in problems], indent=2))
    if problems:
        listed = "\n".join(str(p) for p in problems)
        full = all(p.fix == FULL_FIX for p in problems)  # a full device is not damage
        state = "could not be read whole" if full else "is damaged"
        raise IndexStateError(f"{directory} {state} ({len(problems)} problem(s)):\n{listed}")
    if not args.json:
        from hopgraph.graph_store.stores.manifest import read_manifest

        manifest = read_manifest(directory)  # sound, as just checked: its counts hold
        counts = manifest.counts
        print(
            f"{directory}: sound (generation {manifest.generation}, {counts['documents']} "
            f"documents, {counts['chunks']} chunks): every part is readable and they agree"
        )
