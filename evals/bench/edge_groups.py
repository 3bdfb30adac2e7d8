"""A write's entity and keyword edges: updated by the groups it touches, or counted whole.

    python -m hopgraph.evals.bench.edge_groups BEFORE AFTER

``BEFORE`` is a copy of an index with graphs taken before a write, ``AFTER`` the index once
written. Prints the time to read the previous generation's items, to update the edges by group
(graph_store/graphs/edge_groups.py) and to count them whole (passage_graph.co_occurrence), and
whether both give the same edges.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hopgraph.graph_store.graphs.edge_groups import previous_items, updated_shared_edges
from hopgraph.graph_store.graphs.extraction.table import EXTRACTIONS_FILE, ExtractionTable
from hopgraph.graph_store.graphs.passage_graph import PassageGraphSettings, co_occurrence
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.manifest import read_manifest


def main(argv: list[str] | None = None) -> int:
    """Time both ways on one write; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a copy of the index before the write")
    parser.add_argument("after", type=Path, help="the index after it")
    args = parser.parse_args(argv)
    old, new = read_manifest(args.before), read_manifest(args.after)
    assert old.graph is not None and new.graph is not None, "both need graphs"
    before, chunks = read_chunks(args.before, old), read_chunks(args.after, new)
    extractions = ExtractionTable.load(new.path(args.after, "graph") / EXTRACTIONS_FILE)
    fields = PassageGraphSettings.__dataclass_fields__
    settings = PassageGraphSettings(
        **{k: v for k, v in new.graph["settings"].items() if k in fields}
    )
    started = time.perf_counter()
    previous = previous_items(old.path(args.before, "graph"), before, chunks, extractions)
    assert previous is not None, "the previous graph folder holds other rows"
    read = time.perf_counter()
    updated = updated_shared_edges(previous, extractions, settings)
    done = time.perf_counter()
    columns = len(extractions.vocab)
    whole = {
        "entity": co_occurrence(extractions.entities.incidence(columns), 1, settings.max_df),
        "keyword": co_occurrence(
            extractions.keywords.incidence(columns), settings.keyword_min_shared, settings.max_df
        ),
    }
    counted = time.perf_counter()
    print(
        f"{len(chunks)} chunks: read the previous items {read - started:.2f} s, "
        f"update {done - read:.2f} s, count whole {counted - done:.2f} s"
    )
    for kind, matrix in whole.items():
        same = (updated[kind] != matrix).nnz == 0
        print(f"{kind}: {matrix.nnz // 2} edges, the same both ways: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
