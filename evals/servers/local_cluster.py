"""Hold a Ray cluster of several nodes on this machine until stopped, for trying the cluster paths.

    python -m hopgraph.evals.servers.local_cluster --nodes 3 --address-file ADDR &
    hopgraph index CORPUS --index DIR --cluster "$(cat ADDR)" --partitions 4
    kill %1        # SIGTERM or SIGINT: the nodes are shut down, nothing else is touched

A head and ``--nodes`` − 1 workers (``ray.cluster_utils.Cluster``), each addressed on loopback,
with ``--cpus`` CPUs and a capped object store: the cluster the integration tests start, held
as a process so that commands can join it (a command given a loopback address keeps to
loopback: graph_store/cluster/connect.py). It needs the ``[cluster]`` extra. Its nodes'
servers (the GCS, each raylet) listen on loopback, in Ray's one-host mode; the cluster has no
token, so run it only where the machine's other users are trusted.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

STORE_MB = 200


def main(argv: list[str] | None = None) -> int:
    """Start the nodes, write the head's address, wait for a signal, shut the nodes down."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=3, help="nodes, the head included")
    parser.add_argument("--cpus", type=float, default=1, help="CPUs each node offers")
    parser.add_argument("--store-mb", type=int, default=STORE_MB, help="object store per node")
    parser.add_argument("--address-file", type=Path, help="write the head's address here")
    args = parser.parse_args(argv)
    if args.nodes < 1:
        parser.error("--nodes must be at least 1")
    # nodes addressed on loopback, never the machine's outward address
    from hopgraph.graph_store.cluster.connect import loopback_only

    with loopback_only():
        _hold(args)
    return 0


def _hold(args: argparse.Namespace) -> None:
    """Start the nodes and keep them until SIGTERM or SIGINT."""
    from ray.cluster_utils import Cluster

    node = {"node_ip_address": "127.0.0.1", "num_cpus": args.cpus,
            "object_store_memory": args.store_mb * 1024**2}  # fmt: skip
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        for _ in range(args.nodes - 1):
            cluster.add_node(**node)
        cluster.wait_for_nodes()
        if args.address_file:
            args.address_file.write_text(cluster.address + "\n", encoding="utf-8")
        print(f"{args.nodes} nodes at {cluster.address}; stop with SIGTERM", flush=True)
        stop.wait()
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
