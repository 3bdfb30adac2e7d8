"""Documentation files through real parsers: docutils (with Sphinx's markup) and markdown-it."""

import re
import textwrap
from pathlib import Path

import pytest

from hopgraph.core.errors import InputError
from hopgraph.graph_store.documents.chunking import chunk_document
from hopgraph.graph_store.documents.loaders import load_corpus
from hopgraph.graph_store.documents.schema import Document

API_RST = """\
:orphan:

.. _api:

API Reference
=============

.. module:: flaskish

This part covers the ``Application`` object, :func:`~flaskish.helpers.url_for`,
:ref:`the tutorial <tutorial>` and |project|.

.. |project| replace:: Flaskish

Sessions
--------

If you change a mutable value you have to mark it::

    # so mark it as modified yourself
    session.modified = True

    ## not a heading either
    def f():
        return 1

.. code-block:: python
   :caption: app.py
   :emphasize-lines: 2

   # configure the app
   app = Flaskish(__name__)

.. py:function:: url_for(endpoint, **values)

   Build a URL for the endpoint.

   .. versionadded:: 2.0
      The ``_scheme`` argument.

.. include:: parts/part.rst

.. include:: missing.rst

.. literalinclude:: parts/code.py
   :lines: 2-3

Using ``async`` and ``await``
-----------------------------

#. First item of the list
#. Second item of the list

.. note:: Notes are kept.

.. this is a comment
   over two lines

Signals
~~~~~~~

Signals are sent when :data:`request_started` fires.
"""

PART_RST = """\
Included Part
-------------

Text from the included file, with a :class:`Thing`.
"""

CODE_BLOCKS = [
    "# so mark it as modified yourself\nsession.modified = True\n\n"
    "## not a heading either\ndef f():\n    return 1",
    "# configure the app\napp = Flaskish(__name__)",
    "line two\nline three",
]
HEADING_PATHS = {
    "",
    "Sessions",
    "Included Part",
    "Using async and await",
    "Using async and await > Signals",
}


@pytest.fixture
def rst_folder(tmp_path: Path) -> Path:
    (tmp_path / "parts").mkdir()
    (tmp_path / "api.rst").write_text(API_RST)
    (tmp_path / "parts" / "part.rst").write_text(PART_RST)
    (tmp_path / "parts" / "code.py").write_text("line one\nline two\nline three\nline four\n")
    return tmp_path


def words(text: str) -> int:
    return len(text.split())


def test_rst_sections_are_real_heading_paths_and_code_survives(rst_folder: Path):
    loaded = load_corpus(rst_folder / "api.rst")
    [doc] = loaded.documents
    assert doc.title == "API Reference"
    for size in (20, 40, 400):
        chunks = chunk_document(doc, size, words)
        assert {c.section for c in chunks} <= HEADING_PATHS
        assert {c.section for c in chunks} == HEADING_PATHS  # a chunk lies in one section
    text = doc.text
    for code in CODE_BLOCKS:
        assert f"\n{code}\n```" in text
    assert "the tutorial" in text and "`url_for()`" in text and "Flaskish" in text
    assert "Text from the included file, with a `Thing`." in text
    assert ":func:" not in text and ":caption:" not in text and "comment" not in text
    assert "1. First item of the list\n2. Second item of the list" in text
    assert "Added in version 2.0. The `_scheme` argument." in text
    assert "`url_for(endpoint, **values)`" in text
    assert "Note: Notes are kept." in text
    [(name, warning)] = loaded.report.warnings
    assert name == "api.rst" and "missing.rst" in warning and "line" in warning


def test_the_section_of_every_chunk_in_a_long_file(rst_folder: Path):
    [doc] = load_corpus(rst_folder / "api.rst").documents
    chunks = chunk_document(doc, 20, words)

    def section_of(words: str) -> str:
        return next(c.section for c in chunks if words in c.text)

    assert section_of("session.modified") == "Sessions"  # under it, though "# ..." lines follow
    assert section_of("Text from the included file") == "Included Part"
    assert section_of("Signals are sent").startswith("Using async and await")


