import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

DOCS = [
    {
        "id": "d1",
        "title": "Larry Alcala",
        "text": "Larry Alcala was a Filipino cartoonist. "
        "He was educated at the University of Santo Tomas.",
    },
    {
        "id": "d2",
        "title": "University of Santo Tomas",
        "text": "The University of Santo Tomas "
        "is a private university in Manila. Military instruction started there in 1936.",
    },
    {"id": "d3", "title": "Manila", "text": "Manila is the capital of the Philippines."},
    {
        "id": "d4",
        "title": "Van Hook Township",
        "text": "Van Hook Township is a township in Mountrail County, North Dakota.",
    },
    {"id": "d5", "title": "Mountrail County", "text": "Mountrail County has its seat in Stanley."},
    {"id": "d6", "title": "Stanley", "text": "Stanley is a city in North Dakota."},
]


def ranking(hits) -> list[tuple[str, float]]:
    """Return hits as (id, score) pairs to compare rankings.

    Hits scoring 0 tie with every unrelated chunk (the hashing embedder's vectors are
    orthogonal), and which of those an HNSW search returns is arbitrary: they are left out.
    """
    return [(h.id, round(h.score, 4)) for h in hits if abs(h.score) > 1e-6]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def _encoders(tmp_path_factory) -> Path:
    """One folder of ONNX query encoders for the session: a model is exported once, not per test."""
    return tmp_path_factory.mktemp("encoders")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch, _encoders):
    monkeypatch.setenv("HOPGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HOPGRAPH_ENCODERS", str(_encoders))
    monkeypatch.delenv("HOPGRAPH_INDEX", raising=False)
    monkeypatch.delenv("HOPGRAPH_MODEL", raising=False)
    monkeypatch.delenv("HOPGRAPH_CHROMA_URL", raising=False)


@pytest.fixture
def corpus_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", DOCS)


def build_docs_index(path: Path, model: str) -> Path:
    """Index DOCS at ``path`` with ``model`` and build its graphs (semantic edges from 0.1)."""
    from hopgraph.core.settings import IndexSettings
    from hopgraph.graph_store import Document, build_index
    from hopgraph.graph_store.index.build import build_graphs
    from hopgraph.graph_store.index.graph_build import GraphSettings

    docs = [Document(d["id"], d["title"], d["text"]) for d in DOCS]
    build_index(docs, path, IndexSettings(model=model), show_progress=False)
    build_graphs(path, GraphSettings(semantic_min_sim=0.1), show_progress=False)
    return path


@pytest.fixture(scope="module")
def docs_index(tmp_path_factory):
    """DOCS indexed with the hashing embedder, graphs built, open for one test module."""
    from hopgraph.graph_store import Index

    with Index.open(build_docs_index(tmp_path_factory.mktemp("docs") / "idx", "hashing")) as idx:
        yield idx


@pytest.fixture(scope="module")
def real_docs_index_dir(tmp_path_factory):
    """DOCS indexed with the real embedding model, graphs built (integration tests)."""
    from hopgraph.core.settings import IndexSettings

    return build_docs_index(tmp_path_factory.mktemp("real") / "idx", IndexSettings().model)


def train_twice(tmp_path: Path, method: str, questions: list[dict]) -> tuple[Path, dict, list]:
    """Write DOCS + ``questions`` as a train split; train ``method`` twice (METHOD1/2.pt).

    Return the dataset folder, the second run's record and both runs' weights.
    """
    import torch

    from hopgraph.cli import main

    data = tmp_path / "tiny"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(data / "train.jsonl", questions)
    states = []
    for n in (1, 2):
        out = tmp_path / f"{method}{n}.pt"
        args = ["train", method, "--data", str(data), "--model", "hashing", "--out", str(out)]
        assert main([*args, "--epochs", "3", "--hidden", "4", "-q"]) == 0
        record, state = torch.load(out, weights_only=True).values()
        states.append(state)
    return data, record, states


# The files that take longest, started first (with --no-loadscope-reorder xdist's loadfile hands
# out files in collection order, two to each worker at the start): the last files the two
# workers run are then short ones, and neither waits long on the other at the end. By their
# time in a CI run (seconds, -n 2): cluster 608, eval floor 332, hosts 430, local LLM 324,
# faults 322, doc examples 320. The cluster and hosts files are one unit of work for one worker
# (RAY_FILES, below): they run one after the other.
SLOW_FIRST = [
    f"tests/integration/{name}.py"
    for name in (
        "test_cluster", "test_eval_floor", "test_hosts", "test_local_llm", "test_faults",
        "test_doc_examples", "test_real_model", "test_benches", "test_chroma_server",
    )
]  # fmt: skip


RAY_FILES = {"tests/integration/test_cluster.py", "tests/integration/test_hosts.py"}
"""Files that each run Ray clusters under timed load: one worker runs them, one after the
other. Side by side (each worker took one), a third cluster's start timed out ("The current
node timed out during startup") on 2 cores."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Schedule by file (--dist loadfile), with the Ray files one unit of work for one worker."""
    if config.getoption("dist") != "loadfile":
        return None  # xdist's own for any other mode
    from xdist.scheduler import LoadFileScheduling

    class OneRayFileAtATime(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "ray clusters" if scope in RAY_FILES else scope

    return OneRayFileAtATime(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: at for at, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
