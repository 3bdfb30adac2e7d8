"""A partitioned build on a local multi-node Ray cluster ranks as the build of one process.

A head and two worker nodes on this machine (``ray.cluster_utils.Cluster``), addressed on
loopback, each with one CPU and a small object store; stopped by the fixture (never `ray stop`,
which ends every Ray process on the machine). One more test starts a head and a worker with
`ray start`, token authentication on, and ends their processes by PID.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hopgraph.cli import main
from hopgraph.cli.commands.demo import sample_dir
from hopgraph.core.errors import IndexStateError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Index, build_graphs, build_index, load_documents
from hopgraph.graph_store.cluster.connect import SINGLE_HOST
from hopgraph.graph_store.cluster.serve import index_key
from hopgraph.graph_store.documents.catalog import catalog_jsonl
from hopgraph.graph_store.index.check import check_index
from hopgraph.tools import make_retriever

pytestmark = pytest.mark.integration
STORE = 80 * 1024**2


@pytest.fixture(scope="module")
def cluster():
    # a node's address is loopback, never this machine's outward one (whether or not anything
    # earlier in this process imported Ray; not left to the `ray start` test's processes)
    from hopgraph.graph_store.cluster.connect import loopback_only

    loopback = {"node_ip_address": "127.0.0.1", "object_store_memory": STORE, "num_cpus": 1}
    with loopback_only():
        from ray.cluster_utils import Cluster

        head = {**loopback, "include_dashboard": False}
        nodes = Cluster(initialize_head=True, head_node_args=head)
    try:
        with loopback_only():
            for _ in range(2):
                nodes.add_node(**loopback)
            nodes.wait_for_nodes()
        yield nodes.address
    finally:
        nodes.shutdown()


@pytest.fixture(scope="module")
def built(tmp_path_factory, cluster):
    """The bundled sample indexed here and on the cluster (P = 4), graphs built on both.

    The cluster's tasks read their own lines of the corpus (its catalog), as a JSONL source's do.
    """
    from hopgraph.graph_store.cluster.build import build_index_on

    root = tmp_path_factory.mktemp("cluster")
    docs = load_documents(sample_dir() / "corpus.jsonl")
    catalog = catalog_jsonl(sample_dir() / "corpus.jsonl")
    settings = IndexSettings(model="hashing")
    build_index(docs, root / "one", settings, show_progress=False)
    report = build_index_on(cluster, catalog, root / "four", settings, 4, show_progress=False)
    assert report.chunks == report.added_chunks > len(docs) / 2
    for name in ("one", "four"):
        build_graphs(root / name, show_progress=False)
    return root


def questions() -> list[str]:
    lines = (sample_dir() / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines]


def test_a_partitioned_build_is_sound_and_holds_a_segment_per_partition(built):
    assert check_index(built / "four") == []
    with Index.open(built / "one") as one, Index.open(built / "four") as four:
        assert list(four.chunks) == list(one.chunks)  # the same chunks in the same order
        assert len(four.manifest.vectors) == len(four.manifest.segments) == 4
        assert four.manifest.counts == one.manifest.counts
        assert four.manifest.timings["partitions"] == 4
        assert four.manifest.timings["rows_peak_rss_mb"] > 0  # Chroma's rows: tasks' work
        assert four.manifest.chroma_parts == 4  # a collection a partition, in a folder each
        assert [p.path.name for p in four.location.each()] == ["p000", "p001", "p002", "p003"]
        assert four.vectors.count() == len(one.chunks)
        stamped = [{**r.to_dict(), "indexed_at": ""} for r in four.documents]
        assert stamped == [{**r.to_dict(), "indexed_at": ""} for r in one.documents]
    left = {p.name for p in (built / "four").glob("g*/p*/*")}
    assert left == {"vectors", "bm25-segment"}  # the table parts were merged and removed


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid", "gnn_ret"])
def test_every_question_gets_the_same_top_10_as_on_one_machine(built, method):
    with Index.open(built / "one") as one, Index.open(built / "four") as four:
        here, there = make_retriever(method, one), make_retriever(method, four)
        for question in questions():
            a, b = here.retrieve(question, 10), there.retrieve(question, 10)
            assert [h.id for h in a] == [h.id for h in b], question
            if method == "bm25":  # the global statistics: scores as one segment gives them
                assert max(abs(x.score - y.score) for x, y in zip(a, b, strict=True)) < 1e-6


def test_a_failed_partitioned_build_leaves_the_index_there(built, cluster, tmp_path, capsys):
    corpus = tmp_path / "clash.jsonl"  # document "a#1" collides with a chunk of document "a"
    long = " ".join(f"word{i}" for i in range(600))  # several chunks: a#0, a#1, ...
    rows = [{"id": "a", "title": "A", "text": long}, {"id": "a#1", "title": "B", "text": "b"}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = sorted(p.name for p in (built / "four").iterdir())
    argv = ["index", str(corpus), "--index", str(built / "four"), "--model", "hashing", "-q"]
    assert main([*argv, "--force", "--cluster", cluster, "--partitions", "2"]) == 2
    assert "chunk ids collide" in capsys.readouterr().err
    assert sorted(p.name for p in (built / "four").iterdir()) == before
    assert check_index(built / "four") == []
    assert main([*argv, "--force", "--cluster", cluster, "--partitions", "3"]) == 2
    assert "more than the corpus's 2 documents" in capsys.readouterr().err


def write_then_die_once(number, docs, root, folder, settings, stamp):
    """Partition 1's first run writes its files, then its worker dies before answering."""
    from hopgraph.graph_store.cluster.partitions import write_partition

    log = Path(root).parent / "runs.log"
    with log.open("a") as runs:
        runs.write(f"{number}\n")
    written = write_partition(number, docs, root, folder, settings, stamp)
    if number == 1 and log.read_text().split().count("1") == 1:
        os._exit(1)  # as a kill -9 of the worker: no reply, no clean-up
    return written