def test_a_missing_include_stops_a_strict_load_naming_it(rst_folder: Path):
    with pytest.raises(InputError, match=r"missing\.rst"):
        load_corpus(rst_folder, strict=True)


def test_circular_includes_are_refused_and_named(tmp_path: Path):
    (tmp_path / "a.rst").write_text("A\n=\n\nText a.\n\n.. include:: b.rst\n")
    (tmp_path / "b.inc").write_text("")
    (tmp_path / "b.rst").write_text("B text.\n\n.. include:: a.rst\n")
    loaded = load_corpus(tmp_path / "a.rst")
    assert loaded.documents[0].text == "Text a.\n\nB text."
    assert any("circular inclusion" in w for _, w in loaded.report.warnings)


def test_unknown_directives_keep_their_content_and_options_stay_out(tmp_path: Path):
    (tmp_path / "x.rst").write_text(
        textwrap.dedent("""\
        Title
        =====

        .. tabs::
           :sync: yes

           .. tab:: Linux

              Run the installer.

        .. toctree::
           :maxdepth: 2

           install
        """)
    )
    [doc] = load_corpus(tmp_path / "x.rst").documents
    assert doc.text == "Linux\n\nRun the installer."


MARKDOWN = """\
---
title: Guide
tags: [a, b]
---

Intro.

## Using `async` and **await**

```python
# a comment, not a heading
x = 1
```

    # indented code, not a heading

### Deeper [link](https://example.org)

Text under it.
"""


def test_markdown_sections_are_plain_text_and_code_stays(tmp_path: Path):
    (tmp_path / "guide.md").write_text(MARKDOWN)
    [doc] = load_corpus(tmp_path / "guide.md").documents
    assert (doc.title, doc.metadata) == ("Guide", {"tags": "a, b"})
    chunks = chunk_document(doc, 12, words)
    assert {c.section for c in chunks} <= {
        "",
        "Using async and await",
        "Using async and await > Deeper link",
    }
    assert chunks[-1].section == "Using async and await > Deeper link"
    assert any("```python\n# a comment, not a heading\nx = 1\n```" in c.text for c in chunks)


def test_myst_labels_and_role_names_are_dropped_outside_code(tmp_path: Path):
    (tmp_path / "p.md").write_text(
        "(label)=\n# Page\n\nThe {mod}`contextvars` module.\n\n"
        "```md\nWrite {func}`x` like this.\n(kept)=\n```\n"
    )
    [doc] = load_corpus(tmp_path / "p.md").documents
    assert doc.title == "Page"
    assert (
        doc.text == "The `contextvars` module.\n\n```md\nWrite {func}`x` like this.\n(kept)=\n```"
    )


def test_the_default_role_shows_a_cross_reference_title(tmp_path: Path):
    (tmp_path / "a.rst").write_text(
        "Page\n====\n\nRemove `SchemaOpts <marshmallow.SchemaOpts>` args\n"
        "-------------------------------------------------\n\nSee `plain` and :pep:`8`.\n"
    )
    [doc] = load_corpus(tmp_path / "a.rst").documents
    assert doc.text == "# Remove SchemaOpts args\n\nSee plain and PEP 8."


def test_python_roles_show_what_sphinx_shows(tmp_path: Path):
    """Issue 53: a leading dot stayed on ``:attr:`.x``` targets; functions lacked their ()."""
    (tmp_path / "a.rst").write_text(
        "Page\n====\n\nSet :attr:`.Flask.config`, call :meth:`~.Flask.run` and "
        ":func:`url_for`, or :func:`url_for() <flask.url_for>`; :class:`~flask.Flask`, "
        ":meth:`Flask.run()`, :meth:`the runner <.Flask.run>` and :py:meth:`!Flask.send`.\n"
    )
    [doc] = load_corpus(tmp_path / "a.rst").documents
    assert doc.text == (
        "Set `Flask.config`, call `run()` and `url_for()`, or `url_for()`; `Flask`, "
        "`Flask.run()`, `the runner` and `Flask.send()`."
    )


