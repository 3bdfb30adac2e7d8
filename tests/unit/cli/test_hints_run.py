"""Every repair hint `check` prints is a command that works as printed."""

import json
import re
import shlex
import shutil

import pytest

from hopgraph.cli import main
from tests.conftest import DOCS, write_jsonl

COMMAND = re.compile(r"`(hopgraph [^`]+)`")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hints")
    corpus = write_jsonl(folder / "corpus.jsonl", DOCS)
    index = folder / "idx"
    assert main(["index", str(corpus), "--index", str(index), "--model", "hashing", "-q"]) == 0
    assert main(["graph", "build", "--index", str(index), "--quiet"]) == 0
    return index


def damaged_parts(index):
    files = json.loads((index / "manifest.json").read_text())
    return {
        "chunk table": files["files"]["chunks"],
        "vector table": f"{files['vectors'][0]}/vectors.npy",
        "BM25": f"{files['files']['bm25']}/stats.json",
        "graph": f"{files['files']['graph']}/passages-link.npz",
        "Chroma": "chroma/chroma.sqlite3",
        "manifest": "manifest.json",
    }


@pytest.mark.parametrize("part", ["chunk table", "vector table", "BM25", "graph", "Chroma",
                                  "manifest"])  # fmt: skip
def test_each_hint_check_prints_runs_as_printed_and_mends_the_index(built, tmp_path, capsys, part):
    index = tmp_path / "idx"
    shutil.copytree(built, index)
    path = index / damaged_parts(index)[part]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert main(["check", "--index", str(index)]) == 2
    said = capsys.readouterr()
    commands = sorted(set(COMMAND.findall(said.out + said.err)))
    assert commands, said
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "hopgraph" and "SOURCE" not in argv, command
        assert main(argv[1:]) == 0, (command, capsys.readouterr().err)
    assert main(["check", "--index", str(index)]) == 0, capsys.readouterr()
