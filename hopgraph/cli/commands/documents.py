"""The document commands: index, add, sync, docs and delete, and the writes they share."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from hopgraph.cli.options import index_dir
from hopgraph.core.errors import InputError
from hopgraph.core.index_settings import IndexSettings
from hopgraph.graph_store import Index

if TYPE_CHECKING:  # the write path (loaders, parsers, graph building) is imported by writes
    from hopgraph.graph_store.documents.catalog import Catalog
    from hopgraph.graph_store.documents.loaders import Loaded, LoadReport
    from hopgraph.graph_store.documents.schema import Document
    from hopgraph.graph_store.index.changes import Embed, SyncReport
    from hopgraph.graph_store.index.graph_build import GraphTasks
    from hopgraph.graph_store.index.writes import WriteReport


SHOWN_IDS = 20
"""Document ids a sync names one per line."""


def settings_from(args: argparse.Namespace) -> IndexSettings:
    """Build index settings from CLI options over ``HOPGRAPH_*`` variables."""
    try:
        return IndexSettings.from_settings(
            model=args.model,
            chunk_tokens=args.chunk_tokens,
            batch_size=args.batch_size,
            chroma_url=args.chroma_url,
            embeddings_url=getattr(args, "embeddings_url", None),
            vector_dtype=getattr(args, "vector_dtype", None),
        )
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise InputError(f"invalid setting: {problems}") from None


def _report(action: str, report: WriteReport) -> None:
    print(
        f"{action} {report.directory}: {report.documents} documents, {report.chunks} chunks "
        f"(+{report.added_chunks} / -{report.removed_chunks}) in {report.seconds:.1f}s "
        f"(embedding {report.embed_seconds:.1f}s)"
    )
    if report.driver_peak_rss_mb is not None:  # a cluster's build: its processes apart
        print(
            f"peak RSS: this process (the driver) {report.driver_peak_rss_mb:,.0f} MB, the "
            f"largest task {report.task_peak_rss_mb or 0:,.0f} MB"
        )


def load(args: argparse.Namespace, verbose: bool = True) -> Loaded:
    """Load SOURCE with the command's source options (--include, --strict, ...); print a summary.

    Not ``verbose`` (each batch of a watched folder): only the documents that could not be read
    and the warnings, not the summary nor the files of other kinds.
    """
    from hopgraph.graph_store.documents.loaders import NOT_A_DOCUMENT, load_corpus

    autodoc = getattr(args, "autodoc_source", None)
    loaded = load_corpus(
        args.source, args.include or (), args.exclude or (), args.strict, autodoc_source=autodoc
    )
    report = loaded.report
    if not verbose:
        for name, why in [*report.skipped, *report.warnings]:
            if not why.startswith(NOT_A_DOCUMENT):
                print(f"warning: {name}: {why}", file=sys.stderr)
        return loaded
    print_summary(report)
    return loaded


def print_summary(report: LoadReport) -> None:
    """Print what a load read on stdout, and each document skipped or warned of on stderr."""
    lines = report.summary()
    print(lines[0])
    for line in lines[1:]:
        print(f"warning: {line.strip()}", file=sys.stderr)


def partitions_need_a_cluster(args: argparse.Namespace, what: str) -> None:
    """Refuse --partitions without --cluster (``what``: "build" or "write")."""
    if args.partitions and not args.cluster:
        raise InputError(
            f"--partitions is for a {what} on a cluster", "add --cluster ADDRESS (or local)"
        )


def index(args: argparse.Namespace) -> None:
    """Build an index from a corpus (on a Ray cluster with --cluster)."""
    settings = settings_from(args)
    partitions_need_a_cluster(args, "build")
    # --json: stdout holds the one JSON object; what a build says on the way goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        report = _built(args, settings)
        if not args.json:
            _report("built", report)
        print(f"next: `hopgraph graph build --index {index_dir(args)}` for the graph methods")
    if args.json:
        print(json.dumps({**dataclasses.asdict(report), "directory": str(report.directory)}))


def _built(args: argparse.Namespace, settings: IndexSettings) -> WriteReport:
    """Build the index ``args`` name, here or on the cluster; return what the build did."""
    if args.cluster:
        from hopgraph.graph_store.cluster.connect import require_ray

        require_ray()  # before reading the corpus: say at once that the extra is missing
        from hopgraph.graph_store.cluster.build import build_index_on

        return build_index_on(
            args.cluster,
            _corpus_for_cluster(args),
            index_dir(args),
            settings,
            args.partitions,
            not args.quiet,
            replace=args.force,
        )
    from hopgraph.graph_store.index.build import build_index

    docs = load(args).documents
    return build_index(docs, index_dir(args), settings, not args.quiet, replace=args.force)


def _corpus_for_cluster(args: argparse.Namespace) -> Sequence[Document] | Catalog:
    """Return a JSONL corpus's catalog (its tasks read their own lines), or the documents."""
    from hopgraph.graph_store.documents.catalog import catalog_jsonl
    from hopgraph.graph_store.documents.loaders import jsonl_corpus

    path = jsonl_corpus(args.source)
    if path is None:  # a folder of files: read here, handed to the tasks
        return load(args).documents
    catalog = catalog_jsonl(path, args.strict)
    print_summary(catalog.report)
    return catalog