def test_a_worker_killed_mid_build_reruns_only_its_partition(built, cluster, tmp_path, monkeypatch):
    from hopgraph.graph_store.cluster import build as cluster_build

    monkeypatch.setattr(cluster_build, "write_partition", write_then_die_once)
    docs = load_documents(sample_dir() / "corpus.jsonl")
    index = tmp_path / "index"
    cluster_build.build_index_on(
        cluster, docs, index, IndexSettings(model="hashing"), 4, show_progress=False
    )
    assert sorted((tmp_path / "runs.log").read_text().split()) == ["0", "1", "1", "2", "3"]
    assert check_index(index) == []
    with Index.open(built / "four") as four, Index.open(index) as again:
        assert list(again.chunks) == list(four.chunks)
        dense, other = make_retriever("dense", four), make_retriever("dense", again)
        for question in questions():
            a, b = dense.retrieve(question, 10), other.retrieve(question, 10)
            assert [h.id for h in a] == [h.id for h in b]


def test_a_node_of_another_hopgraph_is_refused_naming_both(cluster, monkeypatch):
    """This process says it is another hopgraph than the nodes run: joining is refused."""
    from hopgraph.core import config
    from hopgraph.core.errors import InputError
    from hopgraph.graph_store.cluster.connect import connected

    monkeypatch.setattr(config, "package_version", lambda: "9.9.9")  # here only, not on nodes
    with pytest.raises(InputError) as refused, connected(cluster):
        pass
    text = str(refused.value)
    assert "runs hopgraph 0.1.0 with Ray 2.60.0; this process runs hopgraph 9.9.9" in text, text
    assert "nothing was written" in refused.value.hint


def test_the_cli_builds_on_a_cluster_it_starts_here(tmp_path):
    # A command of its own, as a user runs it: a process that started a cluster with token
    # authentication keeps Ray's settings for it (this one then joins the fixture's, without).
    index = tmp_path / "idx"
    argv = [sys.executable, "-m", "hopgraph", "index", str(sample_dir() / "corpus.jsonl")]
    argv += ["--index", str(index), "--model", "hashing", "-q", "--cluster", "local"]
    env = {k: v for k, v in os.environ.items() if k != SINGLE_HOST}
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "277 documents" in done.stdout
    peaks = re.search(r"peak RSS: this process \(the driver\) ([\d,]+) MB, the largest task "
                      r"([\d,]+) MB", done.stdout)  # fmt: skip
    assert peaks is not None, done.stdout  # the tasks' peaks, not only what `time -v` shows
    assert all(int(p.replace(",", "")) > 0 for p in peaks.groups())
    assert check_index(index) == []


