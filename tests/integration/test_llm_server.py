"""LLM extraction through the real ChatOpenAI client against a local OpenAI-compatible server."""

import pytest

from hopgraph.cli import main
from hopgraph.core.settings import IndexSettings
from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer
from hopgraph.graph_store import Document, Index, build_index
from tests.fakes import extraction_reply

pytestmark = pytest.mark.integration

DOCS = [
    Document(f"d{i}", f"Page {i}", f"Alice Smith met Bob Jones in Paris in case {i}.")
    for i in range(5)
]


def respond(prompt, n):
    """Good answers, except: a 429 and a 500 on first sight of two prompts, a stall past the
    client timeout on a third, and malformed output on a fourth (then a repair request)."""
    if "Page 0" in prompt and "RDF" in prompt and n == 1:
        return 429, "slow down"
    if "Page 1" in prompt and "RDF" in prompt and n == 1:
        return 500, "internal error"
    if "Page 2" in prompt and "RDF" in prompt and n == 1:
        return 3.0  # the client times out after 1 s and retries
    if "Page 3" in prompt and "RDF" in prompt and "could not be read" not in prompt:
        return 200, "Sorry, here you go: named_entities = Alice"
    return 200, extraction_reply(prompt.split("\n\nYour previous reply")[0])


@pytest.fixture
def llm_env(monkeypatch):
    with ScriptedOpenAIServer(respond) as server:
        monkeypatch.setenv("HOPGRAPH_LLM_MODEL", "scripted-model")
        monkeypatch.setenv("HOPGRAPH_LLM_BASE_URL", server.url)
        monkeypatch.setenv("HOPGRAPH_LLM_TIMEOUT", "1")
        monkeypatch.setenv("HOPGRAPH_LLM_MAX_RETRIES", "2")
        monkeypatch.setenv("HOPGRAPH_LLM_MAX_CONCURRENCY", "3")
        yield server


def test_llm_graph_build_retries_repairs_caches(tmp_path, llm_env, capsys):
    server = llm_env
    path = tmp_path / "idx"
    build_index(DOCS, path, IndexSettings(model="hashing"), show_progress=False)
    assert main(["graph", "build", "--index", str(path), "--extractor", "llm", "-q"]) == 0
    # 2 prompts per chunk, 1 repair, and 3 failed attempts retried by the client
    assert len(server.requests) == 2 * len(DOCS) + 1 + 3
    assert sorted(s for s in server.statuses if s != 200) == [429, 500]
    with Index.open(path) as idx:
        info = idx.manifest.graph
        assert info["settings"]["extractor"] == "llm"
        assert info["llm"]["requests"] == 2 * len(DOCS) + 1  # what our code asked for
        assert info["llm"]["parse_failures"] == 0  # "Page 3" was repaired by the second ask
        assert info["llm"]["prompt_tokens"] > 0
        kg = idx.knowledge_graph
        assert {"alice smith", "bob jones", "paris"} <= set(kg.entities)
        assert {t.chunk_id for t in kg.triples} == {"d0", "d1", "d2", "d3", "d4"}
        assert len(idx.passage_graph.neighbours("d0", ["entity"])) == 4
    # a second build pays nothing: every reply comes from the cache
    before = len(server.requests)
    assert main(["graph", "build", "--index", str(path), "--extractor", "llm", "-q"]) == 0
    assert len(server.requests) == before


def test_llm_extractor_without_configuration_says_what_to_set(tmp_path, monkeypatch, capsys):
    for name in ("HOPGRAPH_LLM_MODEL", "HOPGRAPH_LLM_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    build_index(DOCS, tmp_path / "idx", IndexSettings(model="hashing"), show_progress=False)
    code = main(["graph", "build", "--index", str(tmp_path / "idx"), "--extractor", "llm"])
    assert code == 2
    assert "no LLM is configured" in capsys.readouterr().err
    with Index.open(tmp_path / "idx") as idx:
        assert idx.manifest.graph is None  # nothing half-written
