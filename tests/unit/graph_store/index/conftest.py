"""Fixtures the index tests share."""

import pytest

from tests.unit.graph_store.index.test_index import ALL, build


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The test pages indexed with the hashing embedder and their graphs built (a module's)."""
    from hopgraph.graph_store import build_graphs
    from hopgraph.graph_store.index.graph_build import GraphSettings

    index = tmp_path_factory.mktemp("pristine") / "idx"
    build(index, ALL)
    build_graphs(index, GraphSettings(), show_progress=False)
    return index