@pytest.fixture
def ray_started(tmp_path):
    """A head and a worker started by `ray start` on loopback with a token, ended by PID."""
    import secrets
    import shutil
    import signal
    import tempfile

    from hopgraph.evals.bench.serving import free_port

    token = secrets.token_hex(32)
    plain = {
        k: v for k, v in os.environ.items() if k != SINGLE_HOST and not k.startswith("RAY_AUTH")
    }
    env = {**plain, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    temp = tempfile.mkdtemp(prefix="hgray", dir="/tmp")  # short: Ray's socket paths
    port = free_port()
    ray = [str(Path(sys.executable).parent / "ray"), "start", "--node-ip-address", "127.0.0.1"]
    ray += ["--num-cpus", "1", "--object-store-memory", str(STORE), "--disable-usage-stats"]
    head = [*ray, "--head", "--port", str(port), "--include-dashboard", "false"]
    try:
        subprocess.run([*head, "--temp-dir", temp], env=env, check=True, capture_output=True)
        subprocess.run([*ray, "--address", f"127.0.0.1:{port}"], env=env, check=True,
                       capture_output=True)  # fmt: skip
        yield f"127.0.0.1:{port}", token, plain
    finally:  # its daemons name the temp folder; their children (agents, workers) do not.
        # Ended by PID, never `ray stop`, which ends every Ray process on the machine.
        for pid in _processes_of(temp):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


def _processes_of(text: str) -> set[int]:
    """Return the processes whose command line names ``text``, and all their descendants."""
    named, parent = set(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                named.add(int(entry.name))
            stat = (entry / "stat").read_text()
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, grew = set(named), True
    while grew:
        more = {pid for pid, ppid in parent.items() if ppid in found} - found
        found |= more
        grew = bool(more)
    return found


def test_the_cli_builds_on_a_cluster_that_ray_start_started(ray_started, tmp_path):
    address, token, plain = ray_started
    index = tmp_path / "idx"
    argv = [sys.executable, "-m", "hopgraph", "index", str(sample_dir() / "corpus.jsonl")]
    argv += ["--index", str(index), "--model", "hashing", "-q", "--cluster", address]
    refused = subprocess.run(
        [*argv, "--partitions", "2"], env=plain, capture_output=True, text=True
    )
    assert refused.returncode == 2, refused.stderr
    assert "did not let this process join" in refused.stderr and "RAY_AUTH_TOKEN" in refused.stderr
    assert not (index / "manifest.json").exists()
    env = {**plain, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    built = subprocess.run([*argv, "--partitions", "2"], env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert check_index(index) == []
    with Index.open(index) as idx:
        assert len(idx.manifest.vectors) == 2 and len(idx.doc_ids) == 277


def test_mcp_serves_from_shards_on_a_cluster_it_starts(built):
    """`hopgraph mcp --cluster local --shards 2`: retrieve answers as one machine, and `ask`
    (a scripted LLM on 127.0.0.1) runs over the shards."""
    import asyncio
    from datetime import timedelta

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer
    from tests.agent_scripts import NOT_YET, gear_script

    question = questions()[0]
    with Index.open(built / "one") as one:
        expected = [h.id for h in make_retriever("gnn_ret", one).retrieve(question, 5)]
    script = gear_script([NOT_YET, "Answerable: Yes\nAnswer: 1936"])
    with ScriptedOpenAIServer(lambda prompt, n: (200, script(prompt))) as llm:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOPGRAPH_LLM_MODEL": "scripted-model",
               "HOPGRAPH_LLM_BASE_URL": llm.url}  # fmt: skip
        env.pop(SINGLE_HOST, None)
        argv = ["-m", "hopgraph.cli", "mcp", "--index", str(built / "four")]
        argv += ["--cluster", "local", "--shards", "2"]
        params = StdioServerParameters(command=sys.executable, args=argv, env=env)

        async def main():
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write, read_timeout_seconds=timedelta(seconds=240)) as session,
            ):
                await session.initialize()
                call = {"query": question, "method": "gnn_ret", "k": 5}
                hits = await session.call_tool("retrieve", call)
                answer = await session.call_tool("ask", {"question": question})
                return hits, answer

        hits, answer = asyncio.run(main())
    assert not hits.isError and [h["id"] for h in hits.structuredContent["result"]] == expected
    assert not answer.isError and answer.structuredContent["answer"] == "1936"


FRONT_METHODS = ("dense", "hybrid", "gnn_ret")


def _front_end(kind: str, index: Path, cluster: str, shards: int, port: int, log: Path):
    """Start `hopgraph mcp|ui --cluster ADDRESS --shards S` on PORT; return once it answers."""
    import httpx

    from tests.integration.conftest import wait_until_up

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop(SINGLE_HOST, None)
    argv = [sys.executable, "-m", "hopgraph.cli", kind, "--index", str(index), "--cluster",
            cluster, "--shards", str(shards), "--http", f"127.0.0.1:{port}"]  # fmt: skip
    server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))

    def up():
        if kind == "ui":
            search = {"q": "film", "method": "dense", "k": 1}
            url = f"http://127.0.0.1:{port}/api/search"
            return httpx.get(url, params=search, timeout=120).status_code == 200
        return bool(_mcp_top(port, "dense", "film", 1))

    wait_until_up(up, server, f"`hopgraph {kind}`", log.read_text, timeout=300)
    return server


