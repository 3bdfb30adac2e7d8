"""A write pointed at a folder that is not an index: refused, and the folder left as it was."""

import json

import pytest

from hopgraph.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["add", "DOCS"],
        ["delete", "x"],
        ["sync", "DOCS"],
        ["check", "--repair"],
        ["graph", "build"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_write_to_a_folder_that_is_not_an_index_leaves_nothing_there(tmp_path, capsys, argv):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("mine\n")
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d", "title": "T", "text": "Some text."}) + "\n")
    argv = [str(docs) if a == "DOCS" else a for a in argv]
    assert main([*argv, "--index", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder} is not a hopgraph index (no manifest.json)" in err
    assert "Traceback" not in err
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"]  # no .lock
