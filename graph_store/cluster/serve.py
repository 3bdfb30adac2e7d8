"""Shards on Ray Serve: one application per shard with ``replicas`` replicas, called by handle.

``serve_index(directory, shards, replicas)`` (inside ``connected``) deploys shard ``i`` of
``shards`` of the committed generation ``g`` as the Serve application
``hopgraph-<index>-g<g>-shard-<i>-<owner>`` (each replica opens its segments memory-mapped,
shard.py) and returns the router, an index whose calls go to them (:class:`ServeShards`). Serve
starts with no HTTP proxy: nothing is reachable but through the cluster (its token), and the
router calls the deployments' handles. A call whose replica died (a node lost, a process
killed) or did not answer within CALL_SECONDS is sent again, to a replica Serve still has: every
shard call is a read, so it may run twice. A shard with no replica answering after ATTEMPTS
tries fails the query with an error naming it: never an answer from the other shards alone.

**Several front ends on one cluster.** Each serving process owns its applications: ``<owner>``
is the process's own name on the cluster, held by a lease (a named actor of no CPU that Ray ends
with the process, however it ends). So two servers of one index, with the same ``--shards`` or
not, never deploy over each other's shards, and one that stops deletes only its own. A server
whose shard is gone (deleted by hand, or every replica lost) deploys it again and answers,
logging each time; the first server of an index on a cluster removes the applications of that
index whose owner's lease is gone (a server killed with SIGKILL leaves them).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store.stores.manifest import Manifest
from hopgraph.graph_store.stores.vector_search import SearchMode

from .connect import LOCAL, connected, require_ray, watch_head
from .messages import ray_messages_to_file
from .router import ShardedIndex
from .shard import Shard

SHARD_CPUS = 0.25
"""CPUs Ray reserves for a replica: shards wait on memory and each other, not on a core."""
ATTEMPTS = 4
"""Times a shard call is sent before its failure is the query's."""
CALL_SECONDS = 60.0
DEPLOY_SECONDS = 120.0
"""How long shards may take to start (their replicas placed, the segments opened) before the
server says which could not and why: Serve itself waits for a place for ever."""
OWNERS = "hopgraph-owners"
"""The Ray namespace of the serving processes' leases (named actors ``owner-<owner>``)."""
APP = re.compile(
    r"^hopgraph-(?P<key>[0-9a-f]{8})-g(?P<generation>\d+)-shard-(?P<number>\d+)-(?P<owner>[0-9a-f]+)$"
)
"""A shard application's name: the index's key, the generation, the shard and its owner."""

log = logging.getLogger(__name__)


class ServeShards:
    """The router's calls to shards deployed on Ray Serve (see the module doc).

    ``deploy(number)``: deploy shard ``number`` again and return its handle (a shard found gone).
    """

    def __init__(
        self,
        handles: list[Any],
        names: list[str],
        seconds: float = CALL_SECONDS,
        deploy: Callable[[int], Any] | None = None,
    ) -> None:
        self.handles, self.names, self.seconds, self.deploy = handles, names, seconds, deploy
        self.retried = 0
        self.redeployed = 0

    def scatter(self, method: str, *args: Any) -> list[Any]:
        """Call ``method`` on every shard at once; a call a dead replica dropped is sent again."""
        calls = [getattr(h, method).remote(*args) for h in self.handles]
        return [self._result(n, call, method, args) for n, call in enumerate(calls)]

    def _result(self, shard: int, call: Any, method: str, args: tuple) -> Any:
        import ray
        from ray.serve.exceptions import DeploymentUnavailableError

        lost = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError,
                ray.exceptions.GetTimeoutError, TimeoutError,
                DeploymentUnavailableError)  # fmt: skip
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
                if isinstance(err, DeploymentUnavailableError) and self.deploy is not None:
                    self._deploy_again(shard, err)
                else:
                    self.retried += 1
                    time.sleep(0.1 * attempt)  # Serve replaces the replica meanwhile
                call = getattr(self.handles[shard], method).remote(*args)
        raise AssertionError("unreachable")

    def _deploy_again(self, shard: int, err: Exception) -> None:
        """Deploy a shard that is gone (its application deleted, or no replica left)."""
        assert self.deploy is not None
        self.handles[shard] = self.deploy(shard)
        self.redeployed += 1
        log.warning(
            "shard %d (%s) was gone (%s): deployed it again (%d time(s) in this process)",
            shard, self.names[shard], type(err).__name__, self.redeployed,
        )  # fmt: skip

    def close(self) -> None:
        """Stop serving these shards (their generation is no longer read)."""
        from ray import serve

        for name in self.names:
            serve.delete(name, _blocking=False)


def index_key(directory: Path) -> str:
    """Return the short key an index's shard applications are named by (its resolved path)."""
    return hashlib.sha1(str(directory.resolve()).encode()).hexdigest()[:8]


def app_name(directory: Path, generation: int, number: int, owner: str) -> str:
    """Return the Serve application of shard ``number`` of a generation, as ``owner`` runs it."""
    return f"hopgraph-{index_key(directory)}-g{generation}-shard-{number}-{owner}"