def _mcp_top(port: int, method: str, question: str, k: int = 10) -> list[str]:
    from hopgraph.evals.bench.serving import call_tool

    hits = call_tool(port, "retrieve", {"query": question, "method": method, "k": k})
    return [h["id"] for h in (hits["result"] if isinstance(hits, dict) else hits)]


def _ui_top(port: int, method: str, question: str, k: int = 10) -> list[str]:
    import httpx

    reply = httpx.get(f"http://127.0.0.1:{port}/api/search",
                      params={"q": question, "method": method, "k": k}, timeout=120)  # fmt: skip
    assert reply.status_code == 200, reply.text
    return [h["id"] for h in reply.json()["hits"]]


def _serve_apps(cluster: str) -> tuple[list[str], list[str]]:
    """Return the cluster's Serve applications and those whose server is gone (another process)."""
    code = (
        "import json, sys\n"
        "from ray import serve\n"
        "from hopgraph.graph_store.cluster.connect import connected\n"
        "from hopgraph.graph_store.cluster.serve import left_behind\n"
        "with connected(sys.argv[1]):\n"
        "    print(json.dumps([sorted(serve.status().applications), left_behind()]))\n"
    )
    env = {**os.environ}
    env.pop(SINGLE_HOST, None)
    done = subprocess.run([sys.executable, "-c", code, cluster], env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    apps, gone = json.loads(done.stdout.strip().splitlines()[-1])
    return apps, gone


def _until(value, holds, seconds: float = 60):
    """Return ``value()`` once ``holds`` it, polling for up to ``seconds``; else its last value."""
    deadline = time.monotonic() + seconds
    while not holds(found := value()) and time.monotonic() < deadline:
        time.sleep(2)
    return found


def test_front_ends_share_a_cluster_and_a_killed_ones_shards_are_removed(built, cluster, tmp_path):
    """An MCP server (2 shards) and a page (3 shards) of one index on one cluster each give
    one process's top 10; stopping the page leaves the MCP server's shards alone; a server
    started after the MCP server is killed (SIGKILL) removes the shards it left."""
    from hopgraph.evals.bench.serving import free_port

    index = built / "four"
    with Index.open(built / "one") as one:
        expected = {
            m: {q: [h.id for h in make_retriever(m, one).retrieve(q, 10)] for q in questions()}
            for m in FRONT_METHODS
        }
    before = set(_serve_apps(cluster)[0])  # another test's shards, if any: not this test's
    prefix = f"hopgraph-{index_key(index)}-"
    mcp_port, ui_port, third_port = free_port(), free_port(), free_port()
    mcp = _front_end("mcp", index, cluster, 2, mcp_port, tmp_path / "mcp.log")
    ui = third = None
    try:
        ui = _front_end("ui", index, cluster, 3, ui_port, tmp_path / "ui.log")
        apps = set(_serve_apps(cluster)[0]) - before
        assert len([a for a in apps if a.startswith(prefix)]) == 5, apps  # 2 + 3, none shared
        for method, tops in expected.items():
            for question, top in tops.items():
                assert _mcp_top(mcp_port, method, question) == top, (method, question)
                assert _ui_top(ui_port, method, question) == top, (method, question)
        ui.send_signal(signal.SIGINT)
        ui.wait(timeout=120)
        for method, tops in expected.items():
            for question, top in tops.items():
                assert _mcp_top(mcp_port, method, question) == top, (method, question)
        mine = _until(lambda: sorted(set(_serve_apps(cluster)[0]) - before), lambda a: len(a) == 2)
        assert all(a.startswith(prefix) for a in mine), mine  # the page's three went with it
        mcp.kill()  # SIGKILL: nothing of its own runs to delete its shards
        mcp.wait(timeout=60)
        # Ray ends a killed process's lease once it sees the process gone
        assert _until(lambda: sorted(_serve_apps(cluster)[1]), lambda g: g == mine) == mine
        third = _front_end("ui", index, cluster, 2, third_port, tmp_path / "third.log")
        question = questions()[0]
        assert _ui_top(third_port, "gnn_ret", question) == expected["gnn_ret"][question]
        apps, gone = _serve_apps(cluster)
        assert not set(mine) & set(apps) and gone == [], apps
        assert "left by a server that is gone" in (tmp_path / "third.log").read_text()
    finally:
        for server in (mcp, ui, third):
            if server is not None and server.poll() is None:
                server.send_signal(signal.SIGINT)
                try:
                    server.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    server.kill()


@pytest.mark.skipif(shutil.which("langgraph") is None, reason="needs langgraph-cli[inmem]")
def test_the_langgraph_server_serves_from_shards(built, tmp_path):
    """`langgraph dev` with HOPGRAPH_CLUSTER=local and HOPGRAPH_SHARDS=2: the chat graph's
    evidence (no LLM) is one machine's gnn_ret top 2."""
    from langgraph_sdk import get_sync_client

    from hopgraph.graph_store.cluster.serve import index_key
    from tests.integration.test_langgraph_server import AUTH, langgraph_dev

    question = questions()[0]
    with Index.open(built / "one") as one:
        expected = [h.id for h in make_retriever("gnn_ret", one).retrieve(question, 2)]
    shards = {"HOPGRAPH_CLUSTER": "local", "HOPGRAPH_SHARDS": "2"}
    with langgraph_dev(built / "four", tmp_path, extra=shards) as url:
        client = get_sync_client(url=url, headers=AUTH)
        thread = client.threads.create()
        client.runs.wait(
            thread["thread_id"], "chat", context={"method": "gnn_ret", "k": 2},
            input={"messages": [{"role": "user", "content": question}]},
        )  # fmt: skip
        values = client.threads.get_state(thread["thread_id"])["values"]
        with Index.open(built / "four") as four:
            generation = four.manifest.generation
        key = index_key(built / "four")  # any owner's: the server's own, named after it
        names = [f"hopgraph-{key}-g{generation}-shard-{n}-" for n in range(2)]
        replicas = [p for n in names for p in _processes_of(f"ServeReplica:{n}")]
    assert [s["id"] for s in values["sources"]] == expected, values["messages"][-1]["content"]
    assert len(replicas) >= 2, "the server did not serve from its two shards"


def test_graph_build_finds_its_neighbours_on_the_cluster(built, cluster, tmp_path, capsys):
    """`hopgraph graph build --cluster ADDRESS --partitions 3`: the same lists, extractions
    and graphs, and the same gnn_ret top 10, as the graph build of one process."""
    from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours

    copy = tmp_path / "four"
    shutil.copytree(built / "four", copy)
    assert main(["graph", "build", "--index", str(copy), "--cluster", cluster,
                 "--partitions", "3", "-q"]) == 0  # fmt: skip
    assert "graphs of" in capsys.readouterr().out
    with Index.open(built / "four") as one, Index.open(copy) as other:
        assert other.manifest.generation == one.manifest.generation + 1
        mine, theirs = (
            Neighbours.load(i.manifest.path(i.directory, "graph") / NEIGHBOURS_FILE)
            for i in (one, other)
        )
        # a task's product of a range of rows may round a cosine apart from the whole
        # matrix's in its last bit (some CPUs' BLAS kernels): lists equal up to such ties
        np.testing.assert_allclose(mine.scores, theirs.scores, atol=1e-6)
        assert np.mean(mine.rows == theirs.rows) > 0.999
        assert one.manifest.graph["counts"] == other.manifest.graph["counts"]
        assert one.extractions == other.extractions  # read by the tasks
        for kind, edges in one.passage_graph.edges.items():
            theirs_edges = other.passage_graph.edges[kind]
            assert ((edges != 0) != (theirs_edges != 0)).nnz == 0, kind  # the same pairs
            assert abs(edges - theirs_edges).max() <= 1e-6, kind
        for question in questions():
            here = [h.id for h in make_retriever("gnn_ret", one).retrieve(question, 10)]
            assert [h.id for h in make_retriever("gnn_ret", other).retrieve(question, 10)] == here
    assert check_index(copy) == []
    # the IVF join and the local join's rounds, as tasks (`ann`: at any size)
    assert main(["graph", "build", "--index", str(copy), "--cluster", cluster,
                 "--partitions", "3", "--semantic-search", "ann", "-q"]) == 0  # fmt: skip
    with Index.open(copy) as other:
        joined = Neighbours.load(other.manifest.path(copy, "graph") / NEIGHBOURS_FILE)
    kept = [len(set(a) & set(b)) / len(a) for a, b in zip(mine.rows, joined.rows, strict=True)]
    assert np.mean(kept) >= 0.99 and check_index(copy) == []


def lists_then_die_once(source, start, stop, m, to):
    """The first range's first run finds its lists, then its worker dies before answering."""
    from hopgraph.graph_store.cluster.neighbours import exact_lists

    log = Path(source[0]).parent / "lists.log"
    with log.open("a") as runs:
        runs.write(f"{start}\n")
    exact_lists(source, start, stop, m, to)
    if start == 0 and log.read_text().split().count("0") == 1:
        os._exit(1)  # as a kill -9 of the worker


def test_a_neighbour_task_whose_worker_dies_runs_again(built, cluster, tmp_path, monkeypatch):
    from hopgraph.graph_store.cluster import neighbours
    from hopgraph.graph_store.cluster.connect import connected
    from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours
    from hopgraph.graph_store.index.graph_build import GraphTasks

    monkeypatch.setattr(neighbours, "exact_lists", lists_then_die_once)
    copy = tmp_path / "four"
    shutil.copytree(built / "four", copy)
    with connected(cluster) as ray:
        build_graphs(copy, show_progress=False, tasks=GraphTasks(neighbours.neighbours_on(ray, 3)))
    runs = (tmp_path / "lists.log").read_text().split()
    assert runs.count("0") == 2 and len(runs) == 4  # only the lost range ran again
    with Index.open(built / "four") as one, Index.open(copy) as other:
        mine, theirs = (
            Neighbours.load(i.manifest.path(i.directory, "graph") / NEIGHBOURS_FILE)
            for i in (one, other)
        )
    assert np.array_equal(mine.rows, theirs.rows) and check_index(copy) == []


def test_writes_embed_and_update_their_lists_on_the_cluster_as_one_process(cluster, tmp_path):
    """`add`, `sync` and `delete` with --cluster on an index whose graphs `graph build
    --cluster` built: tasks embed, bring the neighbour lists and the readings' parts up to date;
    the same chunks, vectors, lists, extractions and graphs as the writes of one process."""
    from hopgraph.graph_store.graphs.extraction.reading_table import saved_parts

    docs = load_documents(sample_dir() / "corpus.jsonl")
    rows = [{"id": d.id, "title": d.title, "text": d.text} for d in docs[150:]]
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for row in rows[:5]:
        row["text"] += " Changed since."
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    on = ["--cluster", cluster, "--partitions", "3"]
    gone = [d.id for d in docs[10:40]]
    writes = (["add", str(rest), "-q"], ["sync", str(changed), "-q"], ["delete", *gone])
    for name in ("here", "there"):
        build_index(docs[:150], tmp_path / name, IndexSettings(model="hashing"), False)
    build_graphs(tmp_path / "here", show_progress=False)
    assert main(["graph", "build", "--index", str(tmp_path / "there"), "-q", *on]) == 0
    for write in writes:
        for name, extra in (("here", []), ("there", on)):
            assert main([*write, "--index", str(tmp_path / name), *extra]) == 0, write
        _same(tmp_path / "here", tmp_path / "there")
        with Index.open(tmp_path / "there") as idx:  # the next write's tasks find parts
            assert saved_parts(idx.manifest.path(idx.directory, "graph")) is not None
    assert check_index(tmp_path / "there") == []


def _same(here: Path, there: Path) -> None:
    """The same chunks, vectors, neighbour lists and passage graph."""
    from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours

    with Index.open(here) as a, Index.open(there) as b:
        assert list(a.chunks.values()) == list(b.chunks.values())
        assert np.array_equal(a.embedding_matrix, b.embedding_matrix)
        mine, theirs = (
            Neighbours.load(i.manifest.path(i.directory, "graph") / NEIGHBOURS_FILE) for i in (a, b)
        )
        assert np.array_equal(mine.rows, theirs.rows)
        assert b.manifest.graph["incremental"]
        assert a.extractions == b.extractions
        for kind, edges in a.passage_graph.edges.items():
            other = b.passage_graph.edges[kind]
            assert ((edges != 0) != (other != 0)).nnz == 0, kind
            # cosines by other products: the same to float32's last bits or so
            assert abs(edges - other).max() <= 1e-6, kind


def always_die(number, docs, root, folder, settings, stamp):
    """Partition 1's worker dies every time (as a node lost for good would take it)."""
    from hopgraph.graph_store.cluster.partitions import write_partition

    if number == 1:
        os._exit(1)
    return write_partition(number, docs, root, folder, settings, stamp)


def test_a_partition_lost_past_its_retries_is_a_clear_error_and_writes_nothing(
    built, cluster, tmp_path, monkeypatch
):
    from hopgraph.core.errors import IndexStateError
    from hopgraph.graph_store.cluster import build as cluster_build

    monkeypatch.setattr(cluster_build, "write_partition", always_die)
    docs = load_documents(sample_dir() / "corpus.jsonl")
    index = built / "four"
    before = sorted(p.name for p in index.iterdir())
    with pytest.raises(IndexStateError, match="lost a partition's task 4 times") as err:
        cluster_build.build_index_on(
            cluster, docs, index, IndexSettings(model="hashing"), 4, False, replace=True
        )
    assert "ray status" in err.value.hint
    assert sorted(p.name for p in index.iterdir()) == before  # the index that was there
    assert check_index(index) == []


def test_chroma_rows_written_again_after_their_worker_died(built, cluster, tmp_path, monkeypatch):
    from hopgraph.graph_store.cluster import build as cluster_build
    from hopgraph.graph_store.cluster.partitions import write_rows

    log = tmp_path / "rows.log"

    def rows_die_once(root, path, location, generation):
        with log.open("a") as runs:
            runs.write("run\n")
        if log.read_text().count("run") == 1:
            write_rows(root, path, location, generation)  # its rows, then the worker dies
            os._exit(1)
        return write_rows(root, path, location, generation)

    monkeypatch.setattr(cluster_build, "write_rows", rows_die_once)
    docs = load_documents(sample_dir() / "corpus.jsonl")
    index = tmp_path / "index"
    cluster_build.build_index_on(cluster, docs, index, IndexSettings(model="hashing"), 2, False)
    assert log.read_text().count("run") == 3  # two partitions, one of them twice
    assert check_index(index) == []
    with Index.open(index) as again:
        assert again.vectors.count() == len(again.chunks)


# Serving last: its fixture holds this process's connection to the cluster until the end.
@pytest.fixture(scope="module")
def served(built, cluster):
    """The cluster's build served by 2 shards of 2 replicas each on Ray Serve; its router."""
    from ray import serve

    from hopgraph.graph_store.cluster.connect import connected
    from hopgraph.graph_store.cluster.serve import serve_index

    with connected(cluster) as ray:
        try:
            yield ray, serve_index(built / "four", shards=2, replicas=2)
        finally:
            serve.shutdown()


@pytest.mark.parametrize("method", ["dense", "hybrid", "gnn_ret", "gnn_ret_local"])
def test_two_shards_on_serve_answer_as_one_machine(built, served, method, monkeypatch):
    from hopgraph.tools.gnn_ret import retriever as gnn_ret

    if method == "gnn_ret_local":  # the computation GNN-Ret uses past FULL_SCAN_BELOW chunks
        monkeypatch.setattr(gnn_ret, "FULL_SCAN_BELOW", 0)
    _, router = served
    name = method.removesuffix("_local")
    with Index.open(built / "one") as one:
        here, there = make_retriever(name, one), make_retriever(name, router)
        for question in questions():
            a, b = here.retrieve(question, 10), there.retrieve(question, 10)
            assert [h.id for h in a] == [h.id for h in b], question


def test_a_replica_killed_under_load_costs_no_query(built, served):
    import threading
    import time

    ray, router = served
    gnn = make_retriever("gnn_ret", router)
    with Index.open(built / "one") as one:
        expected = {q: [h.id for h in make_retriever("gnn_ret", one).retrieve(q, 10)]
                    for q in questions()}  # fmt: skip
    named = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
    replicas = [n for n in named if n.startswith("SERVE_REPLICA") and "shard-0" in n]
    assert len(replicas) == 2, named
    killer = threading.Timer(2.0, lambda: ray.kill(ray.get_actor(replicas[0], namespace="serve")))
    killer.start()
    asked, wrong, ends = 0, 0, time.monotonic() + 8
    while time.monotonic() < ends:
        for question, ids in expected.items():
            router.forget_queries()
            wrong += [h.id for h in gnn.retrieve(question, 10)] != ids
            asked += 1
    killer.join()
    retried = router.shards.shards.retried  # ServeShards: the calls sent again
    print(f"replica killed under load: {asked} questions, {wrong} wrong, {retried} calls retried")
    assert asked > 10 and wrong == 0  # and no error: a call a dead replica dropped went again
    after = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
    assert replicas[0] not in after  # it was killed (Serve starts another in its place)


def test_shards_that_find_no_place_are_a_clear_error_and_leave_nothing(built, served, monkeypatch):
    import time

    from ray import serve

    from hopgraph.graph_store.cluster import serve as serving

    monkeypatch.setattr(serving, "DEPLOY_SECONDS", 5.0)
    before = set(serve.status().applications)
    with pytest.raises(IndexStateError, match=r"did not start within 5 s") as err:
        serving.serve_index(built / "four", shards=2, replicas=40)  # 20 CPUs: the cluster has 3
    assert "--replicas" in (err.value.hint or "")
    ends = time.monotonic() + 30
    while set(serve.status().applications) - before and time.monotonic() < ends:
        time.sleep(0.5)  # deleted without waiting: gone within moments
    assert set(serve.status().applications) <= before
    _, router = served  # the shards already serving are untouched
    with Index.open(built / "one") as one:
        question = questions()[0]
        here = make_retriever("dense", one).retrieve(question, 10)
        assert [h.id for h in make_retriever("dense", router).retrieve(question, 10)] == [
            h.id for h in here
        ]
