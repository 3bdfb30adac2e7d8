"""The cluster recipe across hosts: network namespaces joined by a bridge, `ray start` in each.

Three hosts of their own (a head and two workers), each a network namespace with an address of
its own on a bridge in a fourth namespace: no loopback address, no setting of Ray's changed, the
commands of docs/scaling.md as it prints them (token authentication on). The namespaces share
this machine's file system, which stands for the shared one the recipe asks for; each node has
a temp folder of its own (Ray's sockets), which separate machines have anyway. Traffic stays in
the namespaces the fixture makes; it ends every process it started by PID and removes them.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from hopgraph.cli.commands.demo import sample_dir
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Index, build_graphs, build_index, load_documents
from hopgraph.graph_store.cluster.connect import SINGLE_HOST
from hopgraph.graph_store.index.check import check_index
from hopgraph.tools import make_retriever
from tests.integration.test_cluster import _processes_of, questions

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NAME = f"hg{os.getpid() % 100000}"
ADDRESS = {"head": "10.77.0.1", "w1": "10.77.0.2", "w2": "10.77.0.3"}
PORT = 6379
STORE = 100 * 1024**2
METHODS = ("dense", "hybrid", "gnn_ret")
RAY_START = [str(Path(sys.executable).parent / "ray"), "start", "--num-cpus", "1",
             "--object-store-memory", str(STORE), "--disable-usage-stats"]  # fmt: skip


@dataclass
class Hosts:
    """The namespaces (by host), the cluster's address, its token and each node's temp folder."""

    names: dict[str, str]
    cluster: str
    token: str
    temps: dict[str, str]
    env: dict[str, str]

    def run(self, host: str, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run ``argv`` on ``host`` (in its namespace) with the cluster's environment."""
        return subprocess.run(["ip", "netns", "exec", self.names[host], *argv], env=self.env,
                              capture_output=True, text=True, cwd=ROOT, **kwargs)  # fmt: skip

    def start(self, host: str, argv: list[str], log: Path) -> subprocess.Popen:
        """Start ``argv`` on ``host``, its output into ``log``."""
        argv = ["ip", "netns", "exec", self.names[host], *argv]
        return subprocess.Popen(argv, env=self.env, cwd=ROOT, stdout=log.open("w"),
                                stderr=subprocess.STDOUT)  # fmt: skip

    def running(self, host: str, task: str) -> bool:
        """Tell whether ``host``'s node runs a worker executing ``task`` now."""
        for pid in _processes_of(self.temps[host]):
            with contextlib.suppress(OSError):
                if f"ray::{task}".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
        return False

    def join(self, host: str) -> None:
        """Start ``host``'s node again (a host back after it was lost), in a new temp folder."""
        self.temps[host] = tempfile.mkdtemp(prefix=f"hg{host}", dir="/tmp")
        node = [*RAY_START, "--address", self.cluster, "--node-ip-address", ADDRESS[host],
                "--temp-dir", self.temps[host]]  # fmt: skip
        done = self.run(host, node, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr

    def replicas(self, host: str) -> int:
        """Return how many Serve replicas run on ``host``'s node."""
        count = 0
        for pid in _processes_of(self.temps[host]):
            with contextlib.suppress(OSError):
                count += b"ServeReplica" in Path(f"/proc/{pid}/cmdline").read_bytes()
        return count

    def lose(self, host: str) -> int:
        """End every process of ``host``'s Ray node (SIGKILL), as a host lost; return how many."""
        found = _processes_of(self.temps[host])
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(found)


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, text=True)


