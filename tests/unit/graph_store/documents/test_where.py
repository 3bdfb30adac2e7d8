"""Metadata filters: ``retrieve(..., where=...)`` on LLM-free retrievers, the CLI and agents."""

import json

import pytest

from hopgraph.cli import main
from hopgraph.core.errors import InputError
from hopgraph.graph_store import Index, build_graphs, build_index, load_documents
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.tools import make_retriever
from tests.conftest import DOCS
from tests.unit.graph_store.index.test_index import HASHING

# d1-d3 are about the Philippines, d4-d6 about North Dakota
REGION = {"d1": "ph", "d2": "ph", "d3": "ph", "d4": "nd", "d5": "nd", "d6": "nd"}
QUERY = "Where was Larry Alcala educated? Stanley North Dakota seat"
LLM_FREE = ["bm25", "dense", "hybrid", "gnn_ret", "naive_ge", "iier"]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("where")
    corpus = root / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({**d, "region": REGION[d["id"]], "year": 2020}) + "\n" for d in DOCS)
    )
    build_index(load_documents(corpus), root / "idx", HASHING, show_progress=False)
    build_graphs(root / "idx", GraphSettings(), show_progress=False)
    return root / "idx"


@pytest.mark.parametrize("method", LLM_FREE)
def test_every_retriever_keeps_only_matching_chunks(index_dir, method):
    with Index.open(index_dir) as idx:
        retriever = make_retriever(method, idx)
        plain = retriever.retrieve(QUERY, 6)
        for region in ("ph", "nd"):
            hits = retriever.retrieve(QUERY, 2, where={"region": region})
            assert hits, (method, region)
            assert {REGION[h.doc_id] for h in hits} == {region}
            # the method's own order among the allowed chunks (methods whose ranking does not
            # depend on k), when its full ranking holds them
            allowed = [h.id for h in plain if REGION[h.doc_id] == region]
            if len(allowed) >= len(hits) and method in ("bm25", "gnn_ret"):
                assert [h.id for h in hits] == allowed[: len(hits)]


def test_dense_filters_like_an_exact_scan_of_the_allowed_chunks(index_dir):
    with Index.open(index_dir) as idx:
        dense = make_retriever("dense", idx)
        hits = dense.retrieve("Manila University", 3, where={"region": "ph"})
        allowed = idx.matching({"region": "ph"})
        cosines = idx.similarities(idx.embed_query("Manila University"))
        exact = sorted(allowed, key=lambda c: (-round(float(cosines[idx.rows[c]]), 6), c))[:3]
        assert [h.id for h in hits] == exact


def test_fields_compare_as_text_and_unknown_fields_are_named(index_dir):
    with Index.open(index_dir) as idx:
        bm25 = make_retriever("bm25", idx, where={"year": "2020"})
        assert {h.id for h in bm25.retrieve("Stanley", 3)} == {"d5", "d6"}  # BM25 > 0 only
        assert bm25.retrieve("Stanley", 3, where={"doc_id": "d6"})[0].id == "d6"
        assert bm25.retrieve("Stanley", 3, where={"region": "nowhere"}) == []
        with pytest.raises(InputError, match=r"'colour'.*") as err:
            bm25.retrieve("Stanley", 3, where={"colour": "red"})
        assert "region" in str(err.value) and "source" in str(err.value)


def test_cli_retrieve_where(index_dir, capsys):
    argv = ["retrieve", "Stanley", "--index", str(index_dir), "--method", "hybrid", "--json"]
    assert main([*argv, "--where", "region=ph", "--where", "year=2020"]) == 0
    assert {h["doc_id"] for h in json.loads(capsys.readouterr().out)} <= {"d1", "d2", "d3"}
    assert main([*argv, "--where", "region"]) == 2
    assert "not a filter" in capsys.readouterr().err


def test_agent_context_filters_its_retrievers_and_evidence(index_dir):
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from hopgraph.agents.context import AgentContext

    with Index.open(index_dir) as idx:
        ctx = AgentContext(
            index=idx, chat=FakeListChatModel(responses=["x"]), where={"region": "nd"}
        )
        hits = ctx.retriever("gnn_ret").retrieve(QUERY, 3)
        assert {REGION[h.doc_id] for h in hits} == {"nd"}
        assert ctx.allows("d5") and not ctx.allows("d1")


@pytest.fixture(scope="module")
def docs_index(tmp_path_factory):
    from tests.docs_fixture import write_docs

    root = tmp_path_factory.mktemp("docs")
    docs = write_docs(root / "docs")
    settings = HASHING.model_copy(update={"chunk_tokens": 40})
    build_index(load_documents(docs), root / "idx", settings, show_progress=False)
    return root / "idx"