class Lease:
    """A serving process's lease on the cluster: a named actor that ends with the process."""

    def ready(self) -> bool:
        """Answer once the lease is registered (its name can be looked up)."""
        return True


_leases: dict[str, tuple[str, Any]] = {}
"""This process's lease on each cluster it joined (by Ray job): its owner name and actor."""


def owner() -> str:
    """Return this process's owner name on the cluster it is connected to (taking its lease)."""
    import ray

    job = ray.get_runtime_context().get_job_id()
    if job not in _leases:
        name = f"{os.getpid():x}{secrets.token_hex(3)}"
        lease = ray.remote(num_cpus=0)(Lease).options(name=f"owner-{name}", namespace=OWNERS)
        actor = lease.remote()
        ray.get(actor.ready.remote())  # registered before an application names it
        _leases[job] = (name, actor)
    return _leases[job][0]


def _alive(name: str) -> bool:
    """Tell whether the serving process ``name`` still holds its lease."""
    import ray

    try:
        ray.get_actor(f"owner-{name}", namespace=OWNERS)
    except ValueError:  # no such named actor: its process ended, and Ray ended the lease
        return False
    return True


def left_behind(directory: Path | None = None) -> list[str]:
    """Return the shard applications whose server is gone: of ``directory``'s index, or any."""
    from ray import serve

    key = index_key(directory) if directory is not None else None
    found = []
    for name in serve.status().applications:
        match = APP.match(name)
        if match and key in (None, match["key"]) and not _alive(match["owner"]):
            found.append(name)
    return sorted(found)


def remove_left_behind(directory: Path | None = None) -> list[str]:
    """Delete the shard applications :func:`left_behind` finds; return their names."""
    from ray import serve

    names = left_behind(directory)
    for name in names:
        serve.delete(name, _blocking=False)
    if names:
        log.warning(
            "removed %d shard application(s) left by a server that is gone: %s",
            len(names), ", ".join(names),
        )  # fmt: skip
    return names


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
    ray_messages_to_file()  # after Serve's start, which sets its logger's handlers anew

    remove_left_behind(directory)  # a killed server's shards of this index
    mine = owner()

    def deployed(manifest: Manifest, ids: Sequence[str]) -> ServeShards:
        names = [app_name(directory, manifest.generation, n, mine) for n in range(shards)]

        def target(number: int) -> Any:
            deployment = serve.deployment(
                Shard,
                name=names[number],
                num_replicas=replicas,
                ray_actor_options={"num_cpus": SHARD_CPUS},
            )
            app = deployment.bind(str(directory), number, shards, None, search, manifest)
            return serve.RunTarget(app, name=names[number], route_prefix=None)

        def deploy(number: int) -> Any:
            return started([target(number)], replicas)[0]

        handles = started([target(n) for n in range(shards)], replicas)
        return ServeShards(handles, names, deploy=deploy)

    return ShardedIndex.open_on(directory, deployed, search)


def started(targets: list[Any], replicas: int, seconds: float | None = None) -> list[Any]:
    """Deploy Serve applications (``RunTarget``s) at once; their handles once all run.

    Serve waits for ever for a place to start a replica (every node's CPUs taken, the node
    with the index gone): past ``seconds`` the applications are deleted and the error says
    which and what to free (default: :data:`DEPLOY_SECONDS`).
    """
    from ray import serve

    seconds = DEPLOY_SECONDS if seconds is None else seconds
    handles = serve.run_many(targets, wait_for_applications_running=False)
    names = [t.name for t in targets]
    ends = time.monotonic() + seconds
    while True:
        found = serve.status().applications
        states = {n: found.get(n) for n in names}
        failed = [n for n, s in states.items() if s is not None and s.status == "DEPLOY_FAILED"]
        waiting = [n for n, s in states.items() if s is None or s.status != "RUNNING"]
        if not waiting:
            return handles
        if failed or time.monotonic() > ends:
            for name in names:
                serve.delete(name, _blocking=False)
            _refuse(failed, waiting, states, replicas, seconds)
        time.sleep(0.2)


def _refuse(
    failed: list[str], waiting: list[str], states: dict, replicas: int, seconds: float
) -> NoReturn:
    """Raise the error of shards that failed to start, or did not within ``seconds``."""
    if failed:
        said = (states[failed[0]].message or "no reason given").strip().splitlines()[-1]
        raise IndexStateError(
            f"shard application {failed[0]} failed to start: {said}",
            "check that every node sees the index at the same path (a shared file system) "
            "and runs the same hopgraph; Ray's messages file has the replica's error",
        )
    raise IndexStateError(
        f"{len(waiting)} shard application(s) did not start within {seconds:g} s "
        f"({waiting[0]}{', ...' if len(waiting) > 1 else ''}): no node had "
        f"{SHARD_CPUS:g} CPU free for each of their {replicas} replica(s), or a node that held "
        "one is unreachable",
        "`ray status` shows the free CPUs: add a node or free CPUs, or serve with fewer "
        "--shards or --replicas; nothing was left deployed",
    )


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
        watched = watch_head(cluster) if cluster != LOCAL else None
        try:
            yield opened
        finally:
            if watched is not None:
                watched.set()
