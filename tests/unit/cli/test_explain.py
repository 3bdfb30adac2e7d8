"""`hopgraph explain`: the evidence graph of a question, drawn as a page."""

import re

import pytest

from hopgraph.cli import main
from hopgraph.explain import explain, render_page


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


def test_gnn_ret_evidence_graph_has_passages_entities_links_and_messages(index):
    graph = explain(index, "Larry Alcala Filipino cartoonist", "gnn_ret", 3, {"d1", "d2"})
    assert [p.id for p in graph.passages][:2] == ["d1", "d2"]
    assert ("d1", "d2", "link") in graph.edges  # d1 names d2's page
    assert ("d1", "d2", "message") in graph.edges  # and GNN-Ret's message travelled it
    assert "university of santo tomas" in graph.entities
    assert ("d2", "university of santo tomas", "mentions") in graph.edges
    page = render_page(graph)
    assert re.findall(r'class="passage gold" data-id="(d\d)"', page) == ["d1", "d2"]
    assert 'class="edge link"' in page and 'data-id="university of santo tomas"' in page
    assert "<script" not in page  # self-contained: nothing to fetch or run


def test_explain_cli_writes_the_page(index, tmp_path, capsys):
    out = tmp_path / "e.html"
    args = ["explain", "Larry Alcala", "--index", str(index.directory), "--out", str(out)]
    assert main([*args, "--method", "iier", "--gold", "d1"]) == 0
    assert "passages" in capsys.readouterr().out and 'data-id="d1"' in out.read_text()
    assert main([*args, "--method", "rgnn_ret"]) == 2  # an agent needs an LLM, and says so
    assert "no LLM is configured" in capsys.readouterr().err
