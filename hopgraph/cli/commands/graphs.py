"""`hopgraph graph ...`: build, inspect, export and measure the passage and knowledge graphs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import networkx as nx
import numpy as np
from pydantic import ValidationError

from hopgraph.cli.options import index_dir, write_output
from hopgraph.core.errors import InputError
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.passage_graph import EDGE_TYPES, sparse_reason
from hopgraph.graph_store.index.build import build_graphs
from hopgraph.graph_store.index.graph_build import GraphSettings, GraphTasks
from hopgraph.graph_store.index.triple_vectors import embed_triple_vectors
from hopgraph.graph_store.stores.manifest import read_manifest

from .documents import partitions_need_a_cluster, settings_from


def graph_settings(args: argparse.Namespace) -> GraphSettings:
    """Build graph settings from the command's options (unset options keep the defaults)."""
    given = {
        "extractor": args.extractor,
        "max_df": args.max_df,
        "keyword_min_shared": args.keyword_min_shared,
        "semantic_k": args.semantic_k,
        "semantic_min_sim": args.semantic_min_sim,
        "semantic_search": args.semantic_search,
        "embed_triples": True if args.triples else None,
        "llm_prompts": _prompt_list(args.llm_prompts),
    }
    try:
        return GraphSettings(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise InputError(f"invalid graph setting: {problems}") from None


def _prompt_list(text: str | None) -> tuple[str, ...] | None:
    return tuple(p.strip() for p in text.split(",") if p.strip()) if text else None


def build(args: argparse.Namespace) -> None:
    """Build both graphs of an index (atomic, like every write); on a cluster with --cluster."""
    partitions_need_a_cluster(args, "graph build")
    settings = graph_settings(args)
    read_manifest(index_dir(args))  # no index there: said before a cluster is joined
    with graph_tasks(args) as tasks:
        info = build_graphs(index_dir(args), settings, not args.quiet, tasks)
    counts, timings = info["counts"], info["timings"]
    edges = ", ".join(f"{k} {v}" for k, v in counts["edges"].items())
    print(
        f"graphs of {index_dir(args)}: {counts['chunks']} chunks; edges {edges}; "
        f"mean degree {counts['mean_degree']:.1f}; {counts['entities']} entities, "
        f"{counts['triples']} triples ({counts['triples_per_chunk']:.1f} per chunk); "
        f"extraction {timings['extract_seconds']:.1f}s, graphs {timings['graph_seconds']:.1f}s, "
        f"triple embedding {timings['triple_embed_seconds']:.1f}s"
    )
    if reason := sparse_reason(counts):
        print(f"warning: {reason}", file=sys.stderr)


@contextmanager
def graph_tasks(args: argparse.Namespace) -> Iterator[GraphTasks | None]:
    """Yield who reads the chunks and finds the neighbours: a cluster's tasks, or this process.

    ``None`` (this process) without --cluster.
    """
    if not args.cluster:
        yield None
        return
    from hopgraph.graph_store.cluster.connect import connected, require_ray

    require_ray()
    from hopgraph.graph_store.cluster.graph_parts import graphs_on
    from hopgraph.graph_store.cluster.neighbours import neighbours_on
    from hopgraph.graph_store.cluster.readings import readings_on

    with connected(args.cluster) as ray:
        yield GraphTasks(
            neighbours_on(ray, args.partitions),
            readings_on(ray, args.partitions),
            parts=graphs_on(ray),
        )


def triples(args: argparse.Namespace) -> None:
    """Embed the knowledge graph's triples (one write; nothing when they are there)."""
    before = read_manifest(index_dir(args)).graph
    manifest = embed_triple_vectors(index_dir(args), show_progress=not args.quiet)
    assert manifest.graph is not None
    if before is not None and before["settings"].get("embed_triples"):
        print(f"{index_dir(args)}: the triples are embedded already")
        return
    seconds = manifest.graph["timings"]["triple_embed_seconds"]
    print(
        f"embedded {manifest.graph['triples_embedded']} triples of {index_dir(args)} in "
        f"{seconds:.1f}s (generation {manifest.generation})"
    )


def _distribution(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {"min": 0, "median": 0, "mean": 0, "p90": 0, "max": 0}
    return {
        "min": float(values.min()),
        "median": float(np.median(values)),
        "mean": float(values.mean()),
        "p90": float(np.percentile(values, 90)),
        "max": float(values.max()),
    }


def stats(args: argparse.Namespace) -> None:
    """Print node and edge counts by type and degree distributions."""
    with Index.open(index_dir(args)) as index:
        graph, knowledge = index.passage_graph, index.knowledge_graph
        report = {
            "chunks": len(graph.ids),
            "edges": {k: graph.edge_count(k) for k in EDGE_TYPES},
            "degree": {k: _distribution(graph.degrees([k])) for k in EDGE_TYPES}
            | {"all": _distribution(graph.degrees())},
            "entities": len(knowledge.entities),
            "triples": len(knowledge.triples),
            "triples_per_chunk": len(knowledge.triples) / max(len(graph.ids), 1),
            "entities_per_chunk": float(np.diff(knowledge.chunk_entity.indptr).mean()),
            "entity_degree_triples": _distribution(np.diff(knowledge.entity_triple.indptr)),
            "entity_degree_chunks": _distribution(np.diff(knowledge.entity_chunk.indptr)),
            "build": index.manifest.graph,
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"passage graph: {report['chunks']} chunks")
    print(f"  {'edges':<10}" + "".join(f"{k} {v:<10}" for k, v in report["edges"].items()))
    for kind, d in report["degree"].items():
        print(
            f"  degree {kind:<11} min {d['min']:.0f}  median {d['median']:.0f}  "
            f"mean {d['mean']:.1f}  p90 {d['p90']:.0f}  max {d['max']:.0f}"
        )
    print(
        f"knowledge graph: {report['entities']} entities, {report['triples']} triples "
        f"({report['triples_per_chunk']:.1f} per chunk, "
        f"{report['entities_per_chunk']:.1f} entities per chunk)"
    )
    for name in ("entity_degree_triples", "entity_degree_chunks"):
        d = report[name]
        print(
            f"  {name.replace('_', ' ')}: median {d['median']:.0f}  mean {d['mean']:.1f}  "
            f"p90 {d['p90']:.0f}  max {d['max']:.0f}"
        )
    build_info = report["build"]
    print(f"extractor: {build_info['settings']['extractor']}, built {build_info['built_at']}")


def export(args: argparse.Namespace) -> None:
    """Write a graph as GraphML (opens in Gephi and networkx)."""
    out = Path(args.out)
    with Index.open(index_dir(args)) as index:
        if args.graph == "passages":
            graph = index.passage_graph.to_networkx()
            for node, data in graph.nodes(data=True):
                chunk = index.chunk(node)
                data.update(title=chunk.title, doc_id=chunk.doc_id, position=chunk.position)
        else:
            graph = index.knowledge_graph.to_networkx()
    out.parent.mkdir(parents=True, exist_ok=True)
    write_output(out, lambda partial: nx.write_graphml(graph, partial))
    print(f"wrote {out}: {graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges")


def coverage(args: argparse.Namespace) -> None:
    """Measure bridge coverage on a benchmark split (building the index and graphs if needed)."""
    from hopgraph.evals.coverage import bridge_coverage
    from hopgraph.evals.datasets import load_questions
    from hopgraph.evals.runner import eval_index

    data = Path(args.data)
    questions = load_questions(data, args.split, args.limit)
    settings = graph_settings(args)
    index_path = Path(args.index) if args.index else None
    index = eval_index(data, settings_from(args), index_path, not args.quiet)
    built = index.manifest.graph
    if args.rebuild or built is None or GraphSettings(**built["settings"]) != settings:
        index.close()
        build_graphs(index.directory, settings, show_progress=not args.quiet)
        index = Index.open(index.directory)
    with index:
        report = bridge_coverage(index, questions, hops=args.hops)
        counts = index.manifest.graph["counts"]
    if args.json:
        print(json.dumps(report | {"counts": counts}, indent=2))
        return
    print(
        f"{data.name}/{args.split}: {report['questions']} multi-document questions, "
        f"gold documents connected within {report['hops']} hops"
    )
    for name, row in report["passage_graph"].items():
        print(
            f"  passage graph {name:<20} {row['coverage']:5.1f}%   "
            f"mean degree {row['mean_degree']:.1f}"
        )
    for name, row in report["knowledge_graph"].items():
        print(
            f"  knowledge graph {name:<18} {row['coverage']:5.1f}%   "
            f"mean degree {row['mean_degree']:.1f}"
        )
    kinds = ", ".join(f"{k} {v:.1f}%" for k, v in sorted(report["by_type"].items()))
    print(f"  passage graph (all) by question type: {kinds}")
    shapes = ", ".join(f"{k} {v:.1f}%" for k, v in report["by_shape"].items())
    print(f"  passage graph (all) by question shape (comparison = or/both/same): {shapes}")
    print(f"  {counts['triples_per_chunk']:.1f} triples per chunk, {counts['entities']} entities")
