import json

import pytest

from hopgraph.core.errors import InputError
from hopgraph.graph_store import load_documents
from tests.conftest import DOCS, write_jsonl


def test_jsonl_and_benchmark_folder_load_the_same(tmp_path, corpus_file):
    assert [d.id for d in load_documents(corpus_file)] == [d["id"] for d in DOCS]
    assert load_documents(tmp_path) == load_documents(corpus_file)  # folder with corpus.jsonl


def test_text_folder_uses_markdown_heading_as_title(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text("# Alpha page\nBody of alpha.", encoding="utf-8")
    (tmp_path / "sub" / "b_note.txt").write_text("Plain text.", encoding="utf-8")
    docs = load_documents(tmp_path)
    assert [(d.id, d.title, d.text) for d in docs] == [
        ("a.md", "Alpha page", "Body of alpha."),
        ("sub/b_note.txt", "b note", "Plain text."),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "text": "ok"}\n{"id": "b", "text": \n', "corpus.jsonl:2: malformed JSON"),
        (
            '{"id": "a", "text": "ok"}\n{"id": "a", "text": "again"}\n',
            "duplicate document ids: 'a'",
        ),
        ('{"id": "a"}\n', "corpus.jsonl:1: missing or empty 'text'"),
        ('{"text": "no id"}\n', "corpus.jsonl:1: missing 'id'"),
        ('["not", "an", "object"]\n', "corpus.jsonl:1: expected a JSON object"),
        ("\n\n", "the corpus is empty"),
    ],
)
def test_bad_jsonl_is_reported_with_its_line(tmp_path, content, message):
    path = tmp_path / "corpus.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        load_documents(path)


def test_missing_path_and_non_utf8(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_documents(tmp_path / "nope.jsonl")
    bad = tmp_path / "latin.jsonl"
    bad.write_bytes(json.dumps({"id": "x", "text": "caf"}).encode()[:-2] + b'\xe9"}\n')
    with pytest.raises(InputError, match="not valid UTF-8"):
        load_documents(bad)


def test_empty_folder_and_wrong_suffix(tmp_path):
    with pytest.raises(InputError, match=r"no corpus\.jsonl and no \.txt or \.md files"):
        load_documents(tmp_path)
    other = write_jsonl(tmp_path / "corpus.csv", DOCS)
    with pytest.raises(InputError, match=r"expected a \.jsonl file"):
        load_documents(other)


def test_unreadable_file(tmp_path, corpus_file, monkeypatch):
    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(type(corpus_file), "read_text", denied)
    with pytest.raises(InputError, match="cannot be read \\(Permission denied\\)"):
        load_documents(corpus_file)
