"""A write on a full device: named as a full device, the index left as it was, never called damage.

The test mounts a small tmpfs of its own (root only), builds the sample index on it, fills what
is left but a few kilobytes and runs each write: `add`, `sync`, `graph build`, `check --repair`.
Each must exit 2 saying the device is full (how much is free, that nothing needs repair) and
prescribe no repair; once the filler is gone, `check` calls the index sound and the same write
succeeds.
"""

import json
import os
import shutil
import subprocess
import uuid

import pytest

from hopgraph.cli import main

pytestmark = pytest.mark.integration
SAMPLE = "hopgraph/sample/corpus.jsonl"
LEFT = 64 * 1024
"""Bytes left free when the device is filled: less than any of the writes below needs."""


@pytest.fixture
def device(tmp_path):
    """A 48 MB tmpfs mounted for this test alone (skipped where mounting is not allowed)."""
    mount = tmp_path / "dev"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8): the full-disk test cannot run")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        pytest.skip(f"this machine refuses a tmpfs mount ({done.stderr.strip()})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def new_docs(path, n=200):
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            text = f"Page {i} of a new batch, about Port Blair and the Andaman Islands. " * 20
            out.write(json.dumps({"id": f"new-{i}", "title": f"New page {i}", "text": text}) + "\n")
    return path


def fill(mount):
    """Take every free byte of ``mount`` but :data:`LEFT`; return the filler to remove."""
    filler = mount / f"filler-{uuid.uuid4().hex[:6]}"
    free = shutil.disk_usage(mount).free
    with filler.open("wb") as out:
        os.posix_fallocate(out.fileno(), 0, max(free - LEFT, 1))
    return filler


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def written_index(mount, capsys, graphs=True):
    index = mount / "idx"
    assert run(capsys, "index", SAMPLE, "--index", str(index), "--model", "hashing", "-q")[0] == 0
    if graphs:
        assert run(capsys, "graph", "build", "--index", str(index), "-q")[0] == 0
    return index


WRITES = {
    "add": lambda index, docs: ["add", str(docs), "--index", str(index), "-q"],
    "sync": lambda index, docs: ["sync", str(docs), "--index", str(index), "-q"],
    "graph build": lambda index, docs: ["graph", "build", "--index", str(index), "-q"],
    "check --repair": lambda index, docs: ["check", "--repair", "--index", str(index)],
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_on_a_full_device_says_so_and_leaves_the_index_as_it_was(
    device, tmp_path, capsys, write
):
    index = written_index(device, capsys, graphs=write != "graph build")
    docs = new_docs(tmp_path / "new.jsonl")
    if write == "check --repair":  # something to mend: BM25's terms, from the chunks' texts
        next(index.glob("g*/bm25-segment/terms.json")).unlink()
    before = (index / "manifest.json").read_bytes()
    filler = fill(device)
    code, said = run(capsys, *WRITES[write](index, docs))
    assert code == 2, said
    assert f"no space left on the device that holds {index}" in said, said
    assert "free" in said and "Traceback" not in said
    assert "check --repair" not in said and "damaged" not in said, said
    assert (index / "manifest.json").read_bytes() == before  # nothing committed
    filler.unlink()
    if write != "check --repair":
        assert run(capsys, "check", "--index", str(index))[0] == 0
    code, said = run(capsys, *WRITES[write](index, docs))
    assert code == 0, said
    code, said = run(capsys, "check", "--index", str(index))
    assert code == 0 and "sound" in said, said
