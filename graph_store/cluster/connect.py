"""Where a partitioned write runs: a Ray cluster at an address, or one started here (``local``).

Ray is the optional extra ``hopgraph[cluster]``; nothing on the single-machine path imports it.
A cluster started here (``--cluster local``) lives for the write only, with Ray's token
authentication on (a token made for the run unless ``RAY_AUTH_TOKEN`` gives one) and its object
store capped. Ray's servers listen on every address of the machine (Ray 2.60 has no setting that
binds them to loopback): the token is what keeps others out. An address is checked before Ray is
asked to join it: an unreachable one is an error in seconds, not Ray's minute of retries, and
nothing is written.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import ipaddress
import os
import secrets
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

from hopgraph.core.errors import (
    HopgraphError,
    IndexStateError,
    InputError,
    disk_full,
    disk_full_error,
)

from .messages import ray_messages_to_file

LOCAL = "local"
OBJECT_STORE_BYTES = 512 * 1024**2
"""The object store of a cluster started here: partitions' documents and results pass through it,
never their vectors (each task writes its own files)."""
REACH_SECONDS = 3.0
SINGLE_HOST = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's setting that keeps its addresses on loopback (read when Ray is imported)."""
PASSED_ON = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HOPGRAPH_CACHE")
"""The driver's variables its workers need: offline model loading, the cache folder."""


def ray_module() -> ModuleType:
    """Return Ray, or say how to install it."""
    require_ray()
    import ray

    return ray


def require_ray() -> None:
    """Say how to install Ray where it is not installed (without importing it)."""
    if importlib.util.find_spec("ray") is None:
        raise InputError(
            "--cluster needs Ray, which is not installed here",
            "install the extra: `pip install 'hopgraph[cluster]'` (Ray 2.60 with Ray Data and "
            "Ray Serve)",
        )


def check_address(address: str) -> tuple[str, int]:
    """Return the host and port of a cluster address ``HOST:PORT``, or say what is wrong."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(
            f"--cluster {address!r} is not an address",
            "give the head node as HOST:PORT (what `ray start --head` prints, e.g. "
            "127.0.0.1:6379), or `local` to start a cluster on this machine",
        )
    return host, int(port)


def _loopback(host: str) -> bool:
    """Tell whether ``host`` names this machine's loopback interface."""
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def reachable(host: str, port: int, seconds: float = REACH_SECONDS) -> None:
    """Refuse an address nothing answers on (Ray would retry it for a minute)."""
    try:
        with socket.create_connection((host, port), timeout=seconds):
            pass
    except OSError as err:
        raise InputError(
            f"no Ray cluster answers at {host}:{port} ({err.strerror or err})",
            "start its head with `ray start --head --node-ip-address HOST --port PORT`, check "
            "the address, or use `--cluster local`; nothing was written",
        ) from err


def own_address(host: str, port: int) -> str:
    """Return this host's address on its route to ``host``: where its own Ray node listens.

    A driver joins a node of its host. Ray picks it among the raylets ``ps`` lists, the head's
    first: where hosts share one process table (containers, network namespaces) a driver took
    another host's node and its shards' answers went there (tests/integration/test_hosts.py).
    A UDP socket's connect sends nothing; it only picks the route and so the address.
    """
    family, kind, proto, _, where = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.connect(where)
        return str(probe.getsockname()[0])


def no_node_here(address: str, own: str) -> InputError:
    """Return the error of a driver on a host where no node of the cluster runs."""
    return InputError(
        f"no node of the Ray cluster at {address} runs on this host at {own} (the address it "
        "reaches the head from): a hopgraph command joins a node of its own host",
        f"run it on a host where a node of the cluster runs (docs/scaling.md), or start one "
        f"here first: "
        f"`ray start --address {address} --node-ip-address {own}`; nothing was written",
    )


HEAD_SECONDS = 30.0
"""How long a server goes on without an answer from its cluster's head before it stops (Ray's
driver gives up after 60 s, with a fatal error of its own and every query hanging till then)."""


def head_lost(address: str, seconds: float) -> IndexStateError:
    """Return the error of a server whose cluster's head stopped answering."""
    return IndexStateError(
        f"the Ray cluster's head at {address} has not answered for {seconds:g} s: this server "
        "cannot reach its shards, and stops",
        "check that the head node runs (`ray status` on it) and that this host reaches its "
        "ports (docs/scaling.md), then start the server again; nothing was written",
    )


