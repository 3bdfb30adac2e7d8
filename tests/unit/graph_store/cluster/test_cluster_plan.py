"""The partitioned build's plan and its refusals, without Ray (tests/integration/test_cluster.py
runs the build on a local cluster)."""

import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hopgraph.cli import main
from hopgraph.core.errors import InputError
from hopgraph.graph_store import Document
from hopgraph.graph_store.cluster import connect
from hopgraph.graph_store.cluster.partitions import plan, plan_catalog
from hopgraph.graph_store.documents.catalog import catalog_jsonl
from hopgraph.graph_store.documents.loaders import load_jsonl
from hopgraph.graph_store.stores.manifest import read_manifest


def docs(sizes):
    return [Document(f"d{i:02d}", f"T{i}", "x" * size) for i, size in enumerate(sizes)]


def test_partitions_are_ranges_of_whole_documents_in_id_order_of_about_equal_text():
    corpus = docs([100] * 12)[::-1]  # given out of order
    parts = plan(corpus, 4)
    assert [[d.id for d in p] for p in parts] == [
        [f"d{i:02d}" for i in range(a, a + 3)] for a in (0, 3, 6, 9)
    ]
    uneven = plan(docs([1000, 10, 10, 10, 10, 10]), 2)
    assert [len(p) for p in uneven] == [1, 5]  # the long document alone
    assert [len(p) for p in plan(docs([5, 5, 5]), 3)] == [1, 1, 1]  # never an empty one


def test_a_partition_count_the_corpus_cannot_fill_is_refused():
    with pytest.raises(InputError, match="more than the corpus's 3 documents"):
        plan(docs([5, 5, 5]), 4)
    with pytest.raises(InputError, match="give 1 or more"):
        plan(docs([5]), 0)


def test_a_cluster_address_is_host_and_port_and_must_answer():
    with pytest.raises(InputError, match="is not an address"):
        connect.check_address("localhost")
    assert connect.check_address("127.0.0.1:6379") == ("127.0.0.1", 6379)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed once the block ends: nothing listens there
    with pytest.raises(InputError, match=f"no Ray cluster answers at 127.0.0.1:{port}"):
        connect.reachable("127.0.0.1", port, seconds=1)


def test_index_on_an_unreachable_cluster_stops_before_writing(tmp_path, corpus_file, capsys):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    index = tmp_path / "idx"
    argv = ["index", str(corpus_file), "--index", str(index), "--model", "hashing", "-q"]
    assert main([*argv, "--cluster", f"127.0.0.1:{port}"]) == 2
    assert "no Ray cluster answers" in capsys.readouterr().err
    assert not index.exists()  # nothing written, not even the folder
    assert main([*argv, "--partitions", "2"]) == 2
    assert "--partitions is for a build on a cluster" in capsys.readouterr().err
    assert not index.exists()


def test_cluster_without_the_extra_says_how_to_install_it(
    tmp_path, corpus_file, capsys, monkeypatch
):
    monkeypatch.setattr(connect.importlib.util, "find_spec", lambda name: None)
    index = tmp_path / "idx"
    argv = ["index", str(corpus_file), "--index", str(index), "--model", "hashing", "-q"]
    assert main([*argv, "--cluster", "local"]) == 2
    err = capsys.readouterr().err
    assert "--cluster needs Ray" in err and "pip install 'hopgraph[cluster]'" in err
    assert not index.exists()