def retrieve_json(index, capsys, *options) -> list[dict]:
    argv = ["retrieve", "signal receiver", "--index", str(index), "--method", "bm25", "--json"]
    assert main([*argv, "-k", "10", *options]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_section_filter_matches_a_heading_at_any_level(docs_index, capsys):
    with Index.open(docs_index) as idx:
        under = {c.id for c in idx.chunks.values() if "Signals" in c.section.split(" > ")}
        assert {idx.chunks[c].section for c in under} == {
            "Signals",
            "Signals > Sending Signals",
            "Signals > Receiving Signals",
        }
    hits = retrieve_json(docs_index, capsys, "--where", "section~=signals")
    assert {h["id"] for h in hits} <= under and hits
    assert {h["id"] for h in retrieve_json(docs_index, capsys, "--where", "section~Signals")} == {
        h["id"] for h in hits
    }
    contains = retrieve_json(docs_index, capsys, "--where", "section*=signals")
    assert any(h["doc_id"] == "deploying/index.md" for h in contains)  # "Signals in production"
    prefix = retrieve_json(docs_index, capsys, "--where", "doc_id^=deploying/")
    assert {h["doc_id"] for h in prefix} == {"deploying/index.md"}
    not_api = retrieve_json(docs_index, capsys, "--where", "doc_id!=api.rst")
    assert {h["doc_id"] for h in not_api} == {"deploying/index.md"}
    one_of = retrieve_json(docs_index, capsys, "--where", "title in Deploying|Nothing")
    assert {h["doc_id"] for h in one_of} == {"deploying/index.md"}
    listed = retrieve_json(docs_index, capsys, "--where", "tags~=ops")
    assert {h["doc_id"] for h in listed} == {"deploying/index.md"}


@pytest.mark.parametrize(
    "bad",
    [
        "section",
        "=x",
        "section~=a",
        "doc_id in |",
        "tags!=a --where tags!=b",
        "section~",
        "section*= ",
        "source^=",
        "title=",
    ],
)
def test_cli_malformed_filters_show_the_syntax(docs_index, capsys, bad):
    argv = ["retrieve", "x", "--index", str(docs_index), "--method", "bm25"]
    options = [part for opt in bad.split(" --where ") for part in ("--where", opt)]
    if bad == "section~=a":  # well formed: it matches nothing and says so
        assert main([*argv, *options]) == 0
        assert "no passages matched" in capsys.readouterr().out
        return
    assert main([*argv, *options]) == 2
    err = capsys.readouterr().err
    assert ("key=value" in err and "$has" in err) or "a second '!=' test on 'tags'" in err
    if bad[-1] in "~= ":  # an empty value (issue 53: 'section~' was taken, matching nothing)
        assert "the value is empty" in err


@pytest.mark.parametrize(
    "where",
    [
        {"section": {"$regex": "x"}},
        {"section": {"$in": []}},
        {"section": {}},
        {"section": ["a"]},
        {"title": {"$eq": {"a": 1}}},
        {"section": {"$has": ""}},
        {"source": {"$prefix": "  "}},
        {"title": ""},
        {"doc_id": {"$in": ["a", ""]}},
    ],
)
def test_json_malformed_filters_name_the_problem(docs_index, where):
    with Index.open(docs_index) as idx:
        with pytest.raises(InputError, match="malformed filter") as err:
            make_retriever("bm25", idx).retrieve("signal", 3, where)
        assert "$prefix" in err.value.hint


def test_a_section_path_starts_with_its_page_title(tmp_path, capsys):
    """Issue 53: `section~=Signals` left out the .rst page called Signals."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "signals.rst").write_text(
        "Signals\n=======\n\nIntro on receivers.\n\nSending\n-------\n\nSend to receivers.\n"
    )
    (docs / "guide.md").write_text(
        "# Guide\n\nReceivers stay connected.\n\n## Signals\n\nMore on receivers.\n"
    )
    (docs / "same.md").write_text("---\ntitle: Setup\n---\n# Setup\n\nReceivers here too.\n")
    build_index(load_documents(docs), tmp_path / "idx", HASHING, show_progress=False)
    argv = ["retrieve", "receivers", "--index", str(tmp_path / "idx"), "--method", "bm25"]
    assert main([*argv, "--json", "-k", "10", "--where", "section~=signals"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert {h["metadata"]["section"] for h in hits} == {
        "Signals",  # the page's own text: its title is the first level
        "Signals > Sending",
        "Guide > Signals",  # a Markdown H1 (the title) then its heading
    }
    assert main([*argv, "--json", "--where", "doc_id=same.md"]) == 0
    [same] = json.loads(capsys.readouterr().out)
    assert same["metadata"]["section"] == "Setup"  # a title and an equal H1: not doubled


def test_json_operators_on_the_retriever_and_agent_context(docs_index):
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from hopgraph.agents.context import AgentContext

    with Index.open(docs_index) as idx:
        bm25 = make_retriever("bm25", idx)
        where = {"section": {"$has": "Receiving Signals"}, "doc_id": {"$in": ["api.rst"]}}
        [hit] = bm25.retrieve("signal receiver", 5, where)
        assert idx.chunks[hit.id].section == "Signals > Receiving Signals"
        ctx = AgentContext(
            index=idx, chat=FakeListChatModel(responses=["x"]), where={"tags": {"$has": "ops"}}
        )
        hits = ctx.retriever("hybrid").retrieve("signal receiver", 3)
        assert hits and {h.doc_id for h in hits} == {"deploying/index.md"}
