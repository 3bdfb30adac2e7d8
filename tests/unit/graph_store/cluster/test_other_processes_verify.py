"""What a cluster's other processes read of an index is verified as this process's reads are
(issue 73): a shard (a Serve replica) registers its generation's block checksums itself, and a
write's task is sent what the write's driver expects of the files it reads."""

import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from hopgraph.core import file_reads
from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import registered, verify_file
from hopgraph.graph_store import Index
from hopgraph.graph_store.cluster.shard import Shard
from hopgraph.graph_store.cluster.tasks import _measured
from hopgraph.graph_store.stores.manifest import read_manifest
from tests.sample_index import written_in_four_steps


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return written_in_four_steps(tmp_path_factory.mktemp("verify") / "index")


def damaged_copy(written, tmp_path, ending: str):
    index = tmp_path / "idx"
    shutil.copytree(written, index)
    name = next(n for n in sorted(read_manifest(index).sizes) if n.endswith(ending))
    data = bytearray((index / name).read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(x ^ 0xFF for x in data[middle : middle + 64])
    (index / name).write_bytes(bytes(data))
    return index, name


def test_a_shard_verifies_what_it_reads(written, tmp_path, monkeypatch):
    index, name = damaged_copy(written, tmp_path, "vectors/vectors.npy")
    monkeypatch.setattr(file_reads, "_SUMS", {})  # a replica's own process: nothing registered
    query = np.ones(read_manifest(index).embedder["dimension"], dtype=np.float32)
    with pytest.raises(IndexStateError) as caught:
        shard = Shard(str(index), 0, 1, None, "exact")  # the small segments: verified at open
        shard.dense_top(query, 5, None)  # a full scan reaches every vector
    assert f"{name.split('/')[-1]} is damaged" in caught.value.message


def test_a_task_verifies_what_it_reads_with_what_the_driver_expects(written, tmp_path):
    index, name = damaged_copy(written, tmp_path, "chunks.jsonl")
    with pytest.raises(IndexStateError):
        Index.open(index)  # registers the generation (as a write's Generation does), refused
    expected = [s for s in registered() if s.path.startswith(str(index))]
    spawn = multiprocessing.get_context("spawn")  # a process that registered nothing itself
    with ProcessPoolExecutor(1, mp_context=spawn) as task:
        with pytest.raises(IndexStateError) as caught:
            task.submit(_measured, verify_file, expected, str(index / name)).result()
        assert "is damaged" in caught.value.message and "check" in caught.value.hint
        sound = next(n for n in read_manifest(index).sizes if n.endswith("documents.jsonl"))
        assert task.submit(_measured, verify_file, expected, str(index / sound)).result()[0]
