import json

import pytest

from hopgraph.core.errors import InputError
from hopgraph.graph_store import load_corpus, load_documents
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
    with pytest.raises(InputError, match=r"no corpus\.jsonl and no document files"):
        load_documents(tmp_path)
    other = write_jsonl(tmp_path / "corpus.csv", DOCS)
    with pytest.raises(InputError, match=r"expected a \.jsonl file, a document"):
        load_documents(other)


def test_unreadable_file(tmp_path, corpus_file, monkeypatch):
    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(type(corpus_file), "read_bytes", denied)
    with pytest.raises(InputError, match="cannot be read \\(Permission denied\\)"):
        load_documents(corpus_file)


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF whose text layer says ``text`` (pypdf repairs the offsets)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )


@pytest.fixture
def documents_folder(tmp_path):
    folder = tmp_path / "docs"
    (folder / "guide").mkdir(parents=True)
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: main")
    (folder / "guide" / "install.md").write_text(
        "---\ntitle: Installing\ntags: [setup, pip]\nversion: 2\n---\n"
        "# Install\n\nRun this:\n\n```sh\npip install hopgraph\n```\n",
        encoding="utf-8",
    )
    (folder / "usage.rst").write_text(
        "Usage\n=====\n\nIntro text.\n\nQueries\n-------\n\nAsk a question::\n\n    hopgraph ask\n",
        encoding="utf-8",
    )
    (folder / "page.html").write_text(
        "<html><head><title>Page</title><style>p{}</style></head><body><nav>menu</nav>"
        "<h2>Part</h2><p>Some <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul>"
        "<script>alert(1)</script></body></html>",
        encoding="utf-8",
    )
    (folder / "notes.txt").write_text("Plain notes.", encoding="utf-8")
    (folder / "latin.txt").write_bytes("Café crème à la française, très bien.".encode("latin-1"))
    (folder / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n")
    (folder / "paper.pdf").write_bytes(tiny_pdf("Hello from a PDF"))
    return folder


def test_a_folder_of_documents_loads_every_kind_and_reports_the_rest(documents_folder):
    loaded = load_corpus(documents_folder)
    docs = {d.id: d for d in loaded.documents}
    assert sorted(docs) == [
        "guide/install.md",
        "latin.txt",
        "notes.txt",
        "page.html",
        "paper.pdf",
        "usage.rst",
    ]
    md = docs["guide/install.md"]
    assert md.title == "Installing"
    assert md.metadata == {"tags": "setup, pip", "version": 2}
    assert "```sh\npip install hopgraph\n```" in md.text
    assert md.source == str((documents_folder / "guide" / "install.md").resolve())
    rst = docs["usage.rst"]
    assert (rst.title, rst.text.splitlines()[0]) == ("Usage", "Intro text.")
    assert "# Queries" in rst.text and "```\nhopgraph ask\n```" in rst.text
    html = docs["page.html"]
    assert html.title == "Page"
    assert "## Part" in html.text and "Some bold text." in html.text
    assert "- one\n- two" in html.text
    assert not any(x in html.text for x in ("<", "alert", "menu", "p{}"))
    assert docs["latin.txt"].text == "Café crème à la française, très bien."
    assert "Hello from a PDF" in docs["paper.pdf"].text
    report = loaded.report
    assert dict(report.skipped) == {
        "blob.txt": "binary file (NUL bytes), not text",
        "image.png": "not a supported kind (.png)",
    }
    assert [name for name, _ in report.redecoded] == ["latin.txt"]
    summary = "\n".join(report.summary())
    assert "6 document(s), 2 skipped, 1 re-decoded" in summary
    assert "skipped blob.txt" in summary and "re-decoded latin.txt" in summary


def test_strict_stops_at_the_first_unreadable_file(documents_folder):
    with pytest.raises(InputError, match=r"blob\.txt: binary file"):
        load_corpus(documents_folder, strict=True)  # (other kinds, like image.png, never stop it)
    assert len(load_corpus(documents_folder, exclude=["blob.txt"], strict=True).documents) == 6


def test_include_and_exclude_globs(documents_folder):
    loaded = load_corpus(documents_folder, include=["*.md", "*.rst"], exclude=["guide/*"])
    assert [d.id for d in loaded.documents] == ["usage.rst"]
    assert loaded.report.skipped == []


def test_a_single_document_file_and_jsonl_metadata(tmp_path, documents_folder):
    [doc] = load_corpus(documents_folder / "guide" / "install.md").documents
    assert (doc.id, doc.title) == ("install.md", "Installing")
    with pytest.raises(InputError, match="binary file"):
        load_corpus(documents_folder / "blob.txt")
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"id": "a", "title": "A", "text": "x", "lang": "en", "metadata": {"year": 2020}}\n'
    )
    [doc] = load_documents(path)
    assert doc.metadata == {"year": 2020, "lang": "en"}


def test_index_of_a_mixed_folder_exits_0_and_names_what_it_skipped(
    tmp_path, documents_folder, capsys
):
    from hopgraph.cli import main

    index = tmp_path / "idx"
    argv = ["index", str(documents_folder), "--index", str(index), "--model", "hashing", "-q"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "6 document(s), 2 skipped, 1 re-decoded" in out and "built" in out
    assert "skipped blob.txt: binary file" in err and "skipped image.png" in err
    assert "re-decoded latin.txt from cp1252" in err
    single = ["index", str(documents_folder / "guide" / "install.md"), "--index"]
    assert main([*single, str(tmp_path / "one"), "--model", "hashing", "-q"]) == 0
    assert main([*argv[:3], str(index), "--model", "hashing", "-q"]) == 2  # no --force


def test_documents_over_the_size_limit_are_skipped_and_named(tmp_path, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "small.txt").write_text("A small note.", encoding="utf-8")
    (folder / "huge.txt").write_text("word " * 300_000, encoding="utf-8")  # 1.5 MB
    loaded = load_corpus(folder, max_mb=1.0)
    assert [d.id for d in loaded.documents] == ["small.txt"]
    [(name, why)] = loaded.report.skipped
    assert name == "huge.txt" and "1.5 MB of text, over the 1 MB limit" in why
    with pytest.raises(InputError, match=r"huge\.txt: 1\.5 MB"):
        load_corpus(folder, max_mb=1.0, strict=True)
    monkeypatch.setenv("HOPGRAPH_MAX_DOCUMENT_MB", "1")
    assert len(load_corpus(folder).documents) == 1  # the setting is the default
    assert len(load_corpus(folder, max_mb=2).documents) == 2
