"""The subcommands of the CLI, one function each: parse-free, they take the argparse namespace."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hopgraph.core.errors import InputError
from hopgraph.core.index_settings import IndexSettings
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import WhereValue, parse_cli
from hopgraph.tools import RETRIEVERS, make_retriever, parse_methods
from hopgraph.tools.expand import Expansion, expand_hits
from hopgraph.tools.registry import parse_weights

from .cli_options import index_dir
from .formatting import format_hits

if TYPE_CHECKING:  # the write path (loaders, parsers, graph building) is imported by writes
    from hopgraph.evals.datasets import Question
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
    if args.cluster:
        from hopgraph.graph_store.cluster.connect import require_ray

        require_ray()  # before reading the corpus: say at once that the extra is missing
        from hopgraph.graph_store.cluster.build import build_index_on

        report = build_index_on(
            args.cluster,
            _corpus_for_cluster(args),
            index_dir(args),
            settings,
            args.partitions,
            not args.quiet,
            replace=args.force,
        )
    else:
        from hopgraph.graph_store.index.build import build_index

        docs = load(args).documents
        report = build_index(docs, index_dir(args), settings, not args.quiet, replace=args.force)
    _report("built", report)
    print(f"next: `hopgraph graph build --index {index_dir(args)}` for the graph methods")


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

    With --cluster, tasks embed its new documents and bring the lists up to date
    (cluster/embed.py, cluster/neighbours.py); this process writes the rest and commits.
    """
    partitions_need_a_cluster(args, "write")
    if not args.cluster:
        yield None, None
        return
    from hopgraph.graph_store.cluster.connect import connected, require_ray

    require_ray()
    from hopgraph.core.settings import settings
    from hopgraph.graph_store.cluster.embed import embedded_on
    from hopgraph.graph_store.cluster.neighbours import updated_on
    from hopgraph.graph_store.index.graph_build import GraphTasks

    with connected(args.cluster, {"HOPGRAPH_DEVICE": settings().device}) as ray:
        tasks = GraphTasks(update=updated_on(ray, args.partitions))
        yield embedded_on(ray, args.partitions), tasks


def sync(args: argparse.Namespace) -> None:
    """Make an index match a folder (or file): add new, replace changed, prune removed."""
    if args.watch:
        from .watch_command import watch

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


def retrieve(args: argparse.Namespace) -> None:
    """Print the top-k passages for a query."""
    where = where_of(args.where)
    expansion = Expansion.parse(args.expand) if args.expand else None
    with Index.open(index_dir(args)) as idx:
        retriever = make_retriever(args.method, idx, preset=args.preset)
        hits = retriever.retrieve(args.query, args.k, where)
        if expansion is not None:
            hits = expand_hits(idx, hits, expansion)
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], indent=2, ensure_ascii=False))
    else:
        print(format_hits(hits) if hits else "no passages matched")


def where_of(options: Sequence[str] | None) -> dict[str, WhereValue] | None:
    """Parse ``--where`` options into a filter (``None`` when there are none)."""
    return parse_cli(options)


def config_show(args: argparse.Namespace) -> None:
    """Print the effective settings and where each came from."""
    from hopgraph.core.settings import describe_settings, settings_file

    rows = describe_settings(index=args.index)
    if args.json:
        print(json.dumps({n: {"value": v, "from": w} for n, v, w in rows}, indent=2))
        return
    file = settings_file({"index": args.index} if args.index else None)
    print(f"settings file: {file or 'none'}")
    width = max(len(n) for n, _, _ in rows)
    for name, value, where in rows:
        print(f"{name:<{width}}  {value or '-':<40}  {where}")


def info(args: argparse.Namespace) -> None:
    """Show an index's manifest."""
    with Index.open(index_dir(args)) as idx:
        manifest = idx.manifest
        if args.json:
            print(manifest.model_dump_json(indent=2))
            return
        s = manifest.settings
        print(f"index      {idx.directory}")
        print(f"documents  {manifest.counts['documents']}   chunks {manifest.counts['chunks']}")
        dims = manifest.embedder["dimension"]
        print(f"model      {s.model} ({dims}-d), chunks of ~{s.chunk_tokens} tokens")
        print(f"vectors    {idx.location.describe()}")
        print(
            f"built      {manifest.created_at}, updated {manifest.updated_at} "
            f"(generation {manifest.generation}, format {manifest.format_version})"
        )
        print(f"methods    {', '.join(RETRIEVERS)}")


