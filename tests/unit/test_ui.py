"""`hopgraph ui`'s API and page: searches, graphs, the index view, errors, tokens, escaping."""

import json

import pytest
from starlette.testclient import TestClient

from hopgraph.cli import main
from hopgraph.graph_store import LiveIndex
from hopgraph.ui_server import UIApp
from tests.conftest import DOCS, build_docs_index

QUESTION = "When did military instruction start where Larry Alcala was educated?"
XSS = '<img src=x onerror="alert(1)">'


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return build_docs_index(tmp_path_factory.mktemp("ui") / "idx", "hashing")


@pytest.fixture
def client(index_dir):
    with LiveIndex(index_dir) as live:
        yield TestClient(UIApp(live).app())


def test_search_returns_hits_with_section_score_and_provenance(client):
    reply = client.get("/api/search", params={"q": QUESTION, "method": "gnn_ret", "k": 4})
    assert reply.status_code == 200
    body = reply.json()
    assert body["method"] == "gnn_ret" and len(body["hits"]) == 4
    first = body["hits"][0]
    assert {"rank", "id", "doc_id", "title", "section", "text", "score", "why"} <= set(first)
    assert all(h["why"].startswith("gnn_ret: ") for h in body["hits"])


def test_methods_are_the_ones_the_index_runs_with_their_descriptions(client):
    body = client.get("/api/methods").json()
    names = [m["name"] for m in body["methods"]]
    assert {"bm25", "dense", "hybrid", "gnn_ret"} <= set(names)
    assert all(m["description"] for m in body["methods"])
    assert body["index"] == "idx"


def test_the_graph_counts_match_its_svg(client):
    body = client.get("/api/graph", params={"q": QUESTION, "method": "gnn_ret", "k": 4,
                                             "gold": "d1,d2"}).json()  # fmt: skip
    passages = [n for n in body["nodes"] if n["kind"] == "passage"]
    assert len(passages) == 4 and sum(n["gold"] for n in passages) >= 1
    assert body["svg"].count('class="passage') == len(passages)
    assert body["svg"].count('<line class="edge') == len(body["edges"])


def test_the_index_view_names_no_server_path(client, index_dir):
    reply = client.get("/api/index")
    body = reply.json()
    assert body["check"]["sound"] and body["documents_total"] == len(DOCS)
    assert body["counts"]["chunks"] == len(DOCS) and body["graphs"]
    assert str(index_dir.parent) not in reply.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "  ", "method": "gnn_ret"}, "the question is empty"),
        ({"q": "x", "method": "nope"}, "unknown method 'nope'"),
        ({"q": "x", "method": "bm25", "where": "doc_id in"}, "not a filter"),
        ({"q": "x", "method": "bm25", "k": "0"}, "k must be"),
        ({"q": "x", "method": "bm25", "expand": "sideways"}, "not an expansion"),
    ],
)
def test_bad_input_gets_the_clis_message_and_the_server_keeps_serving(client, params, message):
    reply = client.get("/api/search", params=params)
    assert reply.status_code == 400 and message in reply.json()["error"]
    assert reply.json()["hint"]
    assert client.get("/api/search", params={"q": QUESTION, "method": "bm25"}).status_code == 200


def test_user_strings_are_escaped_in_the_page_and_the_graph(tmp_path):
    docs = [{"id": f"x{XSS}", "title": XSS, "text": f"{XSS} Larry Alcala studied here."},
            {"id": "d2", "title": "Other", "text": "Larry Alcala was a cartoonist."}]  # fmt: skip
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    index = tmp_path / XSS.replace("/", "_")
    assert main(["index", str(corpus), "--index", str(index), "--model", "hashing", "-q"]) == 0
    assert main(["graph", "build", "--index", str(index), "-q"]) == 0
    with LiveIndex(index) as live:
        client = TestClient(UIApp(live).app())
        page = client.get("/").text
        assert XSS not in page and "&lt;img src=x" in page  # the index's name, escaped
        svg = client.get("/api/graph", params={"q": XSS + " Larry", "method": "bm25"}).json()
        assert XSS not in svg["svg"] and "&lt;img" in svg["svg"]
        hits = client.get("/api/search", params={"q": XSS, "method": "bm25"}).json()["hits"]
        assert any(h["title"] == XSS for h in hits)  # JSON as it is: the page sets textContent


