"""Kill a writer (SIGKILL, a real subprocess) at each stage of every write.

The embedded store is killed at every stage, a Chroma server at the stages that write to it
(:data:`STORE_STAGES`).

After the kill the index must open and answer exactly as before the write (or, killed after
its commit, as after it), and the next write must succeed and leave what an uninterrupted
write leaves.
"""

import json
import subprocess
import sys
from dataclasses import asdict

import pytest

from hopgraph.graph_store import Document, Index
from hopgraph.graph_store.documents.schema import chunk_of_row
from hopgraph.graph_store.index.check import check_index
from hopgraph.graph_store.stores.vdb_chroma import ChromaVectorStore
from hopgraph.tools import make_retriever
from tests.conftest import DOCS, ranking
from tests.integration.fault_writer import run

pytestmark = pytest.mark.integration

BASE = [Document(d["id"], d["title"], d["text"]) for d in DOCS[:4]]
NEW = [Document(d["id"], d["title"], d["text"]) for d in DOCS[4:]]
# d2 changed (its chunks replaced under their ids, one more of them), d5 new
CHANGED = [
    Document("d2", BASE[1].title, BASE[1].text + " Its campus in Manila has a museum of arts."),
    NEW[0],
]
WRITES = {
    "index": (BASE[1:] + NEW, ("rows", "tables", "commit", "purge")),
    "add": (NEW, ("rows", "tables", "extraction", "triples", "commit", "purge")),
    "sync": (CHANGED, ("rows", "tables", "extraction", "commit", "purge")),
    "delete": (["d1", "d3"], ("tables", "extraction", "commit", "purge")),
    "graph": ([], ("extraction", "commit", "purge")),
}
STORE_STAGES = ("rows", "triples", "purge")
"""The stages at which a write is in Chroma: the others write the index folder's own files, the
same whatever holds the rows, so a Chroma server is killed at these only (the embedded store at
every stage). A server killed later than `rows` holds what `rows` leaves it (rows of no committed
generation) until the commit."""
CASES = [
    (store, op, stage)
    for store in ("embedded", "server")
    for op, (_, stages) in WRITES.items()
    for stage in stages
    if store == "embedded" or stage in STORE_STAGES
]
QUERIES = ("Santo Tomas military instruction", "Mountrail County seat", "capital")


def payload(op):
    items = WRITES[op][0]
    return [asdict(d) if isinstance(d, Document) else d for d in items]


def write(op, path, url, stage="none"):
    """Run one write in a subprocess, killed at ``stage``; return its exit code."""
    argv = [sys.executable, "-m", "tests.integration.fault_writer", op, str(path), stage, url]
    done = subprocess.run([*argv, json.dumps(payload(op))], capture_output=True, timeout=180)
    return done.returncode


def answers(path):
    """What the index holds and answers: chunks, generation and three methods' rankings."""
    with Index.open(path) as idx:
        ranked = {
            name: [ranking(make_retriever(name, idx).retrieve(q, 3)) for q in QUERIES]
            for name in ("bm25", "dense", "gnn_ret")
            if name != "gnn_ret" or idx.manifest.graph  # a rebuilt index has no graphs yet
        }
        return {"chunks": sorted(idx.chunks), "generation": idx.generation, "ranked": ranked}


def stored_rows(path):
    """The chunk of every passage row in Chroma, committed or not."""
    with Index.open(path) as idx:
        store = ChromaVectorStore(idx.vectors.location)
        try:
            return sorted(chunk_of_row(r) for r in store.collection.get(include=[])["ids"])
        finally:
            store.close()


def base_index(path, url):
    run("index", path, url, [asdict(d) for d in BASE])
    run("graph", path, url, [])


def chroma_url(request, store):
    """Where the rows go: ``-`` (embedded, in the index folder) or the module's Chroma server."""
    if store == "embedded":
        return "-"
    return request.getfixturevalue("module_chroma_server")[0]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """What each write leaves when nothing kills it, per (write, store): built once, as the
    same write from the same base leaves the same index whatever stage a later run is killed at."""
    found = {}

    def after(op, url):
        if (op, url) not in found:
            reference = tmp_path_factory.mktemp("reference")
            base_index(reference, url)
            assert write(op, reference, url) == 0
            found[op, url] = answers(reference)
        return found[op, url]

    return after


@pytest.mark.parametrize(("store", "op", "stage"), CASES)
def test_a_killed_write_leaves_the_last_generation_and_the_next_write_works(
    request, tmp_path, store, op, stage, uninterrupted
):
    url = chroma_url(request, store)
    killed = tmp_path / "killed"
    base_index(killed, url)
    before = answers(killed)
    after = uninterrupted(op, url)

    assert write(op, killed, url, stage) == -9  # the stage was reached and the writer died
    if stage == "purge":  # killed after its commit: the write is there, and whole
        assert answers(killed) == after
        run("add", killed, url, [asdict(Document("x1", "Extra", "An extra page."))])
        with Index.open(killed) as idx:
            assert stored_rows(killed) == sorted(idx.chunks)  # the purge was finished
    else:
        assert answers(killed) == before
        assert check_index(killed) == []  # its folder left: Chroma is read for itself
        assert write(op, killed, url) == 0
        assert answers(killed) == after
        assert check_index(killed) == []  # sealed again by the write
        assert stored_rows(killed) == after["chunks"]
