"""Shards on Ray Serve: one application per shard with ``replicas`` replicas, called by handle.

``serve_index(directory, shards, replicas)`` (inside ``connected``) deploys shard ``i`` of
``shards`` of the committed generation ``g`` as the Serve application
``hopgraph-<index>-g<g>-shard-<i>`` (each replica opens its segments memory-mapped, shard.py)
and returns the router, an index whose calls go to them (:class:`ServeShards`). Serve starts
with no HTTP proxy: nothing is reachable but through the cluster (its token), and the router
calls the deployments' handles. A call whose replica died (a node lost, a process killed) or
did not answer within CALL_SECONDS is sent again, to a replica Serve still has: every shard call
is a read, so it may run twice. A shard with no replica answering after ATTEMPTS tries fails
the query with an error naming it: never an answer from the other shards alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store.stores.manifest import Manifest
from hopgraph.graph_store.stores.vector_search import SearchMode

from .connect import connected, require_ray
from .router import ShardedIndex
from .shard import Shard

SHARD_CPUS = 0.25
"""CPUs Ray reserves for a replica: shards wait on memory and each other, not on a core."""
ATTEMPTS = 4
"""Times a shard call is sent before its failure is the query's."""
CALL_SECONDS = 60.0


class ServeShards:
    """The router's calls to shards deployed on Ray Serve (see the module doc)."""

    def __init__(self, handles: list[Any], names: list[str], seconds: float = CALL_SECONDS) -> None:
        self.handles, self.names, self.seconds = handles, names, seconds
        self.retried = 0

    def scatter(self, method: str, *args: Any) -> list[Any]:
        """Call ``method`` on every shard at once; a call a dead replica dropped is sent again."""
        calls = [getattr(h, method).remote(*args) for h in self.handles]
        return [self._result(n, call, method, args) for n, call in enumerate(calls)]

    def _result(self, shard: int, call: Any, method: str, args: tuple) -> Any:
        import ray

        lost = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError,
                ray.exceptions.GetTimeoutError, TimeoutError)  # fmt: skip
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return call.result(timeout_s=self.seconds)
            except lost as err:
                if isinstance(err, TimeoutError | ray.exceptions.GetTimeoutError):
                    call.cancel()  # a replica that hangs: its call goes, the next may go elsewhere
                if attempt == ATTEMPTS:
                    raise IndexStateError(
                        f"shard {shard} ({self.names[shard]}) did not answer {method} after "
                        f"{ATTEMPTS} tries, {self.seconds:g} s each ({type(err).__name__}): no "
                        "answer is given from the other shards alone",
                        "check the cluster's nodes (`ray status`) and `serve status`",
                    ) from err
                self.retried += 1
                time.sleep(0.1 * attempt)  # Serve replaces the replica meanwhile
                call = getattr(self.handles[shard], method).remote(*args)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop serving these shards (their generation is no longer read)."""
        from ray import serve

        for name in self.names:
            serve.delete(name, _blocking=False)


def app_name(directory: Path, generation: int, number: int) -> str:
    """Return the Serve application of shard ``number`` of a generation of ``directory``."""
    key = hashlib.sha1(str(directory.resolve()).encode()).hexdigest()[:8]
    return f"hopgraph-{key}-g{generation}-shard-{number}"


def serve_index(
    directory: str | Path, shards: int, replicas: int = 1, search: SearchMode = "auto"
) -> ShardedIndex:
    """Deploy ``shards`` shards (``replicas`` each) of the committed generation; open a router.

    A generation's shards are their own applications: a reader that moves to a newer one
    (LiveIndex) deploys its shards beside the old ones, then lets those go.

    Call it connected to the cluster (connect.connected). The folder must be at the same path
    on every node (a shared file system), as for a build.
    """
    require_ray()
    from ray import serve

    directory = Path(directory).resolve()
    if shards < 1 or replicas < 1:
        raise InputError(f"--shards {shards} --replicas {replicas}: give 1 or more of each")
    serve.start(proxy_location="Disabled")  # no HTTP ingress: the router calls the handles

    def deployed(manifest: Manifest, ids: list[str]) -> ServeShards:
        handles, names = [], []
        for number in range(shards):
            name = app_name(directory, manifest.generation, number)
            deployment = serve.deployment(
                Shard,
                name=name,
                num_replicas=replicas,
                ray_actor_options={"num_cpus": SHARD_CPUS},
            )
            app = deployment.bind(str(directory), number, shards, None, search, manifest)
            handles.append(serve.run(app, name=name, route_prefix=None))
            names.append(name)
        return ServeShards(handles, names)

    return ShardedIndex.open_on(directory, deployed, search)


Opener = Callable[[Path, "str | None"], ShardedIndex]


@contextlib.contextmanager
def shard_opener(cluster: str, shards: int, replicas: int = 1) -> Iterator[Opener]:
    """Join ``cluster`` (or start one: ``local``) and yield how a server opens a generation.

    What a LiveIndex takes as its ``opener``: each generation it moves to is served from
    ``shards`` shards of ``replicas`` replicas (:func:`serve_index`). Leaving the context
    leaves the cluster (a local one stops).
    """
    require_ray()
    if shards < 1 or replicas < 1:
        raise InputError(f"--shards {shards} --replicas {replicas}: give 1 or more of each")

    def opened(directory: Path, model: str | None) -> ShardedIndex:
        return serve_index(directory, shards, replicas)

    with connected(cluster):
        yield opened