def test_a_build_on_one_machine_imports_no_ray(tmp_path, corpus_file):
    probe = (
        "import sys; from hopgraph.cli import main; "
        f"code = main(['index', {str(corpus_file)!r}, '--index', {str(tmp_path / 'i')!r}, "
        "'--model', 'hashing', '-q']); "
        "print(code, 'ray' in sys.modules, 'hopgraph.graph_store.cluster' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split()[-3:] == ["0", "False", "False"], result.stdout + result.stderr


def test_an_index_there_is_refused_before_a_cluster_is_joined(tmp_path, corpus_file, capsys):
    index = tmp_path / "idx"
    argv = ["index", str(corpus_file), "--index", str(index), "--model", "hashing", "-q"]
    assert main(argv) == 0
    with socket.socket() as free:  # nothing answers there: the index is named first
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert main([*argv, "--cluster", f"127.0.0.1:{port}"]) == 2
    assert "already holds an index" in capsys.readouterr().err


def write_corpus(path, docs_):
    lines = [
        orjson.dumps({"id": d.id, "title": d.title, "text": d.text, "n": i})
        for i, d in enumerate(docs_)
    ]
    path.write_bytes(b"\n".join(lines[:2]) + b"\n\n" + b"\n".join(lines[2:]) + b"\n")  # a blank


def test_a_catalog_locates_each_line_and_a_task_reads_the_same_documents(tmp_path):
    corpus = docs([300, 20, 50, 80, 10, 200, 40])[::-1]
    write_corpus(tmp_path / "c.jsonl", corpus)
    catalog = catalog_jsonl(tmp_path / "c.jsonl")
    loaded = load_jsonl(tmp_path / "c.jsonl")
    assert len(catalog) == catalog.report.documents == 7
    assert [loaded[i].id for i in catalog.order] == sorted(d.id for d in loaded)  # no ids kept
    by_plan = plan(loaded, 3)
    by_catalog = [part.documents() for part in plan_catalog(catalog, 3)]
    assert by_catalog == by_plan  # same ranges, same documents, metadata and source included
    assert by_catalog[0][0].metadata == {"n": 6}


def test_a_catalog_skips_or_refuses_what_a_load_does(tmp_path):
    path = tmp_path / "c.jsonl"
    write_corpus(path, docs([10, 3_000_000]))
    catalog = catalog_jsonl(path, max_mb=1)
    assert len(catalog) == 1 and "over the 1 MB limit" in catalog.report.skipped[0][1]
    assert [d.id for d in catalog.slice(catalog.order).documents()] == ["d00"]
    with pytest.raises(InputError, match=r"d01: 3\.0 MB of text"):
        catalog_jsonl(path, strict=True, max_mb=1)
    path.write_bytes(b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(InputError, match="duplicate document ids"):
        catalog_jsonl(path)
    lines = [b'{"id": "%s", "text": "x"}' % i.encode() for i in ["b", "a", "c", "a", "d", "b"]]
    path.write_bytes(b"\n".join(lines) + b"\n")  # repeats apart in the file, named each
    with pytest.raises(InputError, match="duplicate document ids: 'a', 'b'"):
        catalog_jsonl(path)
    path.write_bytes(b'{"id": "a", "text": "x"}\n{"id": "b", "text": \n')
    with pytest.raises(InputError, match=r"c.jsonl:2: malformed JSON"):
        catalog_jsonl(path)
    path.write_bytes(b"\n\n")
    with pytest.raises(InputError, match="the corpus is empty"):
        catalog_jsonl(path)


def test_serving_and_write_options_that_need_a_cluster_say_so(tmp_path, corpus_file, capsys):
    index = tmp_path / "idx"
    assert main(["index", str(corpus_file), "--index", str(index), "--model", "hashing", "-q"]) == 0
    assert main(["add", str(corpus_file), "--index", str(index), "--partitions", "2"]) == 2
    assert "--partitions is for a write on a cluster" in capsys.readouterr().err
    generation = read_manifest(index).generation
    assert main(["delete", "anything", "--index", str(index), "--partitions", "2"]) == 2
    assert "--partitions is for a write on a cluster" in capsys.readouterr().err
    assert read_manifest(index).generation == generation
    assert main(["mcp", "--index", str(index), "--shards", "2"]) == 2
    assert "--shards serves from a Ray cluster" in capsys.readouterr().err
    assert main(["ui", "--index", str(index), "--cluster", "local"]) == 2
    assert "add --shards S" in capsys.readouterr().err
    assert main(["graph", "build", "--index", str(index), "--partitions", "2"]) == 2
    assert "--partitions is for a graph build on a cluster" in capsys.readouterr().err
    missing = tmp_path / "none"
    assert main(["graph", "build", "--index", str(missing), "--cluster", "local"]) == 2
    assert "no index" in capsys.readouterr().err.lower() and not missing.exists()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux's VmHWM")
def test_a_processs_peak_is_its_own_not_its_parents():
    """ru_maxrss carries a parent's peak across exec: a build started from a process holding a
    million passages read 915 MB; peak_rss_mb is the process's own (VmHWM)."""
    held = bytearray(400 * 1024 * 1024)  # touched: resident in this (parent) process
    held[::4096] = b"x" * len(held[::4096])
    code = (
        "import resource; from hopgraph.graph_store.cluster.partitions import peak_rss_mb; "
        "print(peak_rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    own, inherited = map(float, out.stdout.split())
    del held
    assert inherited >= 400 and own < 300


class _Cluster:
    """What task_count asks of Ray: the cluster's CPUs."""

    @staticmethod
    def cluster_resources() -> dict[str, float]:
        return {"CPU": 6.0}


def test_a_step_is_cut_so_that_no_task_takes_more_than_task_rows():
    from hopgraph.graph_store.cluster.tasks import TASK_ROWS, task_count

    assert task_count(_Cluster, None, 1_000) == 6  # the cluster's CPUs
    assert task_count(_Cluster, 8, 1_000_000) == 8  # a million rows in 8: under the bound
    assert task_count(_Cluster, 8, 3_000_000) == -(-3_000_000 // TASK_ROWS) == 23
    assert task_count(_Cluster, None, 10_000_000) == 77
    assert task_count(_Cluster, 40, 10_000_000) == 77  # never under what was asked ...
    assert task_count(_Cluster, 100, 10_000_000) == 100
    assert task_count(_Cluster, 8, 3) == 3  # ... nor over one a row
    assert task_count(_Cluster, 8, 0) == 1


def test_the_help_and_the_docs_give_the_rows_a_task_takes_at_most(capsys):
    from hopgraph.graph_store.cluster.tasks import TASK_ROWS

    with pytest.raises(SystemExit):
        main(["graph", "build", "--help"])
    assert f"P x {TASK_ROWS:,} chunks" in " ".join(capsys.readouterr().out.split())
    scaling = Path(__file__).parents[4] / "docs" / "scaling.md"
    assert f"P × {TASK_ROWS:,} chunks" in " ".join(scaling.read_text(encoding="utf-8").split())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_a_task_starts_without_what_the_workers_earlier_tasks_freed():
    """What a task frees in small blocks stays in the C heap; the next task's peak would start
    there. release_heap gives it back (in a process of its own: the test's RSS is its own)."""
    script = (
        "import numpy as np\n"
        "from hopgraph.graph_store.cluster.partitions import release_heap, rss_mb\n"
        "keep = [np.ones(1000) for _ in range(40_000)]\n"  # 8 KB blocks: the heap, not mmap
        "del keep[::2]\n"  # every other one freed: the heap cannot shrink from its top
        "before = rss_mb()\n"
        "release_heap()\n"
        "print(before - rss_mb())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) > 40  # of the 160 MB freed


class _Ref:
    def __init__(self, value):
        self.value = value


class _Task:
    def __init__(self, function):
        self.function = function

    def remote(self, *args):  # as Ray does: a reference given is the value in the task
        return self.function(*(a.value if isinstance(a, _Ref) else a for a in args))


class _Ray:
    """Ray's calls that tasks.ray_map makes, run here; what goes to the object store counted."""

    class exceptions:  # Ray's name
        RayError = RuntimeError

    def __init__(self):
        self.put_bytes = 0

    def remote(self, **_options):
        return _Task

    def put(self, value):
        self.put_bytes += getattr(value, "nbytes", 0)
        return _Ref(value)

    def get(self, found):
        return found


def _mean_of(shared, start, stop):  # a task reading a large argument every call is given
    return float(shared[start:stop].mean())


def test_an_argument_every_call_shares_goes_to_the_object_store_once():
    """A step's large argument (the IVF centroids) is put once a step, not once a task: put
    per call, the graph build's driver wrote 4 bytes a passage a task (286 MB at 3M in 24)."""
    import numpy as np

    from hopgraph.graph_store.cluster.tasks import SHARED_FROM, ray_map

    ray = _Ray()
    shared = np.ones(SHARED_FROM // 8 + 1)  # just over the bound
    calls = [(shared, i, i + 10) for i in range(0, 240, 10)]
    assert ray_map(ray)(_mean_of, calls) == [1.0] * 24
    assert ray.put_bytes == shared.nbytes  # once, for 24 calls
