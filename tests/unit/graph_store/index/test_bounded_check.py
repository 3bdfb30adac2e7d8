"""`check` and the readers on files that are not what the index wrote: a link to /dev/zero or
to a folder, a pipe, a file no one may read, a manifest grown past any manifest's size.

Each is named, with its fix, in bounded time and memory: nothing follows the link or reads on.
The /dev/zero cases run `hopgraph check` in a child limited to 2 GB of address space and a
minute (an unbounded read there fills the memory, as it did: 21 GB before the kernel's kill).
"""

import os
import resource
import shutil
import subprocess
import sys

import pytest

from hopgraph.cli import main
from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.stores import manifest as manifest_module
from hopgraph.graph_store.stores.manifest import read_manifest

PARTS = {
    "chunks": lambda m: m.files["chunks"],
    "bm25": lambda m: next(n for n in m.sizes if n.endswith("terms.json")),
    "vectors": lambda m: next(n for n in m.sizes if n.endswith("ids.json")),
    "graph": lambda m: next(n for n in m.sizes if n.endswith("entities.json")),
    "chroma": lambda m: next(n for n in m.chroma_files if n.endswith("link_lists.bin")),
    "manifest": lambda m: "manifest.json",
}


def damaged_copy(pristine, tmp_path, part):
    index = tmp_path / part / "idx"
    shutil.copytree(pristine, index)
    name = PARTS[part](read_manifest(index))
    (index / name).unlink()
    return index, name


def _limited():  # in the child, before it runs hopgraph
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("part", sorted(PARTS))
def test_a_link_to_dev_zero_is_named_not_read(pristine, tmp_path, part):
    index, name = damaged_copy(pristine, tmp_path, part)
    os.symlink("/dev/zero", index / name)
    argv = [sys.executable, "-m", "hopgraph", "check", "--index", str(index)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, preexec_fn=_limited, env=env
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert f"{name} is a symbolic link (to /dev/zero)" in done.stderr
    assert "fix:" in done.stderr or "hint:" in done.stderr


@pytest.mark.parametrize("part", ["bm25", "graph", "chroma", "manifest"])
def test_a_pipe_or_a_linked_folder_in_a_files_place_is_named(pristine, tmp_path, capsys, part):
    index, name = damaged_copy(pristine, tmp_path, part)
    os.mkfifo(index / name)  # opened for reading, a pipe with no writer waits for ever
    assert main(["check", "--index", str(index)]) == 2
    assert f"{name} is a pipe, not a regular file" in capsys.readouterr().err
    (index / name).unlink()
    os.symlink(tmp_path, index / name)
    assert main(["check", "--index", str(index)]) == 2
    err = capsys.readouterr().err
    assert f"{name} is a symbolic link (to {tmp_path})" in err and "Traceback" not in err


def test_a_reader_refuses_a_link_and_repair_writes_the_file_again(pristine, tmp_path, capsys):
    index, name = damaged_copy(pristine, tmp_path, "bm25")
    os.symlink("/dev/zero", index / name)
    assert main(["retrieve", "Stanley", "--method", "hybrid", "--index", str(index)]) == 2
    err = capsys.readouterr().err
    assert "is a symbolic link (to /dev/zero)" in err and "hopgraph check --repair" in err
    assert main(["check", "--repair", "--index", str(index)]) == 0
    assert name not in read_manifest(index).sizes  # written again, in a new generation
    assert main(["check", "--index", str(index)]) == 0


def test_an_unreadable_file_is_named_as_such(pristine, tmp_path, capsys, monkeypatch):
    index, name = damaged_copy(pristine, tmp_path, "graph")
    shutil.copy(pristine / name, index / name)
    os.chmod(index / name, 0)
    unreadable = str(index / name)
    real_access = os.access  # root reads a file of mode 000: the kernel's answer is faked
    monkeypatch.setattr(os, "access", lambda p, m: str(p) != unreadable and real_access(p, m))
    assert main(["check", "--index", str(index)]) == 2
    err = capsys.readouterr().err
    assert f"{name} is unreadable (permission denied): give the user" in err
    assert "Traceback" not in err


def test_a_manifest_past_any_manifests_size_is_not_read_whole(pristine, tmp_path, monkeypatch):
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    size = (index / "manifest.json").stat().st_size
    monkeypatch.setattr(manifest_module, "MANIFEST_LIMIT", size - 1)
    with pytest.raises(IndexStateError, match=f"over {size - 1} bytes"):
        read_manifest(index)
    monkeypatch.setattr(manifest_module, "MANIFEST_LIMIT", size)
    assert read_manifest(index).generation >= 1