def watch_head(
    address: str,
    seconds: float = HEAD_SECONDS,
    every: float = 2.0,
    lost: Callable[[IndexStateError], None] | None = None,
) -> threading.Event:
    """Watch, on a thread, that the head at ``address`` answers; return the event that stops it.

    A serving process whose head is unreachable (its host down, the network between cut)
    cannot answer anything; once nothing has answered for ``seconds``, ``lost`` is called with
    the error (default: print it as the CLI does and exit with status 2 at once).
    """
    host, port = check_address(address)
    stop = threading.Event()

    def run() -> None:
        answered = time.monotonic()
        while not stop.wait(every):
            try:
                with socket.create_connection((host, port), timeout=every):
                    answered = time.monotonic()
            except OSError:
                if time.monotonic() - answered > seconds:
                    (lost or _stop_process)(head_lost(address, seconds))
                    return

    threading.Thread(target=run, name="hopgraph-head-watch", daemon=True).start()
    return stop


def _stop_process(err: IndexStateError) -> None:
    print(f"error: {err}", file=sys.stderr, flush=True)
    os._exit(2)  # from a thread: the server's loop would wait on its shards for ever


@contextlib.contextmanager
def connected(address: str, env: dict[str, str] | None = None) -> Iterator[ModuleType]:
    """Join the cluster at ``address`` (or start one here) for the duration of a write.

    ``env``: variables its workers get beside this process's :data:`PASSED_ON` ones.
    """
    on_host = False
    if address != LOCAL:
        host, port = check_address(address)
        check_token_mode()
        reachable(host, port)
        on_host = _loopback(host)
    require_ray()
    env = {**{n: os.environ[n] for n in PASSED_ON if n in os.environ}, **(env or {})}
    options = {
        "runtime_env": {"env_vars": env},
        "log_to_driver": False,
        "logging_level": "ERROR",
    }
    with (
        _local_token() if address == LOCAL else contextlib.nullcontext(),
        loopback_only() if on_host else contextlib.nullcontext(),
    ):
        ray = ray_module()
        if address == LOCAL:
            try:
                ray.init(
                    address="local",  # a new one, even where another runs (RAY_ADDRESS)
                    include_dashboard=False,
                    object_store_memory=OBJECT_STORE_BYTES,
                    **options,
                )
            except Exception as err:  # a node that will not start fails in Ray's own way
                raise local_start_failed(err) from err
        else:  # its token, if it has one: RAY_AUTH_TOKEN, or the file `ray` keeps it in
            if not on_host:  # this host's own node, not whichever raylet `ps` shows first
                options["_node_ip_address"] = own_address(host, port)
            try:
                ray.init(address=address, **options)
            except RuntimeError as err:
                if "No node info found" not in str(err):
                    raise
                raise no_node_here(address, options["_node_ip_address"]) from err
            except (ConnectionError, ray.exceptions.RayError) as err:  # it answered: not to us
                raise InputError(
                    f"the Ray cluster at {address} did not let this process join ({err})",
                    "a cluster started with token authentication needs its token here: "
                    "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or the file `ray get-auth-token` "
                    "writes), as its nodes were started with; nothing was written",
                ) from err
        try:
            ray_messages_to_file()  # not this process's stdout: a report or a protocol's
            check_versions(ray)
            yield ray
        finally:
            ray.shutdown()


def local_start_failed(err: Exception) -> HopgraphError:
    """Return the error of a local Ray cluster that did not start (``err``: Ray's)."""
    if disk_full(err):
        return disk_full_error(Path(tempfile.gettempdir()), committed=None)
    return InputError(
        f"a Ray cluster could not start on this machine for --cluster local "
        f"({type(err).__name__}: {err})",
        f"Ray's own logs are under {tempfile.gettempdir()}/ray/session_latest/logs; it needs "
        f"{OBJECT_STORE_BYTES >> 20} MB of /dev/shm for its object store and room in "
        f"{tempfile.gettempdir()}; without --cluster the command runs in this process. "
        "Nothing was written",
    )


def check_token_mode() -> None:
    """Refuse a token given without ``RAY_AUTH_MODE=token`` (Ray would not send it)."""
    if os.environ.get("RAY_AUTH_TOKEN") and os.environ.get("RAY_AUTH_MODE") != "token":
        raise InputError(
            "RAY_AUTH_TOKEN is set but RAY_AUTH_MODE is "
            f"{os.environ.get('RAY_AUTH_MODE', 'not set')!r}: Ray sends the token only in token "
            "mode",
            "export RAY_AUTH_MODE=token beside RAY_AUTH_TOKEN, as the cluster's nodes were "
            "started (docs/scaling.md); nothing was written",
        )


