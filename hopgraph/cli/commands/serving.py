"""The server commands: ui and mcp, and how a server opens each generation (here or sharded)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from hopgraph.cli.options import index_dir
from hopgraph.core.errors import InputError
from hopgraph.graph_store import Index

if TYPE_CHECKING:  # the write path (loaders, parsers, graph building) is imported by writes
    pass


def mcp(args: argparse.Namespace) -> None:
    """Serve the index over MCP until the client disconnects or Ctrl-C."""
    from hopgraph.core.settings import settings
    from hopgraph.mcp.server import serve

    secret = settings().token
    token = secret.get_secret_value() if secret else None
    from hopgraph.graph_store.index.live import LiveIndex

    hosts = [*settings().allow_hosts, *args.allow_host]
    with index_opener(args) as opener, LiveIndex(index_dir(args), opener=opener) as live:
        serve(live, args.http, token, hosts)


def ui(args: argparse.Namespace) -> None:
    """Serve the web page over the index until Ctrl-C."""
    from hopgraph.core.network import parse_host_port
    from hopgraph.core.settings import settings
    from hopgraph.page.server import serve

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
