"""A damaged index: every file of a graph-built index truncated, deleted or with lines dropped.

(Chroma's damage: no reader opens Chroma, so retrieval and `info` answer as before, and `check`
names it.)

`retrieve`, `info` and `check` each exit 2 with a message that names the damaged file and the
command that repairs it; no traceback reaches the user.
"""

import shutil

import pytest

from hopgraph.cli import main
from hopgraph.graph_store.stores.manifest import part_files, read_manifest


def index_files(index):
    parts = part_files(index, read_manifest(index))
    return [p.relative_to(index).as_posix() for p in parts] + ["chroma/chroma.sqlite3"]


def truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def delete(path):
    path.unlink()


def drop_lines(path):
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: max(len(lines) - 2, 0)]) or b"\n")


@pytest.mark.parametrize("damage", [truncate, delete, drop_lines], ids=lambda f: f.__name__)
def test_every_damaged_file_is_named_with_its_fix(pristine, tmp_path, capsys, damage):
    names = index_files(pristine)
    assert len(names) > 15  # chunks, documents, BM25, vectors, both graphs, readings, Chroma
    for name in names:
        if damage is drop_lines and not name.endswith((".jsonl", ".json")):
            continue
        index = tmp_path / name.replace("/", "_") / "idx"
        shutil.copytree(pristine, index)
        damage(index / name)
        # No reader opens Chroma (dense search reads the vector table;
        # graph_store/stores/chroma_seal):
        # a damaged Chroma leaves retrieval and info working; check names the damage.
        if name.startswith("chroma/"):
            for argv in (["retrieve", "Stanley", "--method", "dense"], ["info"]):
                assert main([*argv, "--index", str(index)]) == 0
            capsys.readouterr()
        readers = [["retrieve", "Stanley", "--method", "gnn_ret"], ["info"]]
        for argv in ([] if name.startswith("chroma/") else readers) + [["check"]]:
            code = main([*argv, "--index", str(index)])
            err = capsys.readouterr().err
            where = f"{damage.__name__} {name}: {argv[0]}"
            assert code == 2, where
            assert "Traceback" not in err, where
            assert name.split("/")[-1] in err or "chroma" in err.lower(), (where, err)
            fixes = ("hopgraph index SOURCE", "hopgraph graph build", "hopgraph check --repair")
            assert any(fix in err for fix in fixes), (where, err)


def test_check_finds_damage_that_keeps_a_files_size(pristine, tmp_path, capsys):
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    manifest = read_manifest(index)
    assert set(manifest.checksums) == set(manifest.sizes) and manifest.checksums
    name = manifest.files["chunks"]
    data = bytearray((index / name).read_bytes())
    at = data.index(b"Stanley")
    data[at : at + 7] = b"Stanlee"  # same size: the open-time check cannot see it
    (index / name).write_bytes(bytes(data))
    assert main(["check", "--index", str(index)]) == 2
    err = capsys.readouterr().err
    assert "chunks.jsonl is damaged: its CRC-32" in err and "hopgraph check --repair" in err
    assert main(["check", "--index", str(pristine)]) == 0
    assert "sound" in capsys.readouterr().out
    # Chroma holds the same texts: the repair reads the chunk table back from it
    assert main(["check", "--repair", "--index", str(index)]) == 0
    assert "read back from Chroma: chunks" in capsys.readouterr().out
    assert main(["check", "--index", str(index)]) == 0


def _chroma_files(index):
    return sorted(p for p in (index / "chroma").rglob("*") if p.is_file() and p.stat().st_size)


@pytest.mark.parametrize("damage", [truncate, delete], ids=lambda f: f.__name__)
def test_check_names_damaged_chroma_files_and_repair_rebuilds_them(
    pristine, tmp_path, capsys, damage
):
    import json

    for n, path in enumerate(_chroma_files(pristine)):
        index = tmp_path / f"c{n}" / "idx"
        shutil.copytree(pristine, index)
        damage(index / path.relative_to(pristine))
        where = f"{damage.__name__} {path.name}"
        capsys.readouterr()
        assert main(["check", "--index", str(index)]) == 2, where
        assert "Chroma" in capsys.readouterr().err, where
        assert main(["check", "--repair", "--index", str(index)]) == 0, where
        assert "repaired Chroma" in capsys.readouterr().out, where
        assert (
            main(["retrieve", "Stanley", "--method", "dense", "--json", "--index", str(index)]) == 0
        )
        after = [round(h["score"], 4) for h in json.loads(capsys.readouterr().out)]
        assert (
            main(["retrieve", "Stanley", "--method", "dense", "--json", "--index", str(pristine)])
            == 0
        )
        # the same scores (which of two tied chunks an HNSW search returns is arbitrary)
        assert after == [round(h["score"], 4) for h in json.loads(capsys.readouterr().out)], where


