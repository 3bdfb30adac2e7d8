"""The Sphinx-docs counts (evals/studies/sphinx_docs.py) and what they found: Sphinx's labels."""

from pathlib import Path

from hopgraph.evals.studies.sphinx_docs import RoleCall, leftover, odd_fences, role_markup
from hopgraph.graph_store.documents.loaders import load_corpus


def test_sphinx_labels_for_its_generated_pages_show_their_titles(tmp_path: Path):
    """Found on Sphinx's docs: :ref:`genindex` showed the label, where Sphinx shows "Index"."""
    (tmp_path / "index.rst").write_text(
        "Home\n====\n\nSee :ref:`genindex`, :ref:`modindex`, :ref:`py-modindex` and "
        ":ref:`search`.\n\n.. _search:\n\nFinding things\n--------------\n\nText.\n"
    )
    [doc] = load_corpus(tmp_path).documents
    assert doc.text.startswith(  # a page's own label wins
        "See Index, Module Index, Python Module Index and Finding things."
    )


def test_the_counts_of_cut_code_and_role_leftovers(tmp_path: Path):
    assert odd_fences("text\n```python\nx = 1\n") and not odd_fences("```\nx\n```\n~~~\ny\n~~~")
    assert role_markup("Call :func:`run` and ``:ref:`x` ``, not `` :doc:`y` ``.") == 1
    (tmp_path / "usage").mkdir()
    (tmp_path / "usage" / "quickstart.rst").write_text("Quick\n=====\n")
    page = str(tmp_path / "index.rst")
    titles = {"intro": "introduction", "plain": "plain", "anon": None}
    calls = {
        "leading_dot": [RoleCall(page, "meth", ".Sphinx.connect", ".Sphinx.connect()")],
        "raw_label": [RoleCall(page, "ref", "intro", "intro")],
        "doc_path": [RoleCall(page, "doc", "usage/quickstart", "usage/quickstart")],
        "": [
            RoleCall(page, "meth", ".Sphinx.connect", "Sphinx.connect()"),
            RoleCall(page, "ref", "intro", "Introduction"),
            RoleCall(page, "ref", "plain", "plain"),  # the label is its title
            RoleCall(page, "ref", "anon", "anon"),  # no title anywhere: Sphinx shows it too
            RoleCall(page, "ref", "Intro <intro>", "Intro"),
            RoleCall(page, "doc", "nowhere", "nowhere"),  # no such page
        ],
    }
    titles = {k: v for k, v in titles.items() if v}
    for kind, made in calls.items():
        assert [leftover(c, tmp_path, titles) for c in made] == [kind] * len(made)
