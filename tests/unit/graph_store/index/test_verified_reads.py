"""No answer from damaged bytes (issue 73, Deliver 1): a reader verifies each block of a file
against the CRC-32 its generation recorded before it first uses those bytes.

Every file of a graph-built index is damaged in turn, keeping its size (4 kB zeroed in its
middle): every method either answers as the undamaged index does or fails with the damage
named, and the fix `check` gives; never a different answer. `check --repair` then mends it.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from hopgraph.cli import main
from hopgraph.core.errors import HopgraphError, IndexStateError
from hopgraph.core.file_reads import BLOCK, BlockSums, block_sums, expect, verify_rows
from hopgraph.graph_store import Index
from hopgraph.graph_store.stores.manifest import read_manifest
from hopgraph.tools import make_retriever

METHODS = ["bm25", "dense", "hybrid", "gnn_ret", "naive_ge", "iier"]  # no trained or LLM one
QUESTIONS = ["Where is the seat of Mountrail County?", "Stanley"]
FIXES = ("hopgraph index SOURCE", "hopgraph graph build", "hopgraph check --repair")


def answers(index_dir) -> dict[tuple[str, str], list[str] | str]:
    """Each method's top 5 for each question, or the damage it was refused with."""
    out: dict[tuple[str, str], list[str] | str] = {}
    try:
        index = Index.open(index_dir)
    except IndexStateError as err:
        return {("open", ""): f"{err.message} | {err.hint}"}
    with index:
        for method in METHODS:
            for question in QUESTIONS:
                try:
                    hits = make_retriever(method, index).retrieve(question, 5)
                    out[method, question] = [h.id for h in hits]
                except HopgraphError as err:
                    out[method, question] = f"{err.message} | {err.hint}"
    return out