def test_repair_is_refused_while_another_process_writes(pristine, tmp_path, capsys):
    import subprocess
    import sys

    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from hopgraph.graph_store.index.lock import write_lock\n"
         "with write_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(60)",
         str(index)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        before = sorted(p.name for p in index.iterdir())
        assert main(["check", "--repair", "--index", str(index)]) == 2
        err = capsys.readouterr().err
        assert f"PID {holder.pid}" in err
        assert sorted(p.name for p in index.iterdir()) == before  # nothing written
    finally:
        holder.kill()
        holder.wait()


def flip(path, at):
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_any_flipped_byte_of_the_sealed_store_is_named_and_repaired(pristine, tmp_path, capsys):
    # Bytes Chroma never reads (HNSW capacity past its elements, SQLite free pages) included:
    # the seal (graph_store/stores/chroma_seal.py) holds every byte as the last write left it.
    assert read_manifest(pristine).chroma_files
    for n, path in enumerate(_chroma_files(pristine)):
        size = path.stat().st_size
        for at in (0, size // 2, size - 1):
            index = tmp_path / f"f{n}-{at}" / "idx"
            shutil.copytree(pristine, index)
            flip(index / path.relative_to(pristine), at)
            where = f"{path.name} byte {at}"
            capsys.readouterr()
            assert main(["check", "--index", str(index)]) == 2, where
            err = capsys.readouterr().err
            assert "Chroma" in err and path.name in err and "CRC-32" in err, (where, err)
        assert main(["check", "--repair", "--index", str(index)]) == 0, where
        assert main(["check", "--index", str(index)]) == 0, where


def test_reading_with_every_method_leaves_the_store_as_sealed(pristine, tmp_path, capsys):
    from hopgraph.tools.shared.registry import RETRIEVERS

    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    for method, kind in RETRIEVERS.items():  # naive_ge's first use embeds the triples: a write
        if kind.needs_weights or kind.needs_llm:
            continue
        assert main(["retrieve", "Stanley", "--method", method, "--index", str(index)]) == 0
    assert main(["info", "--index", str(index)]) == 0
    for _ in range(2):  # nor does the check itself open it
        assert main(["check", "--index", str(index)]) == 0, capsys.readouterr().err
    assert read_manifest(index).files.get("triple_vectors")


@pytest.mark.parametrize("unsealed", ["older index", "interrupted write"])
def test_an_unsealed_store_is_read_for_itself(pristine, tmp_path, capsys, unsealed):
    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    manifest = read_manifest(index)
    if unsealed == "older index":  # written before the seal
        manifest.chroma_files = {}
        manifest.write(index)
    else:  # a write killed before its commit left its folder (its rows may be in Chroma)
        (index / f"g{manifest.generation + 1:06d}").mkdir()
    [header] = [p for p in (index / "chroma").rglob("header.bin")]
    flip(header, 50)  # inside offsetData: the layout no longer agrees with the sizes
    assert main(["check", "--index", str(index)]) == 2
    assert "HNSW segment" in capsys.readouterr().err


def test_a_damaged_triple_table_is_named_and_rebuilt_with_the_graphs(pristine, tmp_path, capsys):
    import json

    index = tmp_path / "idx"
    shutil.copytree(pristine, index)
    assert main(["retrieve", "Stanley", "--method", "naive_ge", "--index", str(index)]) == 0
    table = index / read_manifest(index).files["triple_vectors"] / "ids.json"
    ids = json.loads(table.read_text())
    table.write_text(json.dumps(ids[::-1]))  # the same size: the open-time size check passes
    capsys.readouterr()
    assert main(["check", "--index", str(index)]) == 2
    err = capsys.readouterr().err
    assert "triple-vectors" in err and "hopgraph graph build" in err, err
    assert main(["check", "--repair", "--index", str(index)]) == 0
    assert main(["check", "--index", str(index)]) == 0
    assert main(["retrieve", "Stanley", "--method", "naive_ge", "--index", str(index)]) == 0