def evaluate(args: argparse.Namespace) -> None:
    """Evaluate methods on a benchmark split and write the report."""
    from hopgraph.agents.registry import MULTI_STEP, agent_methods, needs_triple_vectors
    from hopgraph.core.settings import named_setting
    from hopgraph.evals.answers import evaluate_answers, format_answer_table
    from hopgraph.evals.datasets import load_questions
    from hopgraph.evals.report import format_table, write_report
    from hopgraph.evals.runner import check_gold_coverage, eval_index, run_methods

    agents = [m.strip() for m in args.methods.split(",") if m.strip() in MULTI_STEP]
    if agents and not args.answers:
        raise InputError(
            f"{', '.join(agents)} answer questions rather than rank passages",
            "add --answers to score their answers (EM / F1) and the passages they gathered",
        )
    choices = agent_methods() if args.answers else None  # with --answers, agents too
    methods = parse_methods(args.methods, choices)
    options = weights_options(args)  # checked before an index is built
    if (options or args.guard) and args.answers:
        raise InputError(
            "--weights and --guard apply to ranking passages, not to --answers runs",
            "drop --answers to score the methods' rankings",
        )
    for method, chosen in guard_options(args.guard, methods).items():
        options.setdefault(method, {}).update(chosen)
    if args.answerer != "endpoint" and not args.answers:
        raise InputError(f"--llm {args.answerer} answers questions", "add --answers")
    data = Path(args.data)
    questions = load_questions(data, args.split, args.limit)
    chat = answer_model(args.answerer, questions) if args.answers else None
    settings = settings_from(args)
    named_model = args.model or named_setting("model")
    index_path = Path(args.index) if args.index else None
    graphs = any(m not in RETRIEVERS or RETRIEVERS[m].needs_graphs for m in methods)
    triples = needs_triple_vectors(methods)
    opened = eval_index(
        data, settings, index_path, not args.quiet, named_model, graphs, triples, args.search
    )
    with opened as idx:
        missing = check_gold_coverage(idx, questions)
        if missing:
            print(f"warning: {missing} gold passage ids are not in the index", flush=True)
        if chat is not None:
            scores, rows = evaluate_answers(
                idx, questions, methods, chat, not args.quiet, preset=args.preset
            )
        else:
            scores, rows = run_methods(
                idx,
                questions,
                methods,
                show_progress=not args.quiet,
                options=options,
                preset=args.preset,
            )
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = (
            Path(args.out) if args.out else Path("runs") / f"eval-{data.name}-{args.split}-{stamp}"
        )
        config = {
            "data": str(data),
            "split": args.split,
            "questions": len(questions),
            "methods": methods,
            "preset": args.preset,
            "guard": args.guard or "preset",
            "search": args.search,
            "index": str(idx.directory),
            "settings": idx.manifest.settings.model_dump(),
            "versions": idx.manifest.versions,
        }
    report, per_question = write_report(out, config, scores, rows)
    chunks = idx.manifest.counts["chunks"]
    print(
        f"\n{data.name} / {args.split}: {len(questions)} questions, {chunks} chunks, "
        f"preset {args.preset}\n"
    )
    print(format_answer_table(scores) if chat is not None else format_table(scores))
    print(f"\nreport: {report}\nper question: {per_question}")


def guard_options(guard: str | None, methods: list[str]) -> dict[str, dict[str, Any]]:
    """Turn --guard into options of the methods that have the guard (tools/guard.py)."""
    if guard is None:
        return {}
    from hopgraph.tools.guard import KEEP, Guarded

    chosen: dict[str, Any] = {"off": {"keep": 0}, "always": {"keep": KEEP, "selective": False}}.get(
        guard, {"keep": KEEP, "selective": True}
    )
    guarded = [m for m in methods if m in RETRIEVERS and issubclass(RETRIEVERS[m], Guarded)]
    return {m: dict(chosen) for m in guarded}


