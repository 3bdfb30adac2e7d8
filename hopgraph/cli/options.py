"""Options shared by the CLI's commands, and handlers imported only when their command runs.

Nothing here imports more than the core and the method names: building the parser (and so
`hopgraph --help`) must stay a fraction of a second.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hopgraph.core.config import DEVICES, LLM_CHOICES, positive_number
from hopgraph.core.errors import InputError
from hopgraph.core.network import checked_k

DEMO_INDEX = Path(".hopgraph") / "demo-index"
"""Where `hopgraph demo` builds its index unless --index says otherwise."""

Handler = Callable[[argparse.Namespace], Any]


def lazy(target: str) -> Handler:
    """Return a handler that imports ``module:function`` (under hopgraph) when it is called."""
    module, name = target.split(":")

    def run(args: argparse.Namespace) -> Any:
        return getattr(importlib.import_module(f"hopgraph.{module}"), name)(args)

    run.__qualname__ = run.__name__ = name
    return run


def index_dir(args: argparse.Namespace) -> Path:
    """Return the index directory the user named, or the default."""
    if args.index:
        return Path(args.index)
    from hopgraph.core.settings import default_index_dir  # pydantic: not for parsing alone

    return default_index_dir()


def positive(text: str) -> int:
    """Parse a positive whole number (argparse ``type``; core.config.positive_number)."""
    try:
        return positive_number(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def passages(text: str) -> int:
    """Parse ``-k`` as every surface parses k (core.network.checked_k: 1 to 50; argparse type)."""
    try:
        return checked_k(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(err.message) from None


def output_file(text: str) -> Path:
    """Parse an ``--out FILE`` (argparse ``type``): a new file, or a regular file to replace.

    A folder, a device, a pipe or a symbolic link at the path is refused, before any work:
    writing there would replace what is there (/dev/full, another file through a link).
    """
    path = Path(text)
    if path.is_symlink():
        what = f"a symbolic link (to {path.readlink()})"
    elif path.is_dir():
        what = "a folder"
    elif path.exists() and not path.is_file():
        what = "not a regular file (a device, a pipe or a socket)"
    else:
        return path
    raise argparse.ArgumentTypeError(
        f"{text} is {what}: give the path of a new file or of a regular file to replace"
    )


def write_output(path: Path, content: str | Callable[[Path], object]) -> None:
    """Write an output file whole: into a temporary file beside it, then renamed over it.

    ``content``: the text, or what writes the file at the path it is given (a library's
    writer, as networkx's GraphML).
    """
    partial = path.with_name(f".{path.name}.partial")
    try:
        if isinstance(content, str):
            partial.write_text(content, encoding="utf-8")
        else:
            content(partial)
        partial.replace(path)  # a reader never sees half a file; a failure leaves the old one
    finally:
        partial.unlink(missing_ok=True)


def wait_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--wait SECONDS``: how long a reader waits for another process's write."""
    parser.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="if another process is writing the index (a method's first use embeds its "
        "triples; an eval builds its cached index), wait this long for it, saying for whom, "
        "then go on (default 600, $HOPGRAPH_WAIT; 0: give up at once)",
    )