def test_index_strict_with_a_missing_include_writes_nothing(rst_folder: Path, capsys):
    from hopgraph.cli import main

    index = rst_folder.parent / "strict-idx"
    argv = ["index", str(rst_folder), "--index", str(index), "--model", "hashing", "--strict"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "missing.rst" in err and "drop --strict" in err
    assert not index.exists()
    assert main(argv[:-1]) == 0  # without --strict: indexed, the include named as a warning
    assert "missing.rst" in capsys.readouterr().err


def test_ref_and_doc_show_the_title_they_point_to_across_the_folder(tmp_path: Path):
    """Issue 53: a bare :ref: showed its label and :doc: its path."""
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.rst").write_text(
        "Welcome\n=======\n\nSee :ref:`Signals-Intro`, :ref:`Other <signals-intro>`, "
        ":doc:`guide/install`, :doc:`/guide/install`, :ref:`missing-label` and :doc:`nowhere`.\n"
    )
    (tmp_path / "guide" / "install.rst").write_text(
        ".. _install:\n\n=================\nInstalling ``x``\n=================\n\n"
        "Back to :doc:`../index`, :doc:`notes` and :ref:`install`.\n\n"
        ".. _signals-intro:\n\nThe *Signals* API\n-----------------\n\nText.\n"
    )
    (tmp_path / "guide" / "notes.md").write_text("# Release `notes`\n\nText.\n")
    docs = {d.id: d for d in load_corpus(tmp_path).documents}
    assert docs["index.rst"].text == (
        "See The Signals API, Other, Installing x, Installing x, missing-label and nowhere."
    )  # a label or path nothing names stays as written, as Sphinx shows it (with a warning)
    assert docs["guide/install.rst"].text.startswith(
        "Back to Welcome, Release notes and Installing x."
    )
    [alone] = load_corpus(tmp_path / "guide" / "install.rst").documents  # one file: its labels
    assert alone.text.startswith("Back to ../index, notes and Installing x.")


@pytest.mark.parametrize("budget", [25, 40, 60])
def test_a_long_code_block_is_cut_between_statements_each_part_fenced(budget):
    """Issue 53: code was cut mid-statement and the continuation had no opening fence."""
    code = []
    for i in range(12):
        code += [
            f"def function_{i}(argument, other):",
            "    value = compute(argument,",
            "                    other)  # continued",
            "    if value:",
            "        return value",
            "    else:",
            f"        return {i}",
            "",
        ]
    body = "\n".join(code).rstrip()
    text = f"Intro.\n\n```python\n{body}\n```\n\nAfter."
    chunks = chunk_document(Document("d", "T", text), budget, lambda t: len(t.split()))
    assert len(chunks) > 2
    parts = []
    for chunk in chunks:
        assert chunk.text.count("```") % 2 == 0, chunk.text
        for block in chunk.text.split("```python\n")[1:]:
            parts.append(block.split("\n```")[0])
    for part in parts:  # each part opens a statement, never continues one
        first = part.split("\n")[0].strip()
        assert not first.startswith(("other)", "else")), part
        if budget >= 40:  # a whole function fits: parts hold whole functions
            assert part.startswith("def function_"), part
    kept = [line for part in parts for line in part.split("\n") if line.strip()]
    assert kept == [line for line in code if line.strip()]  # every line once, in order


def test_a_described_name_stays_with_its_description(tmp_path: Path):
    """Issue 74: a ``py:data`` / ``confval`` entry's name and the start of its description are
    one paragraph, so no chunk ends with a lone name whose description opens the next chunk."""
    entries = "\n".join(
        f".. py:data:: SETTING_{n}\n\n   Setting {n} sets how the application handles "
        f"request number {n}; the default suits most deployments and rarely needs a change.\n"
        for n in range(30)
    )
    (tmp_path / "config.rst").write_text(f"Configuration\n=============\n\n{entries}")
    doc = load_corpus(tmp_path).documents[0]
    assert "`SETTING_3`: Setting 3 sets how" in doc.text
    chunks = chunk_document(doc, 60, lambda text: len(text.split()))
    assert len(chunks) > 5
    for chunk in chunks:
        last = chunk.text.strip().splitlines()[-1]
        assert not re.fullmatch(r"`SETTING_\d+`:?", last.strip()), chunk.text