def test_a_token_is_needed_by_every_request_and_the_login_url_works_once(index_dir):
    with LiveIndex(index_dir) as live:
        ui = UIApp(live, token="s3cret-token")
        client = TestClient(ui.app())
        for path in ("/", "/api/methods", "/api/index", "/api/search?q=x&method=bm25"):
            assert client.get(path).status_code == 401
        headers = {"Authorization": "bearer s3cret-token"}
        assert client.get("/api/methods", headers=headers).status_code == 200
        assert client.get("/login", params={"code": "wrong"}).status_code == 401
        code = ui.login_code
        assert (
            client.get("/login", params={"code": code}, follow_redirects=False).status_code == 303
        )
        assert client.get("/api/methods").status_code == 200  # the cookie now
        fresh = TestClient(ui.app())
        assert fresh.get("/login", params={"code": code}).status_code == 401  # used up


def test_ui_refuses_a_public_address_without_a_token_and_a_bad_port(index_dir, capsys, monkeypatch):
    monkeypatch.delenv("HOPGRAPH_TOKEN", raising=False)
    assert main(["ui", "--index", str(index_dir), "--http", "0.0.0.0:8766"]) == 2
    assert "no authentication" in capsys.readouterr().err
    assert main(["ui", "--index", str(index_dir), "--http", "127.0.0.1:99999"]) == 2
    assert "port from 1 to 65535" in capsys.readouterr().err
    assert main(["ui", "--index", str(index_dir.parent / "nonexist")]) == 2
    assert "no index" in capsys.readouterr().err


def events(text):
    """Parse a server-sent event stream into (event, data) pairs."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_ask_without_an_llm_streams_the_evidence_and_how_to_set_one(client, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_LLM", "none")
    reply = client.get("/api/ask", params={"q": QUESTION, "method": "gear"})
    assert reply.headers["content-type"].startswith("text/event-stream")
    [(kind, data)] = events(reply.text)
    assert kind == "evidence" and data["method"] == "gnn_ret" and len(data["evidence"]) == 5
    assert "HOPGRAPH_LLM" in data["hint"]


@pytest.mark.parametrize(
    ("params", "message"),
    [({"q": " ", "method": "gear"}, "the question is empty"),
     ({"q": "x", "method": "bm25x"}, "unknown method 'bm25x'"),
     ({"q": "x", "method": "gear", "k": "0"}, "k must be")],
)  # fmt: skip
def test_ask_with_bad_input_streams_one_failure(client, params, message):
    [(kind, data)] = events(client.get("/api/ask", params=params).text)
    assert kind == "failed" and message in data["error"] and data["hint"]


def test_methods_list_the_agents_ask_offers(client):
    agents = set(client.get("/api/methods").json()["agents"])
    assert {"gear", "rgnn_ret", "tog2", "gnn_ret", "chat"} <= agents  # gnn_ret + the reader


def test_why_says_what_brought_a_hit_in_words():
    from hopgraph.tools.hits import Hit, Provenance
    from hopgraph.ui_queries import why

    def hit(*provenance):
        return Hit("c", 0.5, "T", "text", "d", provenance)

    message = Provenance("gnn_ret", "message from a top-K neighbour", 2, 0.5, ("d1#0", "link"))
    assert why(hit(message)) == (
        "gnn_ret: message from a top-K neighbour (pulled in by d1#0 over link)"
    )
    chain = Provenance("iier", "hop 2", 3, 0.4, ("a#0", "b#0", "c#0"))
    assert why(hit(chain)) == "iier: hop 2 (chain a#0 → b#0 → c#0)"
    assert why(hit(Provenance("bm25", "keyword match", 1, 3.0))) == "bm25: keyword match"
    assert why(hit()) == ""
