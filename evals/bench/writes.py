"""Benchmark incremental writes against a full graph build, on a copy of a real index.

``python -m hopgraph.evals.bench.writes --index DIR --data CORPUS_DIR --docs 5`` copies the index
(with graphs) to a temporary folder, rebuilds its graphs from scratch there (timed: extraction,
graphs and embedding every triple, as ``hopgraph graph build`` does), then adds ``--docs`` documents
from ``CORPUS_DIR/corpus.jsonl`` that the index does not hold and deletes them again, timing each
write with the embedding model already loaded (so the encoder's load is not counted; its embedding
of the new chunks and triples is).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hopgraph.evals.bench import save_json
from hopgraph.graph_store import (
    Index,
    add_documents,
    build_graphs,
    delete_documents,
    load_documents,
)
from hopgraph.graph_store.embedding.embedders import load_embedder
from hopgraph.graph_store.index.generations import drop_collection
from hopgraph.graph_store.index.graph_build import GraphSettings


def measure(index: Path, corpus: Path, docs: int, workdir: Path) -> dict:
    """Copy ``index`` into ``workdir`` and time a full graph build, an add and a delete."""
    copy = workdir / "index"
    shutil.copytree(index, copy)
    with Index.open(copy) as idx:
        manifest = idx.manifest
        held = idx.doc_ids
        location = idx.location
    if manifest.settings.chroma_url:
        raise SystemExit("benchmark an embedded index (a server-backed copy would share rows)")
    settings = GraphSettings.model_validate((manifest.graph or {}).get("settings", {}))
    load_embedder(manifest.settings.model, manifest.settings.batch_size).embed(["warm-up"])
    drop_collection(location.triples())  # a full build embeds every triple again
    started = time.perf_counter()
    info = build_graphs(copy, settings, show_progress=False)
    full = time.perf_counter() - started
    new = [d for d in load_documents(corpus / "corpus.jsonl") if d.id not in held][:docs]
    started = time.perf_counter()
    added = add_documents(copy, new, show_progress=False)
    add_seconds = time.perf_counter() - started
    with Index.open(copy) as idx:
        add_graph = idx.manifest.graph
    started = time.perf_counter()
    delete_documents(copy, [d.id for d in new])
    delete_seconds = time.perf_counter() - started
    return {
        "index": str(index),
        "chunks": manifest.counts["chunks"],
        "full_graph_build_s": full,
        "full_graph_build_timings": info["timings"],
        "add_docs": len(new),
        "add_chunks": added.added_chunks,
        "add_s": add_seconds,
        "add_embed_s": added.embed_seconds,
        "add_graph_timings": add_graph["timings"] if add_graph else None,
        "add_incremental": bool(add_graph and add_graph.get("incremental")),
        "delete_s": delete_seconds,
        "add_share_of_full_build": add_seconds / full,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures (JSON with --out)."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.writes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--index", type=Path, required=True, help="an index with graphs")
    parser.add_argument("--data", type=Path, required=True, help="folder with corpus.jsonl")
    parser.add_argument("--docs", type=int, default=5, help="documents to add (default 5)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        result = measure(args.index, args.data, args.docs, Path(workdir))
    print(
        f"{result['chunks']} chunks: full graph build {result['full_graph_build_s']:.1f} s; "
        f"add {result['add_docs']} documents ({result['add_chunks']} chunks) "
        f"{result['add_s']:.2f} s = {100 * result['add_share_of_full_build']:.1f}% of it "
        f"(embedding {result['add_embed_s']:.2f} s); delete them {result['delete_s']:.2f} s"
    )
    if args.out:
        save_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