def zero_middle(path) -> None:
    data = bytearray(path.read_bytes())
    width = min(4096, max(1, len(data) // 2))
    at = (len(data) - width) // 2
    data[at : at + width] = bytes(width) if any(data[at : at + width]) else b"\xff" * width
    path.write_bytes(bytes(data))


def test_no_damaged_file_gives_an_answer(pristine, tmp_path, capsys):
    expected = answers(pristine)
    assert all(isinstance(v, list) and v for v in expected.values()), expected
    names = sorted(read_manifest(pristine).sizes)
    refused = set()
    for name in names:
        index = tmp_path / name.replace("/", "_") / "idx"  # a new path: verified afresh
        shutil.copytree(pristine, index)
        zero_middle(index / name)
        for key, got in answers(index).items():
            if isinstance(got, list):
                assert got == expected[key], (name, key)  # the damage missed what it read
                continue
            refused.add(name)
            assert name.split("/")[-1] in got and "is damaged" in got, (name, key, got)
            assert any(fix in got for fix in FIXES), (name, got)
        assert main(["check", "--repair", "--index", str(index)]) == 0, capsys.readouterr()
        assert answers(index) == expected, name
    # what every query reads is refused, whichever method reads it
    for part in ("chunks.jsonl", "vectors.npy", "ids.json", "nodes.json", "passages-entity.npz"):
        assert any(n.endswith(part) for n in refused), (part, sorted(refused))


def test_a_mapped_table_is_verified_a_block_at_a_time_once(tmp_path):
    rows = (3 * BLOCK) // (16 * 4) + 100  # a little over 3 blocks of 16 float32s a row
    path = tmp_path / "vectors.npy"
    np.save(path, np.arange(rows * 16, dtype=np.float32).reshape(rows, 16))
    size = path.stat().st_size
    _, sums = block_sums(path, size)
    assert len(sums) == 8 * 4
    data = bytearray(path.read_bytes())
    data[2 * BLOCK + 10] ^= 0xFF  # the third block
    path.write_bytes(bytes(data))
    hint = "`hopgraph check --repair --index X`"
    expect([BlockSums(str(path), size, sums, lambda: hint, BLOCK)])
    table = np.load(path, mmap_mode="r")
    per_block = BLOCK // 64
    verify_rows(table, np.array([0, 5, per_block + 3]))  # the first two blocks: sound
    verify_rows(table[per_block:], np.array([1]))  # a view of a slice: its own offset
    with pytest.raises(IndexStateError) as caught:
        verify_rows(table, np.array([2 * per_block + 1]))
    assert f"{path} is damaged" in caught.value.message
    assert f"bytes {2 * BLOCK:,} to {3 * BLOCK:,}" in caught.value.message
    assert caught.value.hint == hint
    with pytest.raises(IndexStateError):  # never verified: asked again, refused again
        verify_rows(table)


def test_what_is_recorded_of_a_purged_file_is_let_go(tmp_path):
    from hopgraph.core.file_reads import expected

    old, new = tmp_path / "g1.bin", tmp_path / "g2.bin"
    for path in (old, new):
        path.write_bytes(b"x" * 10)
    sums = {p: BlockSums(str(p), 10, block_sums(p, 10)[1], lambda: "") for p in (old, new)}
    expect([sums[old]], tmp_path)
    assert expected(old) is sums[old]
    old.unlink()  # the next write purged the older generation
    expect([sums[new]], tmp_path)
    assert expected(old) is None and expected(new) is sums[new]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 256 bytes: the test index's files each span several."""
    from hopgraph.core import file_reads
    from hopgraph.graph_store.stores import manifest

    monkeypatch.setattr(file_reads, "BLOCK", 256)
    monkeypatch.setattr(manifest, "BLOCK", 256)


def test_blocks_are_recorded_then_added_by_the_next_write_to_an_index_without(
    tmp_path, small_blocks
):
    from hopgraph.graph_store import Document, add_documents
    from hopgraph.graph_store.stores.manifest import record_files
    from tests.unit.graph_store.index.test_index import ALL, build

    index = tmp_path / "idx"
    build(index, ALL[:4])
    recorded = read_manifest(index)
    assert recorded.blocks and all(recorded.sizes[n] > 256 for n in recorded.blocks)
    # as an index written before block checksums: none recorded
    read_manifest(index).model_copy(update={"blocks": {}}).write(index)
    add_documents(index, [Document("new", "New", "A new note on Stanley.")], False)
    after = read_manifest(index)
    kept = [n for n in recorded.blocks if n in after.sizes]  # the first generation's files
    assert kept and all(after.blocks[n] == recorded.blocks[n] for n in kept)  # hashed again
    # one damaged since keeps its recorded checksum, for `check` to name, and gets no blocks
    legacy = after.model_copy(update={"blocks": {}})
    damaged = next(n for n in kept if n.endswith("vectors.npy"))
    data = bytearray((index / damaged).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (index / damaged).write_bytes(bytes(data))
    record_files(index, (final := legacy.model_copy()), legacy)
    assert damaged not in final.blocks and final.checksums[damaged] == after.checksums[damaged]
    assert all(final.blocks[n] == after.blocks[n] for n in kept if n != damaged)


def test_blocks_of_another_size_are_read_as_recorded(tmp_path, monkeypatch):
    """Block checksums recorded with another block size (another version) verify as recorded,
    and the next write records them again in this version's size."""
    from hopgraph.core import file_reads
    from hopgraph.graph_store import Document, add_documents
    from hopgraph.graph_store.stores import manifest
    from tests.unit.graph_store.index.test_index import ALL, build

    index = tmp_path / "idx"
    for module in (file_reads, manifest):
        monkeypatch.setattr(module, "BLOCK", 256)
    build(index, ALL[:4])
    for module in (file_reads, manifest):
        monkeypatch.setattr(module, "BLOCK", 512)
    assert answers(index)[("dense", "Stanley")]  # read, verified in blocks of 256 bytes
    add_documents(index, [Document("new", "New", "A new note on Stanley.")], False)
    after = read_manifest(index)
    assert after.block_size == 512 and after.blocks
    assert all(len(s) == 8 * -(-after.sizes[n] // 512) for n, s in after.blocks.items())


def test_a_link_put_in_a_files_place_after_the_open_is_refused(tmp_path):
    from hopgraph.core.file_reads import verify_range

    path = tmp_path / "table.bin"
    path.write_bytes(b"y" * 10)
    expect([BlockSums(str(path), 10, block_sums(path, 10)[1], lambda: "check --repair")])
    path.unlink()
    path.symlink_to("/dev/zero")
    with pytest.raises(IndexStateError) as caught:
        verify_range(path, 0, 4)
    assert f"{path} cannot be read" in caught.value.message
    assert caught.value.hint == "check --repair"


def test_a_file_put_in_a_verified_ones_place_is_verified_anew(pristine, tmp_path):
    """A copy of the index put where one was (same path, same recorded sums): its files are not
    taken as verified by this process's reads of the one before (issue 73: a same-size file of
    another generation swapped in)."""
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    expected = answers(index)  # every file read and verified here
    shutil.rmtree(index)
    shutil.copytree(pristine, index)
    name = next(n for n in read_manifest(index).sizes if n.endswith("vectors/vectors.npy"))
    zero_middle(index / name)
    refused = [v for v in answers(index).values() if isinstance(v, str)]
    assert refused and all("is damaged" in v for v in refused), refused
    assert all(v == expected[k] for k, v in answers(index).items() if isinstance(v, list))


def test_a_server_verifies_each_generation_it_opens(pristine, tmp_path, capsys):
    """A LiveIndex (every server's) verifies the whole generation when it opens it: damage that
    no query has reached yet refuses every request with `check`'s fix, until a repair commits."""
    from hopgraph.core.file_reads import expected
    from hopgraph.graph_store import LiveIndex

    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    with LiveIndex(index) as live:
        live.verification.thread.join(timeout=60)
        assert live.verification.damage is None
        names = read_manifest(index).sizes
        assert all(expected(index / n).whole for n in names)  # every block: no query ran
    damaged = next(n for n in read_manifest(index).sizes if n.endswith("extractions.json"))
    zero_middle(index / damaged)
    with LiveIndex(index) as live:
        live.verification.thread.join(timeout=60)
        with pytest.raises(IndexStateError) as caught:
            live.current()
        assert f"{damaged.split('/')[-1]} is damaged" in caught.value.message
        assert any(fix in caught.value.hint for fix in FIXES)
        assert main(["check", "--repair", "--index", str(index)]) == 0, capsys.readouterr()
        fresh = live.current()  # the repair's generation, verified anew
        live.verification.thread.join(timeout=60)
        assert live.current() is fresh and live.verification.damage is None


def test_a_child_forked_while_a_block_is_verified_verifies_on_its_own(tmp_path):
    """A server's verifying thread may hold a file's lock when a write forks a child: the
    child's locks are its own, so its reads do not wait for a thread it does not have."""
    import os

    from hopgraph.core.file_reads import expected, verify_range

    path = tmp_path / "table.bin"
    path.write_bytes(b"z" * 10)
    expect([BlockSums(str(path), 10, block_sums(path, 10)[1], lambda: "")])
    with expected(path)._lock:  # as the verifying thread holds it
        child = os.fork()
        if child == 0:
            verify_range(path)  # would wait forever on the inherited lock
            os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