def index_option(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    """Add ``--index DIR``."""
    parser.add_argument(
        "--index",
        metavar="DIR",
        help=f"index directory (default: {default or '$HOPGRAPH_INDEX or ./hopgraph-index'})",
    )


def quiet_option(parser: argparse.ArgumentParser) -> None:
    """Add ``-q/--quiet`` (no progress bars)."""
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def preset_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--preset tuned|paper``."""
    parser.add_argument(
        "--preset",
        choices=["tuned", "paper"],
        default="tuned",
        help="method settings: tuned (our best on dev, default) or paper (each method as its "
        "paper has it, as far as our models allow; docs/methods.md lists every difference)",
    )


def llm_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--llm``: who writes the answers."""
    parser.add_argument(
        "--llm",
        choices=LLM_CHOICES,
        default=None,
        help="who writes the answers: endpoint (the OpenAI-compatible server of "
        "HOPGRAPH_LLM_*: OpenAI, Ollama, vLLM, llama.cpp), local (SmolLM2-135M-Instruct in "
        "process, offline; [local] extra), none (evidence passages only) or auto (default, or "
        "$HOPGRAPH_LLM: the endpoint if one is configured, else evidence only)",
    )


def device_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--device`` and ``--processes``: where the embedding model runs."""
    parser.add_argument(
        "--device",
        choices=DEVICES,
        help="where the embedding model runs: auto (default, or $HOPGRAPH_DEVICE: a CUDA GPU, "
        "else Apple MPS, else the CPU), cpu, cuda (fp16) or mps",
    )
    parser.add_argument(
        "--processes",
        type=positive,
        metavar="N",
        help="CPU worker processes that embed (default 1, or $HOPGRAPH_EMBED_PROCESSES; "
        "for machines with many cores)",
    )


def build_options(parser: argparse.ArgumentParser) -> None:
    """Add the options of a new index: model, chunk size, batch size, Chroma server."""
    device_options(parser)
    parser.add_argument(
        "--model",
        help="embedding model: 'all-MiniLM-L6-v2' (default, ships with hopgraph), any "
        "sentence-transformers name (fetched from the Hugging Face hub unless HF_HUB_OFFLINE=1) "
        "or local folder, the name a --embeddings-url endpoint serves, or 'hashing' (tests)",
    )
    parser.add_argument(
        "--embeddings-url",
        metavar="URL",
        help="take vectors from an OpenAI-compatible embeddings endpoint (e.g. "
        "http://127.0.0.1:11434/v1 for Ollama) serving --model; cached by text",
    )
    parser.add_argument(
        "--chunk-tokens",
        type=positive,
        metavar="N",
        help="split documents longer than N model tokens (default 200)",
    )
    parser.add_argument(
        "--batch-size",
        type=positive,
        metavar="N",
        help="passages per embedding batch (default 32)",
    )
    parser.add_argument(
        "--chroma-url",
        metavar="URL",
        help="use a Chroma server (e.g. http://127.0.0.1:8000) instead of the embedded store",
    )
    parser.add_argument(
        "--vector-dtype",
        choices=["float32", "float16"],
        help="how the vector table stores vectors (default float32; float16 halves its memory "
        "and disk, cosines change in the fourth decimal; docs/scaling.md)",
    )


CLUSTER_WORK = {
    "build": "partitions of whole documents are chunked, embedded and written by tasks, and "
    "this process commits the index",
    "write": "partitions of whole documents are chunked and embedded by tasks, tasks (each a "
    "range of the chunks) bring the semantic neighbour lists up to date, and this process "
    "writes and commits the change",
    "delete": "tasks, each for a range of the chunks, bring the semantic neighbour lists up to "
    "date, and this process writes and commits the change",
    "graphs": "tasks, each for a range of chunks, read the chunks (the offline extractor) and "
    "find the semantic neighbour lists, reading the index folder (at the same path on every "
    "node); this process builds and commits the graphs",
}


def cluster_options(parser: argparse.ArgumentParser, work: str = "build") -> None:
    """Add ``--cluster`` and ``--partitions``: part of a write done on a Ray cluster.

    ``work``: what the tasks do, a key of :data:`CLUSTER_WORK` (a new index, a write to one,
    the graphs).
    """
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS|local",
        help="write on a Ray cluster (the extra hopgraph[cluster]): its head's HOST:PORT, or "
        "`local` to start one on this machine for the write (token authentication on); "
        f"{CLUSTER_WORK[work]} (docs/scaling.md)",
    )
    cut = "chunks are cut into, each a contiguous range" if work in ("graphs", "delete") else (
        "documents are cut into, each a range of whole documents")  # fmt: skip
    parser.add_argument(
        "--partitions",
        type=positive,
        metavar="P",
        help=f"with --cluster: tasks the {cut}"
        + (" (and ranges of the chunks the lists' update is cut into)" if work == "write" else "")
        + " (default: the cluster's CPUs"
        + ("" if work in ("graphs", "delete") else ", at most one per document")
        + ")"
        + ("" if work == "build" else "; a step over more than P x 131,072 chunks takes more"),
    )


def shard_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--cluster``, ``--shards`` and ``--replicas``: serve from shards on a Ray cluster."""
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS|local",
        help="with --shards: the Ray cluster the shards run on (the extra hopgraph[cluster]): "
        "its head's HOST:PORT, or `local` to start one here (docs/scaling.md)",
    )
    parser.add_argument(
        "--shards",
        type=positive,
        metavar="S",
        help="serve the index from S shards on the cluster, each a range of its partitions' "
        "vectors and postings, memory-mapped by Ray Serve replicas; this process routes and "
        "ranks as one index does (default: serve it here)",
    )
    parser.add_argument(
        "--replicas",
        type=positive,
        default=1,
        metavar="R",
        help="with --shards: replicas of each shard (default 1; 2 or more ride out a lost one)",
    )


def where_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--where FILTER`` (repeatable) to a command that retrieves."""
    parser.add_argument(
        "--where",
        action="append",
        metavar="FILTER",
        help="only passages that pass FILTER (repeatable, all must hold): KEY=VALUE, "
        "KEY!=VALUE, 'KEY in A|B|C', KEY*=TEXT (contains), KEY^=TEXT (starts with), "
        "KEY~=ITEM (section~=Signals: a heading at any level; tags~=pip: a list entry). KEY: "
        "doc_id, title, source, section or a document's metadata (JSONL keys, front matter)",
    )


def expand_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--expand section|neighbours[:N]`` to a command that shows passages."""
    from hopgraph.tools.shared.expand import EXPAND_HELP

    parser.add_argument("--expand", metavar="section|neighbours[:N]", help=EXPAND_HELP)


def method_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--method``: any agent or retriever of the registries (ask, chat)."""
    from hopgraph.agents.registry import DEFAULT_METHOD, agent_methods

    parser.add_argument(
        "--method",
        default=DEFAULT_METHOD,
        choices=agent_methods(),
        metavar="METHOD",
        help=f"answering method: one of {', '.join(agent_methods())} (default {DEFAULT_METHOD})",
    )


def allow_host_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--allow-host`` to an HTTP server's command (core.network.HostGuard)."""
    parser.add_argument(
        "--allow-host",
        metavar="NAME",
        action="append",
        default=[],
        help="a host name clients may address the server by, besides 127.0.0.1, localhost and "
        "the --http address (repeatable; also the allow_hosts setting, HOPGRAPH_ALLOW_HOSTS); "
        "a request naming any other host gets 421 and a cross-site one 403, against DNS "
        "rebinding",
    )
