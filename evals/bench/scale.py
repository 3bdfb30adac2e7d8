"""Scale benchmark: index, graphs, writes and query latency from 100k to 1M synthetic passages.

``python -m hopgraph.evals.bench scale --sizes 100k,200k --out runs/scale.json`` builds, for each
size in its own process, an index of that many synthetic one-chunk documents
(hopgraph.evals.bench.graphs: texts that mention each other's titles, topic-clustered vectors), with
the vectors given, so it times the stores and the graphs, not the encoder (queries use the hashing
embedder). Per size: index build (Chroma, chunk table, BM25) and graph build (offline extraction,
passage graph, knowledge graph; triples are not embedded) and the recall@10 of its semantic
neighbour lists against exact search over 2,000 random chunks; add and delete of 1,000
documents; dense and gnn_ret query latency, p50 and p95 over 200 queries, through the index's
IVF files (the default) and by exact scan, query embedding excluded (the queries are embedded
before the clock starts), with the IVF's recall@10 against exact on those queries; the memory
of two MCP servers on the index (evals/bench/serving.py: RSS, and PSS, which counts the pages
they share once); and the growth per doubling. Each phase runs in its own process and reports
its own peak RSS.

``--one N --phase P --workdir DIR`` runs one phase of one size in a folder that is kept (index
first, then graph, then any other). ``--growth DIR_100K DIR_1M`` times dense and gnn_ret on such
folders in one process, the sizes taking turns on every query, and reports each p95 over the
smallest's: the ratio a user would see, without the machine's drift between two runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.bench import save_json
from hopgraph.evals.bench.ann import recall
from hopgraph.evals.bench.graphs import synthetic_corpus
from hopgraph.evals.bench.serving import serving_memory
from hopgraph.evals.metrics import percentile
from hopgraph.graph_store import Document, Index, add_documents, build_index, delete_documents
from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours, exact_top_k
from hopgraph.graph_store.index import writes
from hopgraph.graph_store.index.build import build_graphs
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.stores.manifest import read_manifest
from hopgraph.tools import make_retriever

DIMENSION = 256  # the hashing embedder's, which embeds the queries
CHANGE = 1000


def parse_size(text: str) -> int:
    """Read "100k", "1M" or "250000"."""
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * scale)


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def _child(phase: str) -> dict[str, float]:
    """Return the largest peak RSS of a write's forked children (knowledge graph, tables).

    Pages shared with the parent count in both, so parent + child overstates what was in use.
    """
    return {
        f"{phase}_child_peak_gb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2
    }


DENSE_BASE = {"base": "dense"}
"""gnn_ret on dense alone: what it costs without BM25, whose postings grow with the corpus."""
PHASES = ("index", "graph", "recall", "add", "delete", "latency", "serve", "disk")
RECALL_SAMPLE = 2000


def run_one(size: int, workdir: Path) -> dict:
    """Build, write to and query one index of ``size`` passages; return the figures.

    Each phase runs in its own process, so its peak RSS is its own (not the corpus generator's
    nor an earlier phase's), as when a user runs ``hopgraph index``, ``graph build``, ``add``.
    """
    out: dict = {"size": size, "cpus": os.cpu_count()}
    for phase in PHASES:
        child = [sys.executable, "-m", "hopgraph.evals.bench.scale", "--one", str(size)]
        child += ["--phase", phase, "--workdir", str(workdir)]
        done = subprocess.run(child, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{size} {phase}: failed\n{done.stderr[-3000:]}")
        out.update(json.loads(done.stdout.strip().splitlines()[-1]))
    out["peak_gb"] = max(v for k, v in out.items() if k.endswith("peak_gb"))
    return out


def run_phase(phase: str, size: int, workdir: Path) -> dict:
    """Run one phase on the index in ``workdir``; return its figures."""
    path = workdir / "index"
    started = time.perf_counter()
    if phase == "index":
        chunks, vectors = synthetic_corpus(size + CHANGE, dimension=DIMENSION)
        _give(dict(zip([c.id for c in chunks], vectors, strict=True)))
        docs = [Document(c.id, c.title, c.text) for c in chunks]
        extra = {"ids": [d.id for d in docs[size:]], "titles": [d.title for d in docs[size:]]}
        extra |= {"texts": [d.text for d in docs[size:]]}
        extra["queries"] = [c.title for c in chunks[: size : max(1, size // 200)]][:200]
        extra["removed"] = [d.id for d in docs[:CHANGE]]
        (workdir / "change.json").write_text(json.dumps(extra), encoding="utf-8")
        np.save(workdir / "change.npy", vectors[size:])
        del chunks, vectors
        started = time.perf_counter()
        build_index(docs[:size], path, IndexSettings(model="hashing", chunk_tokens=512), False)
        return {"index_s": time.perf_counter() - started, "index_peak_gb": _peak_gb()}
    change = json.loads((workdir / "change.json").read_text(encoding="utf-8"))
    if phase == "graph":
        info = build_graphs(path, GraphSettings(embed_triples=False), show_progress=False)
        return {
            "graph_s": time.perf_counter() - started,
            "graph_peak_gb": _peak_gb(),
            "graph_timings": info["timings"],
            "graph_counts": info["counts"],
        }
    if phase == "recall":
        return {"semantic_recall_at_10": semantic_recall(path)}
    if phase == "add":
        _give(dict(zip(change["ids"], np.load(workdir / "change.npy"), strict=True)))
        docs = list(map(Document, change["ids"], change["titles"], change["texts"]))
        started = time.perf_counter()
        add_documents(path, docs, show_progress=False)
        seconds = time.perf_counter() - started
        return {"add_1000_s": seconds, "add_peak_gb": _peak_gb()} | _child("add")
    if phase == "delete":
        delete_documents(path, change["removed"])
        seconds = time.perf_counter() - started
        return {"delete_1000_s": seconds, "delete_peak_gb": _peak_gb()} | _child("delete")
    if phase == "delete-added":  # undoes "add", so add and delete can be measured again
        delete_documents(path, change["ids"])
        seconds = time.perf_counter() - started
        return {"delete_added_1000_s": seconds, "delete_peak_gb": _peak_gb()} | _child("delete")
    if phase == "serve":
        return {"serving": serving_memory(path, change["queries"][:5])}
    if phase == "disk":
        return {"disk_mb": disk_parts(path)}
    return _latency(path, change["queries"])


def semantic_recall(path: Path) -> float:
    """Return the recall of the graph's semantic neighbour lists against exact search.

    Over :data:`RECALL_SAMPLE` random chunks, ties counted (as ``hopgraph.evals.bench.ann``
    counts them): what the approximate search gave up for its speed, at this size.
    """
    with Index.open(path) as idx:
        vectors = np.ascontiguousarray(idx.embedding_matrix, dtype=np.float32)
        ids = list(idx.chunks)
        folder = idx.manifest.path(path, "graph")
    if json.loads((folder / "nodes.json").read_text(encoding="utf-8")) != ids:
        raise RuntimeError(f"{folder}: the graph's chunks are not the index's; build it again")
    lists = Neighbours.load(folder / NEIGHBOURS_FILE).rows
    k = lists.shape[1]
    asked = np.sort(np.random.default_rng(3).choice(len(ids), RECALL_SAMPLE, replace=False))
    return recall(lists[asked], exact_top_k(vectors, k, 256, asked)[0], vectors, asked)


def disk_parts(path: Path) -> dict[str, float]:
    """Return the MB on disk of each part of the index's committed generation."""
    manifest = read_manifest(path)
    parts: dict[str, float] = {}
    named = {
        "chunk and document tables": [manifest.files["chunks"], manifest.files["documents"]],
        "vector table": [f"{v}/vectors.npy" for v in manifest.vectors],
        "IVF": list(manifest.ann.values()),
        "BM25": manifest.segments,
        "graphs": [manifest.files["graph"]] if manifest.graph else [],
        "Chroma": [manifest.chroma_dir] if manifest.chroma_dir else [],
    }
    for part, names in named.items():
        total = 0
        for name in names:
            where = path / name
            files = [where] if where.is_file() else [p for p in where.rglob("*") if p.is_file()]
            total += sum(f.stat().st_size for f in files)
        parts[part] = total / 1024**2
    return parts


def _give(vectors: dict[str, np.ndarray]) -> None:
    """Make the writes take these vectors: the encoder is not what this benchmark measures."""
    writes.embed_chunks = lambda todo, embedder, show: np.stack([vectors[c.id] for c in todo])


def _latency(path: Path, queries: list[str]) -> dict:
    """Time dense and gnn_ret through the IVF files and by exact scan; the IVF's recall@10.

    ``gnn_ret_overlap_at_10``: the share of GNN-Ret's top 10 (on its hybrid base, the default)
    that it keeps with the IVF against exact dense search (its BM25 half is exact either way).
    """
    result: dict = {"latency_ms": {}}
    tops, hits = {}, {}
    for search in ("auto", "exact"):
        with Index.open(path, search=search) as idx:
            for query in queries:
                idx.embed_query(query)  # query embedding is not what is timed
            tops[search] = [set(idx.dense_top(q, 10)[0].tolist()) for q in queries]
            gnn = make_retriever("gnn_ret", idx)  # with the IVF, against exact search
            hits[search] = [{h.id for h in gnn.retrieve(q, 10)} for q in queries]
            result[f"approximate_{search}"] = idx.vector_search.approximate
            for name, options in (("dense", {}), ("gnn_ret", {}), ("gnn_ret_dense", DENSE_BASE)):
                if name == "gnn_ret_dense" and search == "exact":
                    continue
                retriever = make_retriever(name.removesuffix("_dense"), idx, **options)
                retriever.retrieve(queries[0], 10)  # loads what it needs once
                times = []
                for query in queries:
                    started = time.perf_counter()
                    retriever.retrieve(query, 10)
                    times.append((time.perf_counter() - started) * 1000)
                key = name if search == "auto" else f"{name}_exact"
                result["latency_ms"][key] = {
                    "p50": percentile(times, 50),
                    "p95": percentile(times, 95),
                }
    found = [len(a & e) / 10 for a, e in zip(tops["auto"], tops["exact"], strict=True)]
    result["ivf_recall_at_10"] = float(np.mean(found))
    found = [len(a & e) / 10 for a, e in zip(hits["auto"], hits["exact"], strict=True)]
    result["gnn_ret_overlap_at_10"] = float(np.mean(found))
    return result


GROWTH_METHODS = ("dense", "gnn_ret")
GROWTH_PASSES = 3


def growth(workdirs: list[Path], passes: int = GROWTH_PASSES) -> dict:
    """Time dense and gnn_ret on several sizes' indexes in one process, taking turns per query.

    Timed one size after another (``--phase latency`` in separate processes), the same command
    gave GNN-Ret's p95 at 100k 5.6 ms one run and 9.4 the next: this machine's speed drifts by
    a third within minutes, so a ratio of two runs is mostly drift. Here every query is timed
    on each index in turn (the order flipped every other query), ``passes`` times over, and each
    query's time is its median over the passes; a slow spell falls on every size alike.
    """
    indexes, queries, retrievers = [], [], []
    for workdir in workdirs:
        idx = Index.open(workdir / "index")
        asked = json.loads((workdir / "change.json").read_text(encoding="utf-8"))["queries"]
        for query in asked:
            idx.embed_query(query)  # query embedding is not what is timed
        found = {name: make_retriever(name, idx) for name in GROWTH_METHODS}
        for retriever in found.values():
            retriever.retrieve(asked[0], 10)  # loads what it needs once
        indexes.append(idx)
        queries.append(asked)
        retrievers.append(found)
    count = min(map(len, queries))
    times = {(at, name): [] for at in range(len(workdirs)) for name in GROWTH_METHODS}
    for done in range(passes):
        for i in range(count):
            turns = list(range(len(workdirs)))
            for at in turns if (i + done) % 2 == 0 else turns[::-1]:
                for name in GROWTH_METHODS:
                    indexes[at].forget_queries(vectors=False)
                    started = time.perf_counter()
                    retrievers[at][name].retrieve(queries[at][i], 10)
                    times[at, name].append((time.perf_counter() - started) * 1000)
    out: dict = {"passes": passes, "queries": count, "sizes": []}
    for at, idx in enumerate(indexes):
        row: dict = {"workdir": str(workdirs[at]), "chunks": len(idx.chunks)}
        for name in GROWTH_METHODS:
            median = np.median(np.reshape(times[at, name], (passes, count)), axis=0).tolist()
            row[name] = {"p50": percentile(median, 50), "p95": percentile(median, 95)}
        out["sizes"].append(row)
        idx.close()
    first = out["sizes"][0]
    for row in out["sizes"][1:]:
        row["p95_growth"] = {m: row[m]["p95"] / first[m]["p95"] for m in GROWTH_METHODS}
    return out


def main(argv: list[str] | None = None) -> int:
    """Run each size in its own process and print the table (JSON with --out)."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="100k,200k,400k,1M", help="e.g. 100k,200k,400k,1M")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument(
        "--growth",
        type=Path,
        nargs="+",
        metavar="WORKDIR",
        help="time dense and gnn_ret on these kept work folders (`--one N --phase index "
        "--workdir DIR`, then the graph phase), smallest first, in one process taking turns "
        "per query, and report each p95 over the first's",
    )
    # a child process: one size (all its phases), or one phase of it in --workdir
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=(*PHASES, "delete-added"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(run_phase(args.phase, args.one, args.workdir)))
        return 0
    if args.growth:
        for workdir in args.growth:
            if not (workdir / "change.json").is_file() or not (workdir / "index").is_dir():
                parser.error(
                    f"{workdir} is no scale work folder (it needs index/ and change.json): make "
                    f"one with `--one N --phase index --workdir {workdir}`, then `--phase graph`"
                )
        return _print_growth(growth(args.growth), args.out)
    if args.one:
        with tempfile.TemporaryDirectory(prefix="hopgraph-scale-") as tmp:
            print(json.dumps(run_one(args.one, Path(tmp))))
        return 0
    rows = []
    for size in map(parse_size, args.sizes.split(",")):
        child = [sys.executable, "-m", "hopgraph.evals.bench.scale", "--one", str(size)]
        done = subprocess.run(child, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{size}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
            return 1
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        _print(rows[-1], rows[-2] if len(rows) > 1 else None)
    if args.out:
        save_json(args.out, rows)
    return 0


def _print_growth(found: dict, out: Path | None) -> int:
    for row in found["sizes"]:
        times = ", ".join(
            f"{m} p50 {row[m]['p50']:.2f} p95 {row[m]['p95']:.2f} ms" for m in GROWTH_METHODS
        )
        ratios = row.get("p95_growth")
        grown = "; p95 × " + ", ".join(f"{m} {v:.2f}" for m, v in ratios.items()) if ratios else ""
        print(f"{row['chunks']:>9,} passages: {times}{grown}")
    if out:
        save_json(out, found)
    return 0


def _print(row: dict, previous: dict | None) -> None:
    growth = ""
    if previous:
        doublings = np.log2(row["size"] / previous["size"])
        per = (row["graph_s"] / previous["graph_s"]) ** (1 / doublings)
        growth = f", graph build ×{per:.2f} per doubling"
    lat = row["latency_ms"]
    print(
        f"{row['size']:>9,} passages: index {row['index_s']:.0f} s, graphs {row['graph_s']:.0f} s "
        f"(peak {row['graph_peak_gb']:.2f} GB){growth}, semantic recall@10 "
        f"{row['semantic_recall_at_10']:.3f}; add 1,000 {row['add_1000_s']:.1f} s, "
        f"delete 1,000 {row['delete_1000_s']:.1f} s; p95 dense {lat['dense']['p95']:.1f} ms "
        f"(exact {lat['dense_exact']['p95']:.1f}), gnn_ret {lat['gnn_ret']['p95']:.1f} ms "
        f"(exact {lat['gnn_ret_exact']['p95']:.1f}), IVF recall@10 {row['ivf_recall_at_10']:.3f}; "
        f"two MCP servers {row['serving']['pss_total_mb']:.0f} MB PSS "
        f"({row['serving']['rss_total_mb']:.0f} MB RSS); peak {row['peak_gb']:.2f} GB"
    )


if __name__ == "__main__":
    sys.exit(main())
