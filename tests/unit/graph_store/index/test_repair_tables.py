"""`check --repair` mends a lost table from Chroma's copy, and answers as before it was lost."""

import json
import shutil

import pytest

from hopgraph.cli import main
from hopgraph.core.errors import IndexStateError
from hopgraph.evals.faults.damage_matrix import answers, damage
from hopgraph.graph_store import Index
from hopgraph.graph_store.index.check import check_index
from hopgraph.graph_store.index.repair import repair
from tests.conftest import build_docs_index


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    index = build_docs_index(tmp_path_factory.mktemp("tables") / "idx", "hashing")
    with Index.open(index) as idx:
        from hopgraph.tools import make_retriever

        make_retriever("naive_ge", idx)  # its triple vectors: every method of answers() runs
    return index, answers(index)


def parts(index):
    """Return one file of each table of the committed generation (relative to the index)."""
    files = json.loads((index / "manifest.json").read_text())
    segment = files["vectors"][0]
    return [files["files"]["chunks"], files["files"]["documents"], f"{segment}/vectors.npy",
            f"{segment}/ids.json", f"{files['segments'][0]}/tf.npz",
            f"{files['files']['bm25']}/stats.json"]  # fmt: skip


@pytest.mark.parametrize("how", ["truncate", "delete", "flip"])
def test_each_lost_table_is_read_back_from_chroma_and_answers_as_before(pristine, tmp_path, how):
    base, expected = pristine
    for name in parts(base):
        index = tmp_path / name.replace("/", "_") / "idx"
        shutil.copytree(base, index)
        generation = json.loads((index / "manifest.json").read_text())["generation"]
        assert damage(index / name, how)
        assert check_index(index), name  # named
        done = repair(index)
        assert done and check_index(index) == [], (name, done)
        assert json.loads((index / "manifest.json").read_text())["generation"] > generation
        assert answers(index) == expected, name


def test_the_chunk_and_vector_tables_lost_together_come_back_from_chroma(pristine, tmp_path):
    base, expected = pristine
    index = tmp_path / "idx"
    shutil.copytree(base, index)
    files = json.loads((index / "manifest.json").read_text())
    (index / files["files"]["chunks"]).unlink()
    shutil.rmtree(index / files["vectors"][0])
    done = repair(index)
    assert any("read back from Chroma: chunks, vectors" in line for line in done), done
    assert check_index(index) == [] and answers(index) == expected


def test_with_both_copies_lost_the_repair_names_what_to_index_again(pristine, tmp_path, capsys):
    base, _ = pristine
    index = tmp_path / "idx"
    shutil.copytree(base, index)
    files = json.loads((index / "manifest.json").read_text())
    shutil.rmtree(index / files["vectors"][0])
    shutil.rmtree(index / "chroma")
    before = sorted(p.relative_to(index) for p in index.rglob("*"))
    with pytest.raises(IndexStateError, match="cannot derive") as err:
        repair(index)
    assert "index its 6 documents" in err.value.hint
    assert sorted(p.relative_to(index) for p in index.rglob("*")) == before  # nothing written
    assert main(["check", "--repair", "--index", str(index)]) == 2
    assert "index its 6 documents" in capsys.readouterr().err