def _versions() -> tuple[str, str]:
    """Return the hopgraph and Ray versions of the process this runs in (a task on a node)."""
    import ray

    from hopgraph.core.config import package_version

    return package_version(), ray.__version__


VERSION_SECONDS = 120.0
"""How long the driver waits for every node to say its versions."""


def check_versions(ray: ModuleType) -> None:
    """Refuse a cluster with a node whose hopgraph or Ray differs from this process's, naming both.

    A task pinned to each live node reports what that node imports: a node with another
    hopgraph would chunk, embed or score differently, and its part of a build or of a shard's
    answers would not be the index one process builds.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from hopgraph.core.config import package_version

    mine = (package_version(), ray.__version__)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    asked = ray.remote(num_cpus=0)(_versions)
    refs = [
        asked.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
        ).remote()
        for n in nodes
    ]
    try:
        found = ray.get(refs, timeout=VERSION_SECONDS)
    except (ray.exceptions.GetTimeoutError, ray.exceptions.RayError) as err:
        raise IndexStateError(
            f"a node of the cluster did not say its hopgraph and Ray versions within "
            f"{VERSION_SECONDS:g} s ({type(err).__name__})",
            "check the cluster's nodes (`ray status`); nothing was written",
        ) from err
    for node, theirs in zip(nodes, found, strict=True):
        if tuple(theirs) != mine:
            raise InputError(
                f"the node at {node.get('NodeManagerAddress', '?')} runs hopgraph {theirs[0]} "
                f"with Ray {theirs[1]}; this process runs hopgraph {mine[0]} with Ray {mine[1]}",
                "install the same hopgraph and Ray on every node and on the machine that runs "
                "the command (docs/scaling.md); nothing was written",
            )


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Keep this process's Ray addresses on loopback while in the block.

    Ray rewrites a loopback address to this machine's outward one unless told the cluster is on
    one host; a cluster whose nodes listen on loopback only (one held by
    ``python -m hopgraph.evals.servers.local_cluster``, or a test's) then never answers. Ray reads
    that setting once, when it is imported, so where it already was (by anything earlier in this
    process) its constant is set too; both are restored after.
    """
    saved = os.environ.get(SINGLE_HOST)
    os.environ[SINGLE_HOST] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    was = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(SINGLE_HOST, None)
        else:
            os.environ[SINGLE_HOST] = saved
        if constants is not None:
            constants.ENABLE_RAY_CLUSTER = was


@contextlib.contextmanager
def _local_token() -> Iterator[None]:
    """Start a cluster here with Ray's token authentication: the given token, or a new one."""
    saved = {name: os.environ.get(name) for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    os.environ["RAY_AUTH_MODE"] = "token"
    # One token per process: Ray keeps the first it reads, so a second local cluster started
    # by this process (a benchmark's next round) must be given the same one.
    os.environ.setdefault("RAY_AUTH_TOKEN", _process_token())
    _reread_ray_settings()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _reread_ray_settings() -> None:
    """Have Ray read its settings from the environment again (it read them on import).

    As Ray's own token set-up does (ray._private.authentication.authentication_token_setup).
    """
    if "ray" in sys.modules:
        from ray._raylet import Config

        Config.initialize("")


@functools.cache
def _process_token() -> str:
    """Return the token of the clusters this process starts (made once)."""
    return secrets.token_hex(32)


RETRIES = 3
"""Times a partition's task is run again after its worker or node died."""


def failed(ray: ModuleType, err: Exception) -> HopgraphError:
    """Return what to tell of a failed partition: its own error, or the cluster's.

    Its own (the documents' fault) is said as on one machine; the cluster's is a task that
    failed otherwise, or a worker or node lost past the retries.
    """
    if isinstance(err, ray.exceptions.RayTaskError):
        if isinstance(err.cause, HopgraphError):
            return err.cause
        return IndexStateError(
            f"a partition's task failed on the cluster: {err.cause!r}",
            "nothing was written; fix the cause and run the write again",
        )
    return IndexStateError(
        f"the cluster lost a partition's task {RETRIES + 1} times ({type(err).__name__})",
        "nothing was written; check the cluster's nodes (`ray status`) and run the write again",
    )