def weights_options(args: argparse.Namespace) -> dict[str, dict[str, Path | bool]]:
    """Turn --weights METHOD=FILE (and --gnn-weights FILE) into retriever options."""
    given = list(args.weights) + ([f"gnn_ret={args.gnn_weights}"] if args.gnn_weights else [])
    return parse_weights(given)


def demo(args: argparse.Namespace) -> None:
    """Index the bundled sample and answer its questions by retrieval."""
    from hopgraph.demo import run_demo

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the demo is offline: its model ships here

    run_demo(Path(args.index) if args.index else None, args.method, args.k, not args.quiet)


def mcp(args: argparse.Namespace) -> None:
    """Serve the index over MCP until the client disconnects or Ctrl-C."""
    from .core.settings import settings
    from .mcp_server import serve

    secret = settings().token
    token = secret.get_secret_value() if secret else None
    from hopgraph.graph_store.index.live import LiveIndex

    hosts = [*settings().allow_hosts, *args.allow_host]
    with index_opener(args) as opener, LiveIndex(index_dir(args), opener=opener) as live:
        serve(live, args.http, token, hosts)


def ui(args: argparse.Namespace) -> None:
    """Serve the web page over the index until Ctrl-C."""
    from .core.network import parse_host_port
    from .core.settings import settings
    from .ui_server import serve

    parse_host_port(args.http, "127.0.0.1:8766")  # refused before the index is opened
    secret = settings().token
    with index_opener(args) as opener:
        token = secret.get_secret_value() if secret else None
        hosts = [*settings().allow_hosts, *args.allow_host]
        serve(index_dir(args), args.http, token, opener, hosts)


@contextmanager
def index_opener(args: argparse.Namespace) -> Iterator[Callable[[Path, str | None], Index]]:
    """Yield how a server opens each generation: here, or as a router of shards (--shards)."""
    if not args.shards:
        if args.cluster:
            raise InputError("--cluster here serves from shards", "add --shards S (e.g. 2)")
        yield Index.open
        return
    if not args.cluster:
        raise InputError("--shards serves from a Ray cluster", "add --cluster ADDRESS (or local)")
    from hopgraph.graph_store.cluster.connect import require_ray

    require_ray()
    from hopgraph.graph_store.cluster.serve import shard_opener

    with shard_opener(args.cluster, args.shards, args.replicas) as opened:
        yield opened


def explain(args: argparse.Namespace) -> None:
    """Draw the evidence for a question as an HTML page."""
    from .explain import explain as find_evidence
    from .explain import render_page

    out = Path(args.out)
    if out.is_dir() or not out.parent.is_dir():  # checked before any work is done
        raise InputError(
            f"--out {out}: " + ("is a folder" if out.is_dir() else f"{out.parent} does not exist"),
            "give a file path in an existing folder, e.g. --out evidence.html",
        )
    gold = {g.strip() for g in (args.gold or "").split(",") if g.strip()}
    with Index.open(index_dir(args)) as idx:
        graph = find_evidence(idx, args.question, args.method, args.k, gold, args.preset)
    out.write_text(render_page(graph), encoding="utf-8")
    print(
        f"wrote {out}: {len(graph.passages)} passages, {len(graph.entities)} entities, "
        f"{len(graph.edges)} edges"
    )


def answer_model(llm: str, questions: Sequence[Question]) -> Any:
    """Return the chat model of ``--llm``: the endpoint, the local model, or an oracle each."""
    from .core.llm import choose_chat

    if llm != "oracle":
        return choose_chat(llm)
    from hopgraph.evals.oracle import OracleChatModel

    missing = [q.id for q in questions if not q.decomposition]
    if missing:
        raise InputError(
            f"--llm oracle needs each question's gold decomposition; {len(missing)} have none "
            f"(first: {missing[0]})",
            "use MuSiQue (../shared/data/musique), whose questions carry a decomposition",
        )
    return lambda q: OracleChatModel(question=q.question, decomposition=list(q.decomposition))