def add(args: argparse.Namespace) -> None:
    """Add documents to an index."""
    from hopgraph.graph_store.index.changes import add_documents

    docs = load(args).documents
    with write_tasks(args) as (embed, tasks):
        report = add_documents(index_dir(args), docs, not args.quiet, embed, tasks)
    _report("updated", report)


@contextmanager
def write_tasks(args: argparse.Namespace) -> Iterator[tuple[Embed | None, GraphTasks | None]]:
    """Yield who embeds a write and updates its neighbour lists: here (None), or the cluster.

    With --cluster, tasks embed its new documents and bring the lists and the offline readings
    up to date (cluster/embed.py, cluster/neighbours.py, cluster/reading_update.py); this
    process writes the rest and commits.
    """
    partitions_need_a_cluster(args, "write")
    if not args.cluster:
        yield None, None
        return
    from hopgraph.graph_store.cluster.connect import connected, require_ray

    require_ray()
    from hopgraph.core.settings import settings
    from hopgraph.graph_store.cluster.embed import embedded_on
    from hopgraph.graph_store.cluster.graph_parts import graphs_on
    from hopgraph.graph_store.cluster.list_update import updated_on
    from hopgraph.graph_store.cluster.reading_update import reading_updated_on
    from hopgraph.graph_store.cluster.tasks import ray_map
    from hopgraph.graph_store.index.graph_build import GraphTasks

    with connected(args.cluster, {"HOPGRAPH_DEVICE": settings().device}) as ray:
        tasks = GraphTasks(
            update=updated_on(ray, args.partitions),
            reread=reading_updated_on(ray),
            parts=graphs_on(ray),
            stores=ray_map(ray),
        )
        yield embedded_on(ray, args.partitions), tasks


def sync(args: argparse.Namespace) -> None:
    """Make an index match a folder (or file): add new, replace changed, prune removed."""
    if args.watch:
        from .watch import watch

        watch(args, sync_once, index_dir(args))
    else:
        sync_once(args, True)


def sync_once(args: argparse.Namespace, verbose: bool = True) -> SyncReport:
    """Sync once and return the report; ``verbose``: print its summary and the ids touched."""
    from hopgraph.graph_store.documents.loaders import quote_ids
    from hopgraph.graph_store.index.changes import sync_documents

    loaded = load(args, verbose)
    root = Path(args.source)
    unread = frozenset(
        str((root / name).resolve() if root.is_dir() else root.resolve())
        for name, _ in loaded.report.skipped
    )
    with write_tasks(args) as (embed, tasks):
        report = sync_documents(
            index_dir(args),
            loaded.documents,
            scope=root,
            prune=args.prune,
            keep_sources=unread,
            show_progress=not args.quiet and verbose,
            embed=embed,
            tasks=tasks,
        )
    if not verbose:
        return report
    print(
        f"synced {report.directory}: {len(report.added)} added, {len(report.changed)} changed, "
        f"{len(report.removed)} removed, {report.unchanged} unchanged; {report.documents} "
        f"documents, {report.chunks} chunks in {report.seconds:.1f}s "
        f"(embedding {report.embed_seconds:.1f}s)"
    )
    for label, ids in (("added", report.added), ("changed", report.changed)):
        for doc_id in ids[:SHOWN_IDS]:
            print(f"  {label} {doc_id}")
    for doc_id in report.removed[:SHOWN_IDS]:
        print(f"  removed {doc_id}")
    if report.missing:
        print(
            f"warning: {len(report.missing)} indexed document(s) from {root} are gone "
            f"({quote_ids(report.missing)}); kept: --prune deletes them",
            file=sys.stderr,
        )
    return report


def docs(args: argparse.Namespace) -> None:
    """List the documents of an index."""
    with Index.open(index_dir(args)) as idx:
        records = idx.documents
    if args.json:
        print(json.dumps([r.to_dict() for r in records], indent=2, ensure_ascii=False))
        return
    if not records:
        print("no documents")
        return
    width = min(max(len(r.id) for r in records), 48)
    print(f"{'id':<{width}}  {'chunks':>6}  {'hash':<16}  {'indexed at':<25}  title / source")
    for r in records:
        print(
            f"{r.id:<{width}}  {r.chunks:>6}  {r.hash or '-':<16}  {r.indexed_at:<25}  "
            f"{r.title}" + (f"  ({r.source})" if r.source else "")
        )
    print(f"{len(records)} documents")


def delete(args: argparse.Namespace) -> None:
    """Delete documents from an index."""
    from hopgraph.graph_store.index.changes import delete_documents

    ids = list(args.doc_ids)
    if args.ids_file:
        try:
            ids += [
                x.strip() for x in Path(args.ids_file).read_text("utf-8").splitlines() if x.strip()
            ]
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"{args.ids_file}: cannot be read ({err})") from err
    if not ids:
        raise InputError("no document ids given", "name them, or use --ids-file FILE")
    with write_tasks(args) as (_, tasks):
        report = delete_documents(index_dir(args), ids, tasks)
    _report("updated", report)