def _make_namespaces(names: dict[str, str], switch: str) -> None:
    """Make a namespace a host, each joined to a bridge in ``switch`` by a veth pair."""
    _ip("netns", "add", switch)
    _ip("-n", switch, "link", "add", "br0", "type", "bridge")
    _ip("-n", switch, "link", "set", "br0", "up")
    for host, ns in names.items():
        _ip("netns", "add", ns)
        end, port = f"{NAME}{host}", f"{NAME}{host}p"  # made here, moved into the namespaces
        _ip("link", "add", end, "type", "veth", "peer", "name", port)
        _ip("link", "set", end, "netns", ns)
        _ip("link", "set", port, "netns", switch)
        _ip("-n", switch, "link", "set", port, "master", "br0")
        _ip("-n", switch, "link", "set", port, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", f"{ADDRESS[host]}/24", "dev", end)
        _ip("-n", ns, "link", "set", end, "up")


def _remove_namespaces(names: list[str]) -> None:
    for ns in names:  # removing a namespace removes the veth ends in it, and so their pairs
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@pytest.fixture(scope="module")
def hosts():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("making network namespaces needs root and iproute2 (`ip netns`)")
    names = {host: f"{NAME}-{host}" for host in ADDRESS}
    switch = f"{NAME}-sw"
    try:
        _make_namespaces(names, switch)
    except subprocess.CalledProcessError as err:
        _remove_namespaces([*names.values(), switch])
        pytest.skip(f"cannot make network namespaces here: {err.stderr.strip()}")
    token = secrets.token_hex(32)
    plain = {k: v for k, v in os.environ.items() if k != SINGLE_HOST and not k.startswith("RAY_")}
    env = {**plain, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "HF_HUB_OFFLINE": "1"}
    temps = {host: tempfile.mkdtemp(prefix=f"hg{host}", dir="/tmp") for host in names}
    found = Hosts(names, f"{ADDRESS['head']}:{PORT}", token, temps, env)
    ray = RAY_START
    try:
        # docs/scaling.md's recipe: the head, then every other node, each at its own address
        head = [*ray, "--head", "--node-ip-address", ADDRESS["head"], "--port", str(PORT),
                "--include-dashboard", "false", "--temp-dir", temps["head"]]  # fmt: skip
        done = found.run("head", head, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        for worker in ("w1", "w2"):
            node = [*ray, "--address", found.cluster, "--node-ip-address", ADDRESS[worker],
                    "--temp-dir", temps[worker]]  # fmt: skip
            done = found.run(worker, node, timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
        yield found
    finally:
        for temp in {*temps.values(), *found.temps.values()}:
            for pid in _processes_of(temp):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            shutil.rmtree(temp, ignore_errors=True)
        _remove_namespaces([*names.values(), switch])


def _hopgraph(*argv: str) -> list[str]:
    return [sys.executable, "-m", "hopgraph.cli", *argv]


@pytest.fixture(scope="module")
def across(hosts, tmp_path_factory):
    """The bundled sample built and given graphs on the cluster from the head, and here."""
    root = tmp_path_factory.mktemp("hosts")
    corpus = sample_dir() / "corpus.jsonl"
    index = root / "across"
    done = hosts.run("head", _hopgraph("index", str(corpus), "--index", str(index), "--model",
                                       "hashing", "--cluster", hosts.cluster, "--partitions", "3",
                                       "-q", "--json"), timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)  # stdout is the one JSON object; the rest on stderr
    assert report["documents"] == 277 and report["driver_peak_rss_mb"] > 0
    assert report["task_peak_rss_mb"] > 0
    graphs = _hopgraph("graph", "build", "--index", str(index), "--cluster", hosts.cluster,
                       "--partitions", "3", "-q")  # fmt: skip
    done = hosts.run("head", graphs, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    one = root / "one"
    build_index(load_documents(corpus), one, IndexSettings(model="hashing"), show_progress=False)
    build_graphs(one, show_progress=False)
    return index, one


def _expected(one: Path) -> dict[str, dict[str, list[str]]]:
    with Index.open(one) as index:
        return {
            m: {q: [h.id for h in make_retriever(m, index).retrieve(q, 10)] for q in questions()}
            for m in METHODS
        }


def test_a_build_across_hosts_is_one_processs(across):
    index, one = across
    assert check_index(index) == []
    with Index.open(one) as here, Index.open(index) as there:
        assert list(there.chunks) == list(here.chunks)
        assert len(there.manifest.vectors) == 3  # a segment a partition
        assert there.manifest.graph["counts"] == here.manifest.graph["counts"]
    expected = _expected(one)
    with Index.open(index) as there:
        for method, tops in expected.items():
            retriever = make_retriever(method, there)
            for question, top in tops.items():
                assert [h.id for h in retriever.retrieve(question, 10)] == top, (method, question)


def test_a_worker_host_lost_mid_build_reruns_its_partitions(hosts, tmp_path):
    """A corpus of 40 copies of the sample (11,080 documents, 6 partitions): w1's node is
    killed while it writes a partition; the build ends, sound, with every document."""
    rows = [json.loads(line) for line in (sample_dir() / "corpus.jsonl").open(encoding="utf-8")]
    corpus = tmp_path / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as out:
        for copy in range(40):
            for row in rows:
                out.write(json.dumps({**row, "id": f"{row['id']}-{copy}"}) + "\n")
    index = tmp_path / "index"
    build = hosts.start("head", _hopgraph("index", str(corpus), "--index", str(index), "--model",
                                          "hashing", "--cluster", hosts.cluster, "--partitions",
                                          "6", "-q"), tmp_path / "build.log")  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not hosts.running("w1", "write_partition") and build.poll() is None:
            assert time.monotonic() < deadline, "w1 never ran a partition"
            time.sleep(0.05)
        assert build.poll() is None, "the build ended before w1 could be lost"
        assert hosts.lose("w1") > 0
        assert build.wait(timeout=900) == 0, (tmp_path / "build.log").read_text()[-3000:]
        said = (tmp_path / "build.log").read_text()
        assert "Ray's messages: " in said and "(raylet)" not in said, said[-3000:]
    finally:
        if build.poll() is None:
            build.kill()
        hosts.join("w1")  # back for the next test
    assert check_index(index) == []
    with Index.open(index) as built:
        assert built.manifest.counts["documents"] == len(rows) * 40
        assert len(built.manifest.vectors) == 6


def test_serving_across_hosts_loses_no_query_when_a_worker_host_is_lost(hosts, across, tmp_path):
    """MCP on the head serves from 2 shards of 2 replicas; a client on w2 asks over the bridge;
    the worker host holding the most replicas is lost (its node's processes killed) 12 s into
    40 s of gnn_ret questions: no error, no wrong answer."""
    index, one = across
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps(_expected(one)), encoding="utf-8")
    port = 8765
    hosts.env["HOPGRAPH_TOKEN"] = secret = secrets.token_hex(16)
    server = hosts.start("head", _hopgraph("mcp", "--index", str(index), "--cluster",
                                           hosts.cluster, "--shards", "2", "--replicas", "2",
                                           "--http", f"{ADDRESS['head']}:{port}"),
                         tmp_path / "mcp.log")  # fmt: skip
    try:
        url = f"http://{ADDRESS['head']}:{port}/mcp"
        client = [sys.executable, "-m", "tests.integration.mcp_client", url, secret,
                  str(expected)]  # fmt: skip
        deadline = time.monotonic() + 300
        while True:  # the server is up once a first client's pass answers (shards deployed)
            first = hosts.run("w2", [*client, "0"], timeout=600)
            if first.returncode == 0 or time.monotonic() > deadline or server.poll() is not None:
                break
            time.sleep(2)
        assert first.returncode == 0, first.stderr[-3000:] + (tmp_path / "mcp.log").read_text()
        tally = json.loads(first.stdout.strip().splitlines()[-1])
        assert tally["errors"] == 0 and tally["wrong"] == 0, tally  # across hosts, as one process
        load = hosts.start("w2", [*client, "40"], tmp_path / "client.log")
        lost = max(("w1", "w2"), key=hosts.replicas)  # the client's own process is not Ray's
        assert hosts.replicas(lost) > 0
        time.sleep(12)
        assert hosts.lose(lost) > 0
        load.wait(timeout=600)
        out = (tmp_path / "client.log").read_text()
        tally = json.loads(out.strip().splitlines()[-1])
        print(f"worker host {lost} lost under load: {tally}")
        assert tally["asked"] > 20 and tally["errors"] == 0 and tally["wrong"] == 0, tally
        said = (tmp_path / "mcp.log").read_text().splitlines()
        others = [line for line in said if " hopgraph.mcp retrieve " not in line]
        assert sum(" hopgraph.mcp retrieve " in line for line in said) >= tally["asked"] + 24
        # Ray's messages (Serve's hundreds while a replica is replaced, the lost node's) are
        # in their own file
        assert len(others) < 10 and "Ray's messages: " in others[0], others
        assert not any("(raylet)" in line for line in said), others
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def test_a_server_on_a_worker_host_answers_and_stops_clearly_once_cut_off(hosts, across, tmp_path):
    """MCP on w1 joins w1's own node (Ray would take the head's raylet, first among those `ps`
    lists on this one machine, and its shards' answers went there): a client on w2 gets one
    process's answers. Then w1 is cut off the network: the server stops with status 2 within a
    minute, naming the head and what to check, no traceback."""
    if not _processes_of(hosts.temps["w1"]):  # the serving test above may have lost it
        hosts.join("w1")
    index, one = across
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps(_expected(one)), encoding="utf-8")
    port, log = 8766, tmp_path / "mcp.log"
    hosts.env["HOPGRAPH_TOKEN"] = secret = secrets.token_hex(16)
    server = hosts.start("w1", _hopgraph("mcp", "--index", str(index), "--cluster", hosts.cluster,
                                         "--shards", "2", "--http", f"{ADDRESS['w1']}:{port}"),
                         log)  # fmt: skip
    try:
        url = f"http://{ADDRESS['w1']}:{port}/mcp"
        client = [sys.executable, "-m", "tests.integration.mcp_client", url, secret,
                  str(expected), "0"]  # fmt: skip
        deadline = time.monotonic() + 300
        while True:  # up once a first pass answers (shards deployed)
            first = hosts.run("w2", client, timeout=600)
            if first.returncode == 0 or time.monotonic() > deadline or server.poll() is not None:
                break
            time.sleep(2)
        assert first.returncode == 0, first.stderr[-3000:] + log.read_text()
        tally = json.loads(first.stdout.strip().splitlines()[-1])
        assert tally["errors"] == 0 and tally["wrong"] == 0, tally
        link = f"{NAME}w1"
        _ip("-n", hosts.names["w1"], "link", "set", link, "down")
        try:
            status = server.wait(timeout=120)
        finally:
            _ip("-n", hosts.names["w1"], "link", "set", link, "up")
        said = log.read_text()
        assert status == 2, said[-3000:]
        assert f"the Ray cluster's head at {hosts.cluster} has not answered" in said, said[-3000:]
        assert "Traceback" not in said
    finally:
        if server.poll() is None:
            server.kill()
